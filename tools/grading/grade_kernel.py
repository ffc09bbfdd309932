"""The student's side of tools/grading/cli.py: a sandboxed IPython shell that runs cells and answer calls.

This file runs in its own process (``python -S grade_kernel.py CONFIG``), started by the grader
inside a sandbox. It talks to the grader over two pipes with length-prefixed JSON messages:

- ``{"op": "ping"}``: ready? -> ``{"ok": true}``;
- ``{"op": "run", "code": ...}``: run a notebook cell with IPython -> ``{"error": ...}``;
- ``{"op": "get", "name": ...}``: what the student's name holds (a function, a value, nothing);
- ``{"op": "call", "name": ..., "args": [...], "kwargs": {...}}``: call the student's function
  (with ``"trace": true``, the reply also holds the call's peak allocated bytes, ``"peak"``:
  see :class:`Peak`).

With ``"watch": true`` (the grader's calls of the student's functions, and the student's own
cells), the reply also holds ``"reached"``, the course_lib functions the student's code entered
(called from code outside course_lib), and ``"tamper"``, audit events that switch off or search
this record (``sys.setprofile``, ``gc.get_referrers``...): see :class:`Watch`, which the grader
maps to each exercise's reference (``tools/grading/reach.py``).

Every value crosses as plain data (:func:`encode` / :func:`decode`: JSON, arrays as ``.npy``
without pickle). Nothing here decides a grade: the grader compares the data it gets back with its
own references, so whatever the student's code does to this process only changes its own answers.
The grader imports this module too, for the codec.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import struct
import sys

MAX_MESSAGE = 64 * 2**20  # bytes; a larger answer is refused ("too much data")
# The only record kinds decode() accepts (anything else is "bad message"), and the only bit
# generators a "generator" record may name.
KINDS = ("int", "float", "tuple", "dict", "ndarray", "objarray", "npscalar", "tensor",
         "generator", "built", "opaque")  # fmt: skip
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


# --- the codec: plain data only, in both directions ------------------------------------------


class Opaque:
    """What the grader gets for an object that is not plain data: its type name and repr only."""

    def __init__(self, text: str):
        self._text = text

    def __repr__(self) -> str:
        return self._text


def _opaque(type_name: str, text: str):
    name = type_name if type_name.isidentifier() else "object"
    return type(name, (Opaque,), {})(text)


def _npy(arr) -> str:
    buf = io.BytesIO()
    import numpy as np

    np.save(buf, arr, allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _from_npy(text: str):
    import numpy as np

    return np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


def encode(x, depth: int = 0):
    """A JSON-able tree for ``x``; objects that are not plain data become an ``opaque`` record."""
    if depth > 64:
        return {"t": "opaque", "type": type(x).__name__, "repr": "<nested too deeply>"}
    np = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    if x is None or type(x) in (bool, str):
        return x
    if type(x) is int:
        return x if abs(x) < 2**53 else {"t": "int", "v": str(x)}
    if type(x) is float:
        return x if math.isfinite(x) else {"t": "float", "v": repr(x)}
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
        items = [encode(v, depth + 1) for v in x]
        return items if type(x) is list else {"t": "tuple", "v": items}
    if isinstance(x, dict):  # dicts and their subclasses (Counter, defaultdict) as plain dicts
        return {
            "t": "dict",
            "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()],
        }
    if np is not None and isinstance(x, np.ndarray):
        if x.dtype.kind in "biufcUS":
            return {"t": "ndarray", "npy": _npy(np.ascontiguousarray(x))}
        return {
            "t": "objarray",
            "shape": list(x.shape),
            "v": [encode(v, depth + 1) for v in x.ravel().tolist()],
        }
    if np is not None and isinstance(x, np.generic) and x.dtype.kind in "biufc":
        return {"t": "npscalar", "npy": _npy(np.asarray(x))}
    if np is not None and isinstance(x, np.random.Generator):
        return {"t": "generator", "state": encode(x.bit_generator.state, depth + 1)}
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach().cpu()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return {"t": "tensor", "npy": _npy(t.numpy())}
    if type(x).__name__ == "Built" and hasattr(x, "factory") and hasattr(x, "kwargs"):
        return {
            "t": "built",
            "factory": str(x.factory),
            "kwargs": encode(dict(x.kwargs), depth + 1),
        }
    for base in (bool, int, float, str):  # subclasses of plain types: their plain value only
        if isinstance(x, base):
            return encode(base(x), depth + 1)
    try:
        text = repr(x)[:300]
    except BaseException:  # a student's __repr__ may raise anything
        text = f"<{type(x).__name__} object>"
    return {"t": "opaque", "type": str(type(x).__name__)[:80], "repr": text}


class NotPlainData(TypeError):
    """A value the codec cannot send (the grader reports it as a problem of the check)."""


def encode_argument(x):
    """Like :func:`encode`, but refuse objects: a check must send plain data or a Built recipe."""
    tree = encode(x)

    def walk(t):
        if isinstance(t, list):
            for v in t:
                walk(v)
        elif isinstance(t, dict):
            if t.get("t") == "opaque":
                raise NotPlainData(t["type"])
            for v in t.get("v", []) if isinstance(t.get("v"), list) else []:
                walk(v)
            if isinstance(t.get("kwargs"), dict):
                walk(t["kwargs"])

    walk(tree)
    return tree


def decode(t, build=None):
    """The value of an :func:`encode` tree: builtins, numpy, torch only (never pickle)."""
    if t is None or type(t) in (bool, int, float, str):
        return t
    if type(t) is list:
        return [decode(v, build) for v in t]
    if type(t) is not dict:
        raise ValueError(f"bad message: {type(t).__name__}")
    kind = t.get("t")
    if kind not in KINDS:
        raise ValueError(f"bad message: unknown kind {str(kind)[:40]!r}")
    if kind == "int":
        return int(t["v"])
    if kind == "float":
        return float(t["v"])
    if kind == "tuple":
        return tuple(decode(v, build) for v in t["v"])
    if kind == "dict":
        return {decode(k, build): decode(v, build) for k, v in t["v"]}
    if kind == "ndarray":
        return _from_npy(t["npy"])
    if kind == "objarray":
        import numpy as np

        arr = np.empty(len(t["v"]), dtype=object)
        arr[:] = [decode(v, build) for v in t["v"]]
        return arr.reshape([int(s) for s in t["shape"]])
    if kind == "npscalar":
        return _from_npy(t["npy"])[()]
    if kind == "tensor":
        import torch

        return torch.from_numpy(_from_npy(t["npy"]).copy())
    if kind == "generator":
        import numpy as np

        state = decode(t["state"], build)
        name = state.get("bit_generator") if isinstance(state, dict) else None
        if name not in BIT_GENERATORS:  # never getattr on a name the notebook chose
            raise ValueError(f"bad message: unknown bit generator {str(name)[:40]!r}")
        bitgen = getattr(np.random, name)()
        bitgen.state = state
        return np.random.Generator(bitgen)
    if kind == "built":
        if build is None:
            raise ValueError("a Built recipe is only built on the student's side")
        return build(t["factory"], decode(t["kwargs"], build))
    if kind == "opaque":
        return _opaque(str(t.get("type", "object")), str(t.get("repr", ""))[:300])
    raise AssertionError(kind)  # every kind of KINDS is decoded above


# --- framing ------------------------------------------------------------------------------------


def send(fd: int, message) -> None:
    data = json.dumps(message, allow_nan=False).encode()
    if len(data) > MAX_MESSAGE:
        data = json.dumps({"toolarge": len(data)}).encode()
    data = struct.pack("!I", len(data)) + data
    while data:
        data = data[os.write(fd, data) :]


def _read_exactly(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 2**20))
        if not chunk:
            raise EOFError("the channel closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(fd: int):
    (n,) = struct.unpack("!I", _read_exactly(fd, 4))
    if n > MAX_MESSAGE:
        raise ValueError(f"message of {n} bytes is too large")
    return json.loads(_read_exactly(fd, n))


# --- the sandboxed process ----------------------------------------------------------------------


def _build(factory: str, kwargs: dict):
    import importlib

    module, name = factory.split(":")
    return getattr(importlib.import_module(module), name)(**kwargs)


def _error(exc: BaseException) -> dict:
    try:
        message = str(exc)[:2000]
    except BaseException:
        message = "<unprintable>"
    return {"type": str(type(exc).__name__)[:80], "message": message}


def _shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # no sqlite file, no saving thread: a quick exit
    return InteractiveShell.instance(config=config)


class Watch:
    """Which course_lib functions the student's code calls, recorded in the student's process.

    An audit hook (``sys.addaudithook``: it cannot be removed) is installed before any student
    code runs, and a profile hook is set for each watched op only (the grader's call of a
    student function, a student's cell). The profile hook records every course_lib function
    entered from code outside course_lib: the reference however the student reached it
    (``import``, ``__import__("course" + "_lib.rope")``, ``importlib``, ``sys.modules``, an
    attribute walk, a check's ``__globals__``), but not what course_lib calls inside itself (a
    helper that uses the reference is the helper's business). The audit hook records what would
    switch the record off or search for it during a watched op: ``sys.setprofile`` and
    ``sys.settrace`` (except a new thread's own start), the ``gc`` object walks.

    The process is the student's: code that finds this object (e.g. through
    ``sys.getprofile()``) can change its record. The grader therefore also reads the answer's
    source itself (``tools/grading/reach.py``), and says what each one catches.
    """

    SUSPECT = ("sys.setprofile", "sys.settrace", "gc.get_referrers", "gc.get_referents",
               "gc.get_objects", "sys._current_frames")  # fmt: skip

    def __init__(self, lib: str):
        self.lib = os.path.join(lib, "course_lib") + os.sep
        self.active, self.reached, self.tamper = False, set(), set()
        import threading

        self._threading = threading

    def audit(self, event: str, args) -> None:
        if not self.active:
            return
        if event == "open" and args and "clear_refs" in str(args[0]):
            self.tamper.add("open clear_refs")
            return
        if event not in self.SUSPECT:
            return
        if event == "sys.setprofile":  # a new thread installs the profile hook it was given
            caller = sys._getframe(1).f_code.co_filename
            if caller == getattr(self._threading, "__file__", None):
                return
        self.tamper.add(event)

    def profile(self, frame, event, arg) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(self.lib):
            back = frame.f_back
            if back is None or not back.f_code.co_filename.startswith(self.lib):
                name = frame.f_globals.get("__name__", "?")
                self.reached.add(f"{name}.{frame.f_code.co_qualname}")

    def start(self) -> None:
        self.reached, self.tamper = set(), set()
        sys.setprofile(self.profile)
        self._threading.setprofile(self.profile)
        self.active = True

    def stop(self) -> dict:
        self.active = False
        if sys.getprofile() != self.profile:
            self.tamper.add("the profile hook was replaced")
        sys.setprofile(None)
        self._threading.setprofile(None)
        return {"reached": sorted(self.reached)[:500], "tamper": sorted(self.tamper)}


class Peak:
    """The peak memory of one call of the student's function, measured two ways from a fresh
    start: tracemalloc (the Python and numpy allocations, to the byte) and the process's
    resident high-water mark (``VmHWM``, reset through ``/proc/self/clear_refs`` just before the
    call: torch's memory too, and anything else malloc hands out). The reported peak is the
    tracemalloc peak, or the resident one when that is larger than :attr:`RSS_FLOOR` (below it,
    page faults of libraries and allocator caches make it noise).

    During the call tracemalloc's ``stop``, ``start``, ``reset_peak`` and ``clear_traces`` are
    replaced by functions that only record the attempt (reported as tampering), so the answer
    cannot lower its own peak through them; opening ``clear_refs`` is seen by the audit hook.
    The student's process could still undo this (its own memory is its own): the resident
    measurement is the backstop for a full n x n matrix, which no reset hides after the fact.
    """

    RSS_FLOOR = 16 * 2**20
    GUARDED = ("stop", "start", "reset_peak", "clear_traces")

    def __init__(self):
        import _tracemalloc
        import tracemalloc

        self.modules = (tracemalloc, _tracemalloc)
        self.traced = _tracemalloc.get_traced_memory  # held before any student code runs
        self.tampered: set[str] = set()
        self.saved: list = []

    @staticmethod
    def _status(key: str) -> int:
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith(key + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def start(self) -> None:
        tracemalloc = self.modules[0]
        if tracemalloc.is_tracing():  # the student's own tracing: ours starts fresh
            tracemalloc.stop()
        tracemalloc.start()
        for module in self.modules:
            for name in self.GUARDED:
                if hasattr(module, name):
                    self.saved.append((module, name, getattr(module, name)))
                    setattr(module, name, self._refuse(name))
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")  # VmHWM := VmRSS
        except OSError:
            pass
        self.rss = self._status("VmRSS")

    def _refuse(self, name: str):
        def refused(*args, **kwargs):
            self.tampered.add(f"tracemalloc.{name}")

        return refused

    def stop(self) -> int:
        traced = self.traced()[1]
        resident = max(0, self._status("VmHWM") - self.rss)
        for module, name, original in reversed(self.saved):
            setattr(module, name, original)
        self.modules[0].stop()
        return max(traced, resident if resident > self.RSS_FLOOR else 0)


def serve(fd_in: int, fd_out: int, shell=None, watch: Watch | None = None) -> None:
    shell = shell or _shell()
    while True:
        try:
            request = receive(fd_in)
        except EOFError:  # the grader is done: leave at once (no interpreter teardown)
            os._exit(0)
        op = request.get("op")
        try:
            if op == "ping":  # ready (the grader times the start-up with it)
                send(fd_out, {"ok": True})
            elif op == "run":
                watching = watch is not None and bool(request.get("watch"))
                if watching:
                    watch.start()
                try:
                    result = shell.run_cell(request["code"], store_history=True)
                finally:
                    seen = watch.stop() if watching else {}
                exc = result.error_before_exec or result.error_in_exec
                send(fd_out, {"error": None if exc is None else _error(exc), **seen})
            elif op == "get":
                ns = shell.user_ns
                if request["name"] not in ns:
                    send(fd_out, {"kind": "missing"})
                elif callable(ns[request["name"]]):
                    send(fd_out, {"kind": "callable", "type": type(ns[request["name"]]).__name__})
                else:
                    send(fd_out, {"kind": "value", "value": encode(ns[request["name"]])})
            elif op == "call":
                args = [decode(a, _build) for a in request["args"]]
                kwargs = {k: decode(v, _build) for k, v in request["kwargs"].items()}
                trace = bool(request.get("trace"))  # the peak memory of the call (Peak)
                watching = watch is not None and bool(request.get("watch"))
                fn = shell.user_ns[request["name"]]
                peak = Peak() if trace else None
                if peak is not None:
                    peak.start()
                if watching:
                    watch.start()
                raised = None
                try:
                    got = fn(*args, **kwargs)
                except BaseException as exc:  # reported to the grader as data
                    raised = exc
                finally:
                    seen = watch.stop() if watching else {}
                    measured = peak.stop() if peak is not None else 0
                reply = {"states": _states(args, kwargs), **seen}
                if raised is not None:
                    reply["raised"] = _error(raised)
                else:
                    reply["value"] = encode(got)
                    if peak is not None:
                        reply["peak"] = measured
                if peak is not None and peak.tampered:
                    reply["tamper"] = sorted({*reply.get("tamper", []), *peak.tampered})
                send(fd_out, reply)
            else:
                send(fd_out, {"error": {"type": "GraderError", "message": f"unknown op {op!r}"}})
        except BaseException as exc:  # keep serving; the grader sees the error
            send(fd_out, {"error": _error(exc), "raised": _error(exc)})


def _states(args, kwargs) -> list:
    """The random generators' states after the call, so the grader's copies can follow them."""
    np = sys.modules.get("numpy")
    if np is None:
        return []
    return [
        encode(a.bit_generator.state)
        for a in [*args, *kwargs.values()]
        if isinstance(a, np.random.Generator)
    ]


def main(config_path: str) -> None:
    """Enter the sandbox and serve. Descriptors 0-2 are /dev/null (the grader passes no log):
    a failure before serving is reported over the protocol pipe as ``{"fatal": ...}``."""
    with open(config_path) as fh:
        config = json.load(fh)
    try:
        _start(config)
        watch = Watch(config["path"][0])
        sys.addaudithook(watch.audit)  # before any student code; it cannot be removed
        shell = _shell()
    except BaseException:
        import contextlib
        import traceback

        with contextlib.suppress(BaseException):
            receive(config["fd_in"])  # the grader's first request, answered with the failure
            send(config["fd_out"], {"fatal": traceback.format_exc()[-2000:]})
        os._exit(70)
    serve(config["fd_in"], config["fd_out"], shell, watch)


def _start(config: dict) -> None:
    if config.get("sandbox"):
        from grade_sandbox import enter  # only inside the sandbox

        enter(config)
    sys.path[:0] = config["path"]
    os.chdir(config["cwd"])
    import resource

    for name, value in config.get("rlimits", {}).items():
        limit = getattr(resource, name)
        resource.setrlimit(limit, (value, value))


if __name__ == "__main__":
    main(sys.argv[1])
