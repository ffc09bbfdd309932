"""The student's side of tools/grade.py: a sandboxed IPython shell that runs cells and answer calls.

This file runs in its own process (``python -S grade_kernel.py CONFIG``), started by the grader
inside a sandbox. It talks to the grader over two pipes with length-prefixed JSON messages:

- ``{"op": "run", "code": ...}``: run a notebook cell with IPython -> ``{"error": ...}``;
- ``{"op": "get", "name": ...}``: what the student's name holds (a function, a value, nothing);
- ``{"op": "call", "name": ..., "args": [...], "kwargs": {...}}``: call the student's function
  (with ``"trace": true``, the reply also holds the call's peak allocated bytes, ``"peak"``).

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
        bitgen = getattr(np.random, str(state["bit_generator"]))()
        bitgen.state = state
        return np.random.Generator(bitgen)
    if kind == "built":
        if build is None:
            raise ValueError("a Built recipe is only built on the student's side")
        return build(t["factory"], decode(t["kwargs"], build))
    if kind == "opaque":
        return _opaque(str(t.get("type", "object")), str(t.get("repr", ""))[:300])
    raise ValueError(f"bad message: unknown kind {kind!r}")


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


def serve(fd_in: int, fd_out: int) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # no sqlite file, no saving thread: a quick exit
    shell = InteractiveShell.instance(config=config)
    while True:
        try:
            request = receive(fd_in)
        except EOFError:  # the grader is done: leave at once (no interpreter teardown)
            os._exit(0)
        op = request.get("op")
        try:
            if op == "run":
                result = shell.run_cell(request["code"], store_history=True)
                exc = result.error_before_exec or result.error_in_exec
                send(fd_out, {"error": None if exc is None else _error(exc)})
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
                trace = bool(request.get("trace"))  # the peak memory of the call (tracemalloc)
                if trace:
                    import tracemalloc

                    tracemalloc.start()
                try:
                    got = shell.user_ns[request["name"]](*args, **kwargs)
                except BaseException as exc:  # reported to the grader as data
                    send(fd_out, {"raised": _error(exc), "states": _states(args, kwargs)})
                else:
                    reply = {"value": encode(got), "states": _states(args, kwargs)}
                    if trace:
                        reply["peak"] = tracemalloc.get_traced_memory()[1]
                    send(fd_out, reply)
                finally:
                    if trace:
                        tracemalloc.stop()
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
    with open(config_path) as fh:
        config = json.load(fh)
    if config.get("sandbox"):
        from grade_sandbox import enter  # only inside the sandbox

        enter(config)
    sys.path[:0] = config["path"]
    os.chdir(config["cwd"])
    import resource

    for name, value in config.get("rlimits", {}).items():
        limit = getattr(resource, name)
        resource.setrlimit(limit, (value, value))
    diagnostics = os.dup(2)  # the grader's log, for errors of this file only
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the student's prints and warnings go nowhere
        os.dup2(null, fd)
    try:
        serve(config["fd_in"], config["fd_out"])
    except BaseException:
        import traceback

        os.write(diagnostics, traceback.format_exc()[-4000:].encode())
        raise


if __name__ == "__main__":
    main(sys.argv[1])
