"""The student's side of tools/grading/cli.py: a sandboxed IPython shell that runs cells and answer calls.

This file runs in its own process (``python -S grade_kernel.py CONFIG``), started by the grader
inside a sandbox. It talks to the grader over two pipes with length-prefixed JSON messages:

- ``{"op": "ping"}``: ready? -> ``{"ok": true}``;
- ``{"op": "run", "code": ...}``: run a notebook cell with IPython -> ``{"error": ...}``;
- ``{"op": "warm", "fixtures": ["module:function", ...]}``: call the course's cached fixtures
  (``FIXTURES`` of a lecture's checks) before the student's cells, unwatched -> ``{"ok": true}``;
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

import _tracemalloc
import base64
import io
import json
import math
import os
import struct
import sys
from types import CodeType

MAX_MESSAGE = 64 * 2**20  # bytes; a larger answer is refused ("too much data")
# JSON values in one message (an array counts as one): a reply of millions of tiny lists would
# cost the grader ~100 bytes each to parse and decode.
MAX_ELEMENTS = 2**21
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
    """The array of a ``.npy`` text, refused unless its header's shape and dtype account for
    exactly the bytes sent (numpy would first allocate whatever shape a header claims)."""
    import numpy as np

    data = base64.b64decode(text)
    buf = io.BytesIO(data)
    fmt = np.lib.format
    version = fmt.read_magic(buf)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"bad message: .npy version {version}")
    read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, _, dtype = read_header(buf)
    if dtype.hasobject or math.prod(shape) * dtype.itemsize != len(data) - buf.tell():
        raise ValueError("bad message: an array's header does not match its data")
    buf.seek(0)
    return np.load(buf, allow_pickle=False)


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
            return {"t": "ndarray", "npy": _npy(x)}  # any layout, any shape (0-d stays 0-d)
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


def decode(t, build=None, budget: int = 0):
    """The value of an :func:`encode` tree: builtins, numpy, torch only (never pickle).

    At most ``budget`` (default :data:`MAX_ELEMENTS`) records and values are decoded (an array
    is one, its bytes are bounded by the message): a reply of millions of empty lists is refused,
    not built ("bad message: more than ... elements")."""
    return _decode(t, build, [budget or MAX_ELEMENTS])


def _decode(t, build, left: list[int]):
    left[0] -= 1
    if left[0] < 0:
        raise ValueError(f"bad message: more than {MAX_ELEMENTS:,} elements")
    if t is None or type(t) in (bool, int, float, str):
        return t
    if type(t) is list:
        return [_decode(v, build, left) for v in t]
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
        return tuple(_decode(v, build, left) for v in t["v"])
    if kind == "dict":
        return {_decode(k, build, left): _decode(v, build, left) for k, v in t["v"]}
    if kind == "ndarray":
        return _from_npy(t["npy"])
    if kind == "objarray":
        import numpy as np

        arr = np.empty(len(t["v"]), dtype=object)
        arr[:] = [_decode(v, build, left) for v in t["v"]]
        return arr.reshape([int(s) for s in t["shape"]])
    if kind == "npscalar":
        return _from_npy(t["npy"])[()]
    if kind == "tensor":
        import torch

        return torch.from_numpy(_from_npy(t["npy"]).copy())
    if kind == "generator":
        import numpy as np

        state = _decode(t["state"], build, left)
        name = state.get("bit_generator") if isinstance(state, dict) else None
        if name not in BIT_GENERATORS:  # never getattr on a name the notebook chose
            raise ValueError(f"bad message: unknown bit generator {str(name)[:40]!r}")
        bitgen = getattr(np.random, name)()
        bitgen.state = state
        return np.random.Generator(bitgen)
    if kind == "built":
        if build is None:
            raise ValueError("a Built recipe is only built on the student's side")
        return build(t["factory"], _decode(t["kwargs"], build, left))
    if kind == "opaque":
        return _opaque(str(t.get("type", "object")), str(t.get("repr", ""))[:300])
    raise AssertionError(kind)  # every kind of KINDS is decoded above


# --- framing ------------------------------------------------------------------------------------


def frame(message) -> bytes:
    """``message`` as sent: a 4-byte length, then its JSON (``toolarge`` past MAX_MESSAGE)."""
    data = json.dumps(message, allow_nan=False).encode()
    if len(data) > MAX_MESSAGE:
        data = json.dumps({"toolarge": len(data)}).encode()
    return struct.pack("!I", len(data)) + data


def send(fd: int, message) -> None:
    data = frame(message)
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


def elements(data: bytes) -> int:
    """An upper bound on the JSON values in ``data`` (``.npy`` texts are base64: no ``[{,``)."""
    return data.count(b"[") + data.count(b"{") + data.count(b",") + 1


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


def _constant(c) -> str:
    """A code constant as text, the same in every process (sets sorted: string hashes vary)."""
    if isinstance(c, CodeType):
        return fingerprint(c)
    if isinstance(c, (tuple, frozenset)):
        items = [_constant(x) for x in c]
        if isinstance(c, frozenset):
            items.sort()
        return f"{type(c).__name__}({', '.join(items)})"
    return repr(c)


def fingerprint(code: CodeType) -> str:
    """Which code this is, whatever file it claims or was loaded from: a hash of its name, first
    line, bytecode, constants (nested code by fingerprint), names and variables. A copy of a
    course_lib file, a symlinked package and a code object re-homed with ``replace(co_filename=...)``
    have the fingerprint of the original; ``co_filename`` is not part of it."""
    text = repr((code.co_code, [_constant(c) for c in code.co_consts], code.co_names,
                 code.co_varnames, code.co_freevars, code.co_cellvars))  # fmt: skip
    import hashlib  # here: 14 ms to import, and the kernel hashes only course_lib's names

    digest = hashlib.blake2b(text.encode(), digest_size=10).hexdigest()
    return f"{_where(code)}:{digest}"


def _where(code: CodeType) -> str:
    """The cheap part of a fingerprint (name and first line): most code is told apart by it."""
    return f"{code.co_qualname}:{code.co_firstlineno}"


def library_fingerprints(files: dict[str, bytes]) -> dict[str, str]:
    """``{fingerprint: "module.qualname"}`` of every function and class body in these course_lib
    files (``{"course_lib/rope.py": source}``), compiled here, never imported."""
    table: dict[str, str] = {}
    for path, data in files.items():
        if not path.endswith(".py"):
            continue
        module = path[:-3].replace("/", ".").removesuffix(".__init__")
        try:
            top = compile(data, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        table[fingerprint(top)] = f"{module}.<module>"  # what runs class bodies on import
        todo = [c for c in top.co_consts if isinstance(c, CodeType)]
        while todo:
            code = todo.pop()
            table[fingerprint(code)] = f"{module}.{code.co_qualname}"
            todo += [c for c in code.co_consts if isinstance(c, CodeType)]
    return table


class Watch:
    """Which course_lib functions the student's code calls, recorded in the student's process.

    An audit hook (``sys.addaudithook``: it cannot be removed) is installed before any student
    code runs, and a profile hook is set for each watched op only (the grader's call of a
    student function, a student's cell). Code is course_lib's when its :func:`fingerprint` is
    one of course_lib's, computed by the grader from its own files before the kernel started
    (``fingerprints``): whatever file name it claims, wherever it was loaded from (a copy in the
    working folder, a symlinked package, a re-homed code object). The profile hook records every
    course_lib function entered from code outside course_lib, or from course_lib code that does
    not name it (``best_time(rope, ...)`` calls what it was given): the reference however the
    student reached it, but not what course_lib calls by name inside itself (a helper that uses
    the reference is the helper's business). Entering TorchScript (``torch.jit``) is recorded as
    tampering: the compiled code runs without Python frames (so is ``torch.compile``).

    The audit hook records, during a watched op, what switches the record off or searches for it
    (``sys.setprofile``/``settrace`` but a new thread's own start, the ``gc`` object walks,
    ``sys._current_frames``) and what runs code out of its sight (``os.fork``, ``subprocess``,
    ``os.exec*``, ``os.posix_spawn``, ``os.system``); during the grader's calls also frame
    inspection (``sys._getframe``: ``inspect.stack()``), a thread or process started (the PID
    namespace's last pid moved) and a thread started without ``threading`` running at the call.

    The process is the student's: code that finds this object (e.g. through
    ``sys.getprofile()``) can change its record. The grader therefore also reads the answer's
    source itself (``tools/grading/reach.py``), and says what each one catches.
    """

    SUSPECT = ("sys.setprofile", "sys.settrace", "gc.get_referrers", "gc.get_referents",
               "gc.get_objects", "sys._current_frames", "os.fork", "os.forkpty", "os.exec",
               "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen", "pty.spawn",
               "_thread.start_new_thread")  # fmt: skip
    IN_CALLS = ("sys._getframe",)  # torch and matplotlib imports use it in cells
    COMPILERS = {("torch/jit/_script.py", "script"), ("torch/jit/_trace.py", "trace"),
                 ("torch/jit/_trace.py", "trace_module"), ("torch/jit/_serialization.py", "load"),
                 ("torch/__init__.py", "compile")}  # fmt: skip
    LAST_PID = "/proc/sys/kernel/ns_last_pid"
    _audited = frozenset((*SUSPECT, *IN_CALLS, "open"))  # every event audit() looks at

    def __init__(
        self, lib: str, fingerprints: dict[str, str] | None = None, own_pids: bool = False
    ):
        self.table = fingerprints or {}
        self.wheres = {fp.rsplit(":", 1)[0] for fp in self.table}  # hash only these
        self.lib = os.path.join(lib, "course_lib") + os.sep  # without a table: by file name
        self.known: dict[int, tuple] = {}  # id(code) -> (code, course_lib name or None)
        self.active, self.calling, self.reached, self.tamper = False, False, set(), set()
        self.own_pids = own_pids  # a PID namespace of its own: its last pid is ours to watch
        self._last_pid: int | None = None
        self._busy = False
        import _thread
        import threading

        self._thread, self._threading = _thread, threading

    def audit(self, event: str, args) -> None:
        # First the event's name: the profile hook's own frame and id() reads are audit events
        # too (millions a call of Python-heavy course_lib code, e.g. training a BPE tokenizer).
        if event not in self._audited or not self.active or self._busy:
            return
        self._busy = True  # sys._getframe below is audited too
        try:
            if event == "open" and args and "clear_refs" in str(args[0]):
                self.tamper.add("open clear_refs")
            elif event in self.SUSPECT or (self.calling and event in self.IN_CALLS):
                if event == "sys.setprofile":  # a new thread installs the profile it was given
                    caller = sys._getframe(1).f_code.co_filename
                    if caller == getattr(self._threading, "__file__", None):
                        return
                if event == "sys._getframe" and self._importing():
                    return  # a module's own import-time code (torch's), not the answer's
                self.tamper.add("frame inspection (sys._getframe)"
                                if event == "sys._getframe" else event)  # fmt: skip
        finally:
            self._busy = False

    @staticmethod
    def _importing() -> bool:
        frame, depth = sys._getframe(2), 0
        while frame is not None and depth < 500:
            if frame.f_code.co_filename.startswith("<frozen importlib"):
                return True
            frame, depth = frame.f_back, depth + 1
        return False

    def _name(self, code: CodeType) -> str | None:
        """course_lib's name for this code, or None (cached by identity; the code kept alive)."""
        hit = self.known.get(id(code))
        if hit is None or hit[0] is not code:
            if self.table:
                name = self.table.get(fingerprint(code)) if _where(code) in self.wheres else None
            else:
                name = code.co_qualname if code.co_filename.startswith(self.lib) else None
            where = code.co_filename.rsplit("site-packages/", 1)[-1]
            if name is None and (where, code.co_name) in self.COMPILERS:
                name = "TorchScript"
            hit = self.known[id(code)] = (code, name)
        return hit[1]

    def profile(self, frame, event, arg) -> None:
        if event != "call":
            return
        code = frame.f_code
        name = self._name(code)
        if name is None:
            return
        if name == "TorchScript":
            self.tamper.add("compiles TorchScript (torch.jit, torch.compile)")
            return
        if name.endswith(".<module>"):  # an import: what it defines is not called yet
            return
        back = frame.f_back
        if back is None or self._name(back.f_code) is None:
            self.reached.add(name)
        elif code.co_name not in back.f_code.co_names and (
            code.co_qualname.split(".")[0] not in back.f_code.co_names
        ):
            self.reached.add(name)  # course_lib calling what it was handed (best_time(f))

    def _pids(self) -> tuple[bytes, set[int]]:
        """The namespace's last pid, and threads not started by ``threading``."""
        last = b""
        if self.own_pids:
            try:
                if self._last_pid is None:
                    self._last_pid = os.open(self.LAST_PID, os.O_RDONLY | os.O_CLOEXEC)
                last = os.pread(self._last_pid, 32, 0)
            except OSError:  # closed by the notebook: opened again next time
                self._last_pid = None
        if self._thread._count() == 0:  # no thread but the main one
            return last, set()
        known = {t.ident for t in self._threading.enumerate()}
        return last, set(sys._current_frames()) - known

    def start(self, calling: bool = False) -> None:
        self.reached, self.tamper, self.calling = set(), set(), calling
        if calling:
            self.pids, raw = self._pids()
            if raw:
                self.tamper.add("a thread started outside threading runs during the call")
        sys.setprofile(self.profile)
        self._threading.setprofile(self.profile)
        self.active = True

    def stop(self) -> dict:
        self.active = False
        if sys.getprofile() != self.profile:
            self.tamper.add("the profile hook was replaced")
        sys.setprofile(None)
        self._threading.setprofile(None)
        if self.calling:
            pids, raw = self._pids()
            if pids != self.pids:
                self.tamper.add("a process or thread was started during the call")
            if raw:
                self.tamper.add("a thread started outside threading runs during the call")
        self.calling = False
        return {"reached": sorted(self.reached)[:500], "tamper": sorted(self.tamper)}


# tracemalloc's functions as they are before any student code runs
_TRACEMALLOC = {name: getattr(_tracemalloc, name) for name in (
    "start", "stop", "is_tracing", "get_traced_memory", "_get_object_traceback")}  # fmt: skip


class Peak:
    """The peak memory of one call of the student's function. The call runs in a fresh child
    (:func:`_in_child`, a fork of the kernel) on inputs decoded there, and is measured three ways:

    * tracemalloc, started fresh in the child (the Python and numpy allocations, to the byte),
      through functions held before any student code ran;
    * the child's resident high-water mark (``VmHWM``, reset through ``/proc/self/clear_refs``
      just before the call: torch's memory too, and anything else malloc hands out);
    * the child's private memory (``Private_*`` of ``smaps_rollup``), sampled every 2 ms by the
      kernel that forked it, out of the call's reach. Everything the child shares with the
      kernel was written before the call; every page the call writes becomes private, so a
      buffer prepared in an earlier cell and filled in the call (``np.matmul(q, k.T, out=buf)``)
      counts like one allocated in it ("resident memory at the start counted").

    The reported peak is the tracemalloc peak, or the larger resident/private one when that is
    above :attr:`RSS_FLOOR` (below it, page faults of libraries make it noise). During the call
    tracemalloc's ``stop``, ``start``, ``reset_peak`` and ``clear_traces`` are replaced by
    functions that only record the attempt, and a canary traced at the start shows any
    stop/restart/clear made with functions saved beforehand (``_tracemalloc.stop``): both are
    reported as tampering.
    """

    RSS_FLOOR = 16 * 2**20
    GUARDED = ("stop", "start", "reset_peak", "clear_traces")

    def __init__(self):
        import tracemalloc

        self.modules = (tracemalloc, _tracemalloc)
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
        if _TRACEMALLOC["is_tracing"]():  # the student's own tracing: ours starts fresh
            _TRACEMALLOC["stop"]()
        _TRACEMALLOC["start"]()
        self.canary = bytearray(64)  # traced from now on: gone from the traces if they are reset
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
        traced = _TRACEMALLOC["get_traced_memory"]()[1]
        if _TRACEMALLOC["_get_object_traceback"](self.canary) is None:
            self.tampered.add("tracemalloc stopped, restarted or cleared during the call")
        resident = max(0, self._status("VmHWM") - self.rss)
        for module, name, original in reversed(self.saved):
            setattr(module, name, original)
        _TRACEMALLOC["stop"]()
        return max(traced, resident if resident > self.RSS_FLOOR else 0)


def _private(pid: int) -> int | None:
    """Bytes of ``pid``'s memory that is its own (not shared with the process it forked from)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            return sum(int(line.split()[1]) * 1024 for line in fh
                       if line.startswith(("Private_Clean:", "Private_Dirty:")))  # fmt: skip
    except (OSError, ValueError):
        return None


def _in_child(run, *args) -> dict:
    """``run(*args)`` (a traced call, returning its reply) in a fork of this kernel, its private
    memory sampled from here every 2 ms while it runs (see :class:`Peak`)."""
    import gc
    import select

    gc.collect()
    gc.freeze()  # the child's collections do not touch (copy) the objects it shares with us
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            data = frame(run(*args))
        except BaseException as exc:
            data = frame({"error": _error(exc), "raised": _error(exc)})
        try:
            while data:
                data = data[os.write(w, data) :]
        finally:
            os._exit(0)
    os.close(w)
    gc.unfreeze()
    chunks, private = [], 0
    while True:
        private = max(private, _private(pid) or 0)
        if select.select([r], [], [], 0.002)[0]:
            chunk = os.read(r, 2**20)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(r)
    status = os.waitpid(pid, 0)[1]
    data = b"".join(chunks)
    if len(data) < 4:
        how = os.waitstatus_to_exitcode(status)
        message = f"the call's process ended without an answer (exit status {how})"
        return {"raised": {"type": "MemoryError" if how == -9 else "RuntimeError",
                           "message": message}, "states": []}  # fmt: skip
    reply = json.loads(data[4:])
    if "peak" in reply and private > Peak.RSS_FLOOR:
        reply["peak"] = max(int(reply["peak"]), private)
    return reply


def _call(request: dict, shell, watch: Watch | None, peak: Peak | None) -> dict:
    """Call the student's function on the request's arguments; the reply (value or raised)."""
    args = [decode(a, _build) for a in request["args"]]
    kwargs = {k: decode(v, _build) for k, v in request["kwargs"].items()}
    watching = watch is not None and bool(request.get("watch"))
    fn = shell.user_ns[request["name"]]
    if peak is not None:
        peak.start()
    if watching:
        watch.start(calling=True)
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
    return reply


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
            elif op == "warm":  # the course's cached fixtures, called before any student code
                for spec in request.get("fixtures", []):
                    _build(str(spec), {})
                send(fd_out, {"ok": True})
            elif op == "get":
                ns = shell.user_ns
                if request["name"] not in ns:
                    send(fd_out, {"kind": "missing"})
                elif callable(ns[request["name"]]):
                    send(fd_out, {"kind": "callable", "type": type(ns[request["name"]]).__name__})
                else:
                    send(fd_out, {"kind": "value", "value": encode(ns[request["name"]])})
            elif op == "call":
                if request.get("trace"):  # the peak memory of the call, in a fresh child
                    send(fd_out, _in_child(_call, request, shell, watch, Peak()))
                else:
                    send(fd_out, _call(request, shell, watch, None))
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
        watch = Watch(config["path"][0], config.get("fingerprints"), bool(config.get("sandbox")))
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
