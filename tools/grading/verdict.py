"""The verdict, computed in the grader's process: the official check is called here with a
stand-in for the student's function (:class:`StudentFunction`), whose every call is sent to the
sandbox as plain data; checks that take a ``seed`` also run on a hidden seed.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import io
import re
import sys

from course_lib.checks import ExerciseError, RemoteFunction
from tools.grading import grade_kernel

from .course import Check
from .sandbox import Kernel


class StudentFunction(RemoteFunction):
    """The grader's stand-in for a student's function: each call runs in the sandbox."""

    def __init__(self, kernel: Kernel, name: str):
        self.kernel, self.name = kernel, name

    def call(self, *args, **kwargs):
        return self._call(args, kwargs, trace=False)[0]

    def call_traced(self, *args, **kwargs):
        return self._call(args, kwargs, trace=True)

    def _call(self, args, kwargs, *, trace: bool):
        try:
            message = {
                "op": "call",
                "trace": trace,
                "watch": True,
                "name": self.name,
                "args": [grade_kernel.encode_argument(a) for a in args],
                "kwargs": {k: grade_kernel.encode_argument(v) for k, v in kwargs.items()},
            }
        except grade_kernel.NotPlainData as exc:
            raise CheckProblem(
                f"the check passes a {exc} object, which cannot be sent to the student's "
                "process (checks must pass plain data or a Built recipe)"
            ) from None
        reply = self.kernel.request(message)
        gens = [a for a in [*args, *kwargs.values()] if _is_generator(a)]
        for gen, state in zip(gens, reply.get("states", []), strict=False):
            gen.bit_generator.state = grade_kernel.decode(state)  # the student used this rng
        if "raised" in reply:
            raise _exception(reply["raised"])
        try:
            return grade_kernel.decode(reply.get("value")), int(reply.get("peak", 0))
        except (ValueError, TypeError, KeyError) as exc:
            raise CheckProblem(f"the answer could not be read ({exc})") from None

    def __repr__(self) -> str:
        return f"<your function {self.name}>"


class CheckProblem(BaseException):  # passes through call_student's `except Exception`
    """The check cannot be run in this grader (e.g. it passes an object instead of a recipe)."""


def _is_generator(x) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.random.Generator)


def _exception(info: dict) -> Exception:
    """An exception like the student's (same type name and message), made of data only."""
    name, message = str(info.get("type", "Exception")), str(info.get("message", ""))
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception) and cls is not ExerciseError):
        cls = type(name if name.isidentifier() else "Error", (Exception,), {})
    try:
        return cls(message)
    except Exception:  # builtins with other signatures (UnicodeError, OSError)
        return type(name, (Exception,), {})(message)


def _message(err: BaseException) -> str:
    text = str(err)
    m = re.search(r"(?:Exercise \d+\.\d+|Quiz \d+, item \d+) is not right yet\.\n(.*)", text, re.S)
    return (m.group(1) if m else text).strip()


def run_check(kernel: Kernel, check: Check, hidden_seed: int) -> tuple[bool, str]:
    """Run one official check here, on the student's answers living in ``kernel``."""
    try:
        return _run_check(kernel, check, hidden_seed)
    except (CheckProblem, Exception) as err:  # e.g. an answer value too deeply nested to read
        return False, f"the check could not use your answer: {type(err).__name__}: {err}"


def _run_check(kernel: Kernel, check: Check, hidden_seed: int) -> tuple[bool, str]:
    args = []
    for kind, value in check.args:
        if kind == "value":
            args.append(value)
            continue
        got = kernel.request({"op": "get", "name": value})
        if got.get("kind") == "missing":
            return False, f"`{value}` is not defined when the check runs"
        if got.get("kind") == "callable":
            args.append(StudentFunction(kernel, value))
        else:
            args.append(grade_kernel.decode(got.get("value")))
    params = inspect.signature(check.function).parameters
    takes_seed = "seed" in params and params["seed"].kind is inspect.Parameter.KEYWORD_ONLY
    for seed in (0, hidden_seed) if takes_seed else (None,):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                check.function(*args, **({} if seed is None else {"seed": seed}))
        except ExerciseError as err:
            hidden = f" (on the grader's hidden inputs, seed={seed})" if seed else ""
            return False, _message(err) + hidden
        except CheckProblem as err:
            return False, f"not graded: {err}"
        except Exception as err:  # a check that cannot read the answer
            return False, f"the check could not use your answer: {type(err).__name__}: {err}"
    return True, ""
