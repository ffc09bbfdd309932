"""Every exercise check's verdict on a solution notebook's answers, right and wrong, as JSON.

    python tests/_verdicts.py [--block-torch] solutions/01_softmax.ipynb ...

Runs the notebook's code cells (not its check cells) in one namespace, then calls each check
cell's check on the solution's answer as written, on the answer made wrong (every number it
returns moved by 1% + 0.01, every int by one, every bool flipped) and on the exercise's stub
(``NotImplementedError``). The verdict is ``"pass"`` or the error's type and message. With
``--block-torch`` torch, transformers and tokenizers are hidden as if not installed (the
browser edition; ``_no_torch.py``): the test compares the two runs.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import sys
from pathlib import Path


def _wrong(value):
    """``value`` made wrong in a way any check of a number should notice."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return not value
    if isinstance(value, np.ndarray) and value.dtype.kind == "b":
        return ~value
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return value + 1
    if isinstance(value, (np.ndarray, float, np.floating)):
        return value * 1.01 + 0.01
    if isinstance(value, int):
        return value + 1
    if isinstance(value, dict):
        return type(value)({k: _wrong(v) for k, v in value.items()})
    if isinstance(value, (tuple, list)):
        return type(value)(_wrong(v) for v in value)
    if isinstance(value, str):
        return value + " x"
    return value


def _made_wrong(arg):
    if callable(arg):
        return lambda *a, **k: _wrong(arg(*a, **k))
    return _wrong(arg)


def _stub(*args, **kwargs):
    raise NotImplementedError("replace this line with your code")


def _verdict(check, args) -> str:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            check(*args)
    except Exception as exc:  # the verdict is the message, whatever raised it
        return f"{type(exc).__name__}: {exc}"
    return "pass"


def verdicts(path: str) -> dict[str, dict[str, str]]:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    namespace: dict = {"__name__": "__main__"}
    result = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        if "check" not in tags:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(cell.source, path, "exec"), namespace)
            continue
        call = ast.parse(cell.source).body[0].value  # check_x(answer, ...)
        check = namespace[call.func.id]
        args = [eval(compile(ast.Expression(a), path, "eval"), namespace) for a in call.args]
        exercise = next(t for t in tags if t.startswith("exercise-"))
        result[exercise] = {
            "solution": _verdict(check, args),
            "wrong": _verdict(check, [_made_wrong(a) for a in args]),
            "stub": _verdict(check, [_stub if callable(a) else a for a in args]),
        }
    return result


if __name__ == "__main__":
    paths = [a for a in sys.argv[1:] if a != "--block-torch"]
    if "--block-torch" in sys.argv:
        hide = Path(__file__).with_name("_no_torch.py")  # run as a script: it hides at once
        exec(compile(hide.read_text(encoding="utf-8"), str(hide), "exec"), {"__name__": "hide"})
    import matplotlib

    matplotlib.use("Agg")
    print(json.dumps({p: verdicts(p) for p in paths}, ensure_ascii=False))
