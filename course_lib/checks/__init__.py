"""Exercise checks: one module per lecture (``lecture01``, ``lecture02``, …).

A check is called from a check cell of an exercise notebook with the student's answer. It
compares the answer with the course's verified implementation on a few inputs and either
prints one fixed success line or raises :class:`ExerciseError` with a message a student can
act on: what was expected, what was got, and a hint. Checks never print on failure only —
they raise, so nbval (and ``make grade``) cannot be fooled by saved outputs.

This package module holds what every lecture's checks share (comparing arrays, naming the
mistake from a table, calling the student's code only through :func:`call_student`); it is
one idea, kept in one place so that the grader has a single surface to trust.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np

from .._validation import check_positive_int, check_positive_number, check_probability, check_str

__all__ = [
    "ExerciseError",
    "check_array",
    "check_count",
    "check_value",
    "passed",
    "finite_matrix",
    "call_student",
    "call_student_frozen",
    "frozen",
    "check_mistakes",
    "read_only",
    "Built",
    "RemoteFunction",
    "call_on_batch",
    "check_batched",
    "within",
    "check_prediction",
    "call_student_traced",
    "hidden_rng",
    "check_diagnosis",
    "answer_array",
]


class ExerciseError(AssertionError):
    """Raised by a check when the student's answer is not right yet.

    In Jupyter (JupyterLab, the classic notebook, nbval, ``make grade``) the error shows only the
    course's message (what was expected, what was got, the hint), not a traceback through the
    checking code: IPython asks an exception for ``_render_traceback_`` before formatting one.
    When the student's own function raised (``call_student`` chains that error), its traceback
    is shown first, from the student's code on: that one they need.
    """

    def __init__(self, exercise: str, message: str, hint: str | None = None):
        check_str(exercise, "exercise"), check_str(message, "message")
        if hint is not None and not isinstance(hint, str):
            raise TypeError(f"hint must be a str or None, got {type(hint).__name__}")
        text = f"\n\nExercise {exercise} is not right yet.\n{message}"
        if hint:
            text += f"\nHint: {hint}"
        super().__init__(text + "\n")
        self.exercise, self.message, self.hint = exercise, message, hint

    def _render_traceback_(self) -> list[str]:
        """The lines IPython shows instead of a traceback (with ANSI colours, like its own)."""
        import os

        lines = []
        cause = self.__cause__
        if cause is not None:
            here = os.path.dirname(os.path.abspath(__file__))
            tb = cause.__traceback__
            while (
                tb is not None
                and os.path.dirname(os.path.abspath(tb.tb_frame.f_code.co_filename)) == here
            ):
                tb = tb.tb_next  # skip call_student's frame: start at the student's code
            lines += self._format_traceback(cause, tb) + [""]
        head, _, rest = str(self).strip().partition("\n")
        lines.append(f"\x1b[1;31mExerciseError\x1b[0m: \x1b[1m{head}\x1b[0m")
        return lines + (rest.split("\n") if rest else [])

    @staticmethod
    def _format_traceback(exc: BaseException, tb) -> list[str]:
        """``exc``'s traceback from ``tb`` on, as IPython formats it (plain without IPython)."""
        import traceback

        try:
            from IPython import get_ipython

            shell = get_ipython()
            if shell is not None:
                return shell.InteractiveTB.structured_traceback(type(exc), exc, tb)
        except Exception:  # any trouble formatting: fall back to the standard library
            pass
        return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip("\n").split("\n")


def _show(x) -> str:
    arr = np.asarray(x)
    if arr.dtype.kind in "fc":
        return np.array2string(arr, precision=4, suppress_small=True, max_line_width=88)
    return repr(x)


class Built:
    """An argument that is not plain data (a model, a module): the recipe to build it.

    ``Built("course_lib.checks.given_torch:scripted_model", script=[[4, 5, 2]])`` names a factory
    (``"module:function"``) and its plain-data keyword arguments. :func:`call_student` builds it
    just before calling the student's function; a grader that runs the student's code in another
    process sends the recipe there instead of the object. ``.build()`` gives the check its own copy.
    """

    def __init__(self, factory: str, **kwargs):
        if not isinstance(factory, str) or factory.count(":") != 1:
            raise ValueError(f"factory must be 'module:function', got {factory!r}")
        self.factory, self.kwargs = factory, kwargs

    def build(self):
        module, name = self.factory.split(":")
        factory = getattr(importlib.import_module(module), name, None)
        if not callable(factory):
            raise ValueError(f"factory {self.factory!r}: {module} has no function {name}")
        return factory(**self.kwargs)

    def __repr__(self) -> str:
        return f"Built({self.factory!r}, **{self.kwargs!r})"


class RemoteFunction:
    """A student's function that lives in another process (tools/grading/cli.py's sandbox).

    :func:`call_student` hands it the arguments as they are (``Built`` recipes unbuilt); its
    ``call`` sends them as plain data, runs the function there and returns the result as plain
    data, raising an exception of the student's exception's type name when it raised.
    """

    def call(self, *args, **kwargs):
        raise NotImplementedError

    def call_traced(self, *args, **kwargs):
        """``call``, plus the peak bytes the call allocated there (measured with tracemalloc)."""
        raise NotImplementedError


def call_student(exercise: str, fn: Callable, *args, **kwargs):
    """Call the student's function, turning a stub or a crash into a readable ExerciseError.

    Arguments must be plain data (numbers, strings, numpy arrays, torch tensors, lists and
    dicts of them) or :class:`Built` recipes, so that a grader can replay the call elsewhere.
    """
    if isinstance(fn, RemoteFunction):
        invoke = fn.call
    elif not callable(fn):
        raise ExerciseError(exercise, f"expected a function, got {type(fn).__name__} {fn!r}.")
    else:
        invoke = fn
        args = tuple(a.build() if isinstance(a, Built) else a for a in args)
        kwargs = {k: v.build() if isinstance(v, Built) else v for k, v in kwargs.items()}
    try:
        return invoke(*args, **kwargs)
    except NotImplementedError:
        raise ExerciseError(
            exercise,
            "your function still raises NotImplementedError.",
            "replace the `raise NotImplementedError` line with your code, run that cell, "
            "then run this check again.",
        ) from None
    except ExerciseError:
        raise
    except Exception as exc:
        hint = "read the error above; print the shapes of your arrays to find the mismatch."
        if isinstance(fn, RemoteFunction):  # the grader's report shows no traceback above
            hint = (
                "run this exercise's check cell in your notebook to see where your function "
                "raised it; print the shapes of your arrays to find the mismatch."
            )
        if type(exc).__name__ in ("NameError", "UnboundLocalError"):
            hint = (
                "a name your function uses is not defined: check its spelling, and run the cell "
                "that defines it (and the imports at the top) before this check."
            )
        raise ExerciseError(
            exercise, f"your function raised {type(exc).__name__}: {exc}", hint
        ) from exc


_NONE_HINT = "your function returned None: does every path end with `return ...`?"


def _none(exercise: str, what: str) -> ExerciseError:
    return ExerciseError(exercise, f"{what}: expected a value, got None.", _NONE_HINT)


def check_array(
    exercise: str,
    got,
    expected,
    *,
    what: str,
    hint: str | None = None,
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> None:
    """Raise ExerciseError unless ``got`` has the shape of ``expected`` and is close to it."""
    expected = np.asarray(expected)
    if got is None:
        raise _none(exercise, what)
    single = _single_precision(got)
    if single:  # a float32 answer is right to float32's precision (about 1e-7 relative)
        rtol, atol = max(rtol, 2e-5), max(atol, 2e-6)
    try:
        got_arr = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise ExerciseError(
            exercise, f"{what}: expected an array of numbers, got {type(got).__name__}.", hint
        ) from None
    if got_arr.shape != expected.shape:
        raise ExerciseError(
            exercise,
            f"{what}: expected an array of shape {expected.shape}, got shape {got_arr.shape}.",
            hint,
        )
    if not np.all(np.isfinite(got_arr)) and np.all(np.isfinite(expected)):
        raise ExerciseError(
            exercise,
            f"{what}:\n  expected {_show(expected)}\n  got      {_show(got_arr)}\n"
            "  (your result contains nan or inf)",
            hint,
        )
    if not np.allclose(got_arr, expected, rtol=rtol, atol=atol):
        worst = float(np.max(np.abs(got_arr - expected)))
        if worst < 1e-5 and not single:
            hint = (
                f"the largest difference, {worst:.2g}, is the size of float32 rounding: did you "
                "compute in float32 (np.float32, torch's default) and then convert? Compute in "
                "float64, or return the float32 result itself (checked to float32's precision)."
            )
        raise ExerciseError(
            exercise,
            f"{what}:\n  expected {_show(expected)}\n  got      {_show(got_arr)}\n"
            f"  (largest difference {worst:.3g})",
            hint,
        )


def _single_precision(x) -> bool:
    """Is ``x`` a float32 (or float16/bfloat16) array, tensor or scalar?"""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return False
    return str(dtype).rsplit(".", 1)[-1] in ("float32", "float16", "bfloat16")


def check_value(exercise: str, got, expected, *, what: str, hint: str | None = None) -> None:
    """Raise ExerciseError unless ``got == expected`` (for ints, strings, tuples, bools)."""
    if got is None and expected is not None:
        raise _none(exercise, what)
    if got != expected:
        raise ExerciseError(exercise, f"{what}:\n  expected {expected!r}\n  got      {got!r}", hint)


def check_count(exercise: str, got, expected: int, *, what: str, hint: str | None = None) -> None:
    """Raise ExerciseError unless ``got`` is an integer (not a bool or float) equal to ``expected``."""
    if got is None:
        raise _none(exercise, what)
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        raise ExerciseError(
            exercise,
            f"expected an integer, got {type(got).__name__} {got!r}.",
            "return a Python int.",
        )
    check_value(exercise, int(got), expected, what=what, hint=hint)


def finite_matrix(
    exercise: str, x, shape: tuple[int, int], meaning: str, hint: str | None = None
) -> np.ndarray:
    """A student's constructed input as a float array of ``shape`` with finite entries, or an
    ExerciseError saying what was expected (``meaning``, e.g. "3 tokens, 2 features")."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ExerciseError(
            exercise, f"expected a {shape} array of numbers, got {type(x).__name__}."
        ) from None
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise ExerciseError(
            exercise,
            f"expected a {shape} array of finite numbers ({meaning}), got shape {arr.shape}.",
            hint,
        )
    return arr


def tokens_around_x0(
    exercise: str,
    student_fn: Callable,
    x0: np.ndarray,
    share: float,
    shape: tuple[int, int],
    meaning: str,
) -> tuple[np.ndarray, str]:
    """Call ``student_fn(x0, share)`` for a token matrix X (``shape``) whose row 0 must be the
    given token ``x0``. Returns X and the "for x0 = ... and share ..." phrase of the messages."""
    got = call_student(exercise, student_fn, x0.copy(), share)
    arr = finite_matrix(exercise, got, shape, meaning,
                        "return X = np.array([x0, x1, x2]), one row per token.")  # fmt: skip
    given = f"for x0 = {np.round(x0, 4).tolist()} and share {share}"
    if not np.allclose(arr[0], x0, rtol=1e-6, atol=1e-9):
        raise ExerciseError(exercise, f"{given}: row 0 of X must be the token x0 you are given; "
                            f"got {np.round(arr[0], 4).tolist()}.",
                            "keep X[0] = x0: the question is what tokens 1 and 2 must be.")  # fmt: skip
    return arr, given


def passed(exercise: str, title: str) -> None:
    """Print the one fixed line that a passing check cell shows."""
    check_str(exercise, "exercise"), check_str(title, "title")
    print(f"✅ Exercise {exercise} passed: {title}")


def _same(got, wrong, rtol: float, atol: float) -> bool:
    """True if ``got`` equals the wrong answer ``wrong`` (same shape, close, nan where it has nan)."""
    try:
        g, w = np.asarray(got, dtype=float), np.asarray(wrong, dtype=float)
    except (TypeError, ValueError):
        return False
    if g.shape != w.shape or not np.isfinite(w).any():  # an all-nan mistake names nothing
        return False
    return bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True))


def check_mistakes(
    exercise: str,
    got,
    expected,
    *,
    what: str,
    hint: str,
    mistakes: dict | None = None,
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> None:
    """:func:`check_array`, but a wrong answer that IS a known mistake gets that mistake's hint.

    ``mistakes`` maps a hint naming a mistake to the value that mistake produces on this input
    (computed by the check itself, e.g. a softmax with the maximum of the whole array
    subtracted). The first mistake whose value equals ``got`` replaces the generic ``hint``.
    """
    if mistakes is not None and not isinstance(mistakes, dict):
        raise TypeError(
            f"mistakes must be a dict hint -> wrong value, got {type(mistakes).__name__}"
        )
    try:
        check_array(exercise, got, expected, what=what, hint=hint, rtol=rtol, atol=atol)
    except ExerciseError as err:
        with np.errstate(all="ignore"):
            for mistake_hint, wrong in (mistakes or {}).items():
                if _same(got, wrong, rtol, atol):
                    raise ExerciseError(exercise, err.message, mistake_hint) from None
        raise


def call_on_batch(exercise: str, fn: Callable, *args, batched: bool, batch_hint: str, where: str):
    """:func:`call_student`; if the answer crashes on an input with leading (batch, head, ...)
    axes (``batched``), the message says ``where`` (e.g. " (on a (layers, heads, n, n) input)")
    and the hint is ``batch_hint``, the lecture's advice on indexing from the end."""
    try:
        return call_student(exercise, fn, *args)
    except ExerciseError as err:
        if batched and "raised" in err.message:
            raise ExerciseError(exercise, err.message + where, batch_hint) from None
        raise


def check_batched(
    exercise: str, got, expected, *, batched: bool, batch_hint: str, **kwargs
) -> None:
    """:func:`check_mistakes` (``kwargs`` are its arguments); a wrong shape on an input with
    leading axes (``batched``) gets ``batch_hint`` (the lecture's batch advice) instead."""
    try:
        check_mistakes(exercise, got, expected, **kwargs)
    except ExerciseError as err:
        if batched and np.shape(got) != np.shape(expected) and "shape" in err.message:
            raise ExerciseError(exercise, err.message, batch_hint) from None
        raise


def within(count: int, n: int, p: float, sigmas: float = 5.0) -> bool:
    """Is ``count`` out of ``n`` draws within ``sigmas`` binomial standard deviations of ``n p``?

    For answers that draw at random (a masking rule, a 50/50 split): a right rule lands within
    5 sigmas for any seed (a false alarm about once in 1.7 million), a wrong rate does not.
    """
    count = check_positive_int(count, "count", allow_zero=True)
    n, p = check_positive_int(n, "n"), check_probability(p, "p")
    sigmas = check_positive_number(sigmas, "sigmas")
    return bool(abs(count - n * p) <= sigmas * np.sqrt(n * p * (1 - p)))


def frozen(x: np.ndarray) -> Built:
    """The :class:`Built` recipe of a read-only copy of ``x``."""
    try:
        x = np.asarray(x)
    except ValueError:  # a ragged list
        raise TypeError(f"x must be an array of numbers, got a ragged {type(x).__name__}") from None
    if x.dtype.kind not in "biuf":
        raise TypeError(f"x must be an array of numbers (or bools), got dtype {x.dtype}")
    return Built("course_lib.checks.given:read_only", data=x.tolist(), dtype=str(x.dtype))


def call_student_frozen(exercise: str, fn: Callable, *args, **kwargs):
    """:func:`call_student` where writing into a read-only argument gets a hint naming the mistake.

    Pass the arrays the answer must not change as :func:`frozen` recipes.
    """
    try:
        return call_student(exercise, fn, *args, **kwargs)
    except ExerciseError as err:
        if "read-only" in err.message:
            raise ExerciseError(
                exercise,
                err.message,
                "your function changes the caller's array in place (x -= …, x[...] = …). "
                "Leave the input alone and work on a copy: x = x.copy() or x = x - m.",
            ) from None
        raise


def check_prediction(
    exercise: str,
    got,
    expected: int,
    *,
    what: str,
    too_low: str,
    too_high: str,
    hints: dict | None = None,
    not_int: str = "measure it, then set the variable to a Python int.",
) -> None:
    """The answer of a predict-then-measure exercise: an integer equal to ``expected``.

    A wrong answer is told "too low" or "too high" with a reason (``too_low`` / ``too_high``,
    or the hint ``hints`` names for that very value), never the expected value itself: the
    student measures it. ``not_int`` is the hint for an answer that is not an integer.
    """
    check_str(exercise, "exercise"), check_str(what, "what")
    check_str(too_low, "too_low"), check_str(too_high, "too_high"), check_str(not_int, "not_int")
    check_positive_int(expected, "expected", allow_zero=True)
    if got is None:
        raise _none(exercise, what)
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        raise ExerciseError(
            exercise,
            f"{what}: expected an integer, got {type(got).__name__} {got!r}.",
            not_int,
        )
    got = int(got)
    if got != expected:
        side = "too low" if got < expected else "too high"
        hint = (hints or {}).get(got) or (too_low if got < expected else too_high)
        raise ExerciseError(exercise, f"{what}: your {got} is {side}.", hint)


def call_student_traced(exercise: str, fn: Callable, *args):
    """:func:`call_student`, and the peak bytes the call allocated: ``(result, peak_bytes)``.

    Here (a notebook's own check) it is tracemalloc's peak: numpy reports its arrays to
    tracemalloc, torch does not. Under the grader the student's process measures it
    (``tools/grading/grade_kernel.py``'s ``Peak``): tracemalloc from a fresh start, with its reset
    functions disabled during the call, and the resident high-water mark, which sees torch."""
    import tracemalloc

    check_str(exercise, "exercise")
    if isinstance(fn, RemoteFunction):
        traced = _TracedRemote(fn)
        result = call_student(exercise, traced, *args)
        return result, traced.peak
    if tracemalloc.is_tracing():  # pragma: no cover - someone else is tracing: measure ours
        tracemalloc.stop()
    tracemalloc.start()
    try:
        result = call_student(exercise, fn, *args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak


class _TracedRemote(RemoteFunction):
    def __init__(self, fn: RemoteFunction):
        self.fn, self.peak = fn, 0

    def call(self, *args, **kwargs):
        result, self.peak = self.fn.call_traced(*args, **kwargs)
        return result


def answer_array(
    exercise: str, got, what: str, shape: tuple[int, ...] | None = None, *, dtype=float,
    hint: str | None = None,
) -> np.ndarray:  # fmt: skip
    """A student's answer as a numpy array (a torch tensor is read as one), of ``shape`` if
    given; else an :class:`ExerciseError` saying what was expected and what came back."""
    if hasattr(got, "detach") and hasattr(got, "cpu"):  # a torch tensor
        got = got.detach().cpu().numpy()
    expected = "an array of numbers" if shape is None else f"an array of shape {shape}"
    try:
        arr = np.asarray(got, dtype=dtype)
    except (TypeError, ValueError):
        raise ExerciseError(exercise, f"{what}: expected {expected}, got {type(got).__name__}.",
                            hint) from None  # fmt: skip
    if shape is not None and arr.shape != shape:
        raise ExerciseError(exercise, f"{what}: expected {expected}, got shape {arr.shape}.", hint)
    return arr


def check_diagnosis(
    exercise: str, student_fn: Callable, *, seed: int, faults: tuple[str, ...], factory: str,
    salt: int, noun: str, evidence: Callable[[str, str], str], title: str,
) -> None:  # fmt: skip
    """A "diagnose" exercise: ``student_fn(mystery) -> fault``, the fault of a broken function
    found by calling it. Seed 0 gives every fault of ``faults`` once, in order; other seeds as
    many drawn at random (repeats allowed, so that elimination does not work). ``factory``
    builds the mystery function in the student's process (a :class:`Built` recipe with
    ``fault=``); a wrong diagnosis is shown ``evidence(fault, got)``, an input on which the two
    differ, not the answer."""
    names = ", ".join(faults)
    shown = list(faults)
    if seed:
        rng = hidden_rng(seed, salt)
        shown = [faults[int(i)] for i in rng.integers(0, len(faults), size=len(faults))]
    for k, fault in enumerate(shown, 1):
        got = call_student(exercise, student_fn, Built(factory, fault=fault))
        if not isinstance(got, str) or got not in faults:
            raise ExerciseError(exercise, f"{noun} {k}: expected one of {names}, got {got!r:.60}.",
                                "return the name of the fault as a string.")  # fmt: skip
        if got != fault:
            raise ExerciseError(exercise, f"{noun} {k}: you diagnosed {got!r}, which does not "
                                "explain what it does.", evidence(fault, got))  # fmt: skip
    passed(exercise, title)


def hidden_rng(seed: int, salt: int) -> np.random.Generator:
    """The random generator of a check's hidden inputs (``seed`` = the grader's hidden seed)."""
    seed = check_positive_int(seed, "seed", allow_zero=True)
    return np.random.default_rng([check_positive_int(salt, "salt", allow_zero=True), seed])


from .given import read_only  # noqa: E402 (a Built factory, kept importable from here)
