"""Checks for the exercises of lecture 01 (softmax)."""

from __future__ import annotations

import functools

import numpy as np

from ..softmax import softmax
from . import (
    ExerciseError,
    call_student,
    call_student_frozen,
    check_mistakes,
    check_prediction,
    frozen,
    passed,
)

__all__ = [
    "check_stable_softmax",
    "check_softmax_temperature",
    "check_attention_weights",
    "check_saturation",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "1.1": ("course_lib.softmax.softmax", "course_lib.softmax.log_softmax"),
    "1.2": ("course_lib.softmax.softmax",),
    "1.3": ("course_lib.attention.scaled_dot_product_attention",),
    "1.4": (),
}

HINT_AXIS = "divide exp(x) by the sum of exp(x) along the last axis (axis=-1, keepdims=True)."
HINT_OVERFLOW = (
    "exp of a large score overflows to inf (inf / inf = nan). Subtract the maximum of each row "
    "first: softmax(x) = softmax(x - max(x))."
)


def _naive(x, axis=-1, keepdims=True):
    with np.errstate(all="ignore"):
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=keepdims)


def _global_max(x):
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x))
        return e / np.sum(e, axis=-1, keepdims=True)


def _softmax_mistakes(x) -> dict:
    """What the usual wrong softmaxes return for ``x``, keyed by the hint naming each mistake."""
    x = np.asarray(x, dtype=float)
    with np.errstate(all="ignore"):
        out = {
            HINT_OVERFLOW: _naive(x),
            "you subtracted the maximum of the WHOLE array. A row whose scores are all far below "
            "that maximum underflows to 0 / 0 = nan: subtract each row's own maximum, "
            "np.max(x, axis=-1, keepdims=True).": _global_max(x),
        }
        if x.ndim == 2:
            z = x - np.max(x, axis=0, keepdims=True)
            out["the softmax runs along the last axis (each row sums to 1), not axis 0."] = np.exp(
                z
            ) / np.exp(z).sum(axis=0, keepdims=True)
            if x.shape[0] == x.shape[1]:
                e = np.exp(x - np.max(x, axis=-1, keepdims=True))
                out[
                    "without keepdims=True the row sums have shape (n,) and divide the COLUMNS: "
                    "use np.sum(e, axis=-1, keepdims=True)."
                ] = e / e.sum(axis=-1)
    return out


def check_stable_softmax(student_softmax, *, seed: int = 0) -> None:
    """Exercise 1.1: a softmax over the last axis that survives huge logits."""
    ex = "1.1"
    rng = np.random.default_rng((11, seed))
    cases = [
        ("the notes' scaled scores [14, 12]", np.array([14.0, 12.0])),
        ("three equal scores", np.array([3.0, 3.0, 3.0])),
        ("a square 3 x 3 batch", rng.normal(size=(3, 3)) * 3),
        ("a 2-D batch (softmax along each row)", np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]])),
        ("large logits [1000, 999, 998]", np.array([1000.0, 999.0, 998.0]), HINT_OVERFLOW),
        (
            "rows on very different scales [[1000, 999], [0, -1]]",
            np.array([[1000.0, 999.0], [0.0, -1.0]]),
        ),  # fmt: skip
        ("a random (2, 3, 4) batch of large scores", rng.normal(size=(2, 3, 4)) * 300),
        ("[2, -inf, 0.5] (a masked position gets 0)", np.array([2.0, -np.inf, 0.5])),
    ]
    for what, x, *hint in cases:
        with np.errstate(all="ignore"):
            got = call_student_frozen(ex, student_softmax, frozen(x))
        check_mistakes(ex, got, softmax(x), what=f"softmax of {what}", hint=(hint or [HINT_AXIS])[0],
                       mistakes=_softmax_mistakes(x))  # fmt: skip
    passed(ex, "stable softmax")


def check_softmax_temperature(student_fn, *, seed: int = 0) -> None:
    """Exercise 1.2: softmax(x / T)."""
    ex = "1.2"
    rng = np.random.default_rng((12, seed))
    x = np.array([14.0, 12.0, 9.0])
    temps = (1.0, 0.5, 4.0, 100.0, float(rng.uniform(0.2, 5.0)))
    for t in temps:
        got = call_student(ex, student_fn, x.copy(), t)
        check_mistakes(ex, got, softmax(x / t),
                       what=f"softmax of {x.tolist()} at temperature T={t:g}",
                       hint="divide the scores by T before the softmax: softmax(x / T).",
                       mistakes={
                           "you multiplied by T; a temperature divides: softmax(x / T).":
                               softmax(x * t),
                           "T goes inside the softmax: softmax(x / T), not softmax(x) / T.":
                               softmax(x) / t,
                       })  # fmt: skip
    # Both T = 0 and a negative T must be refused (the task says T <= 0): a guard on T == 0
    # alone, or on nothing, returns numbers for T = -1 (the softmax of the flipped scores).
    for t in (0.0, -1.0):
        try:
            with np.errstate(all="ignore"):  # an unguarded x / 0 must not print a warning
                bad = call_student(ex, student_fn, x.copy(), t)
        except ExerciseError as err:
            if "ValueError" in str(err):
                continue
            raise
        raise ExerciseError(
            ex,
            f"for T={t:g} your function returned {bad!r} instead of raising.",
            "a temperature must be positive: `raise ValueError(...)` when T <= 0"
            + (" (a negative T silently flips the ranking)." if t < 0 else "."),
        )
    passed(ex, "softmax with temperature")


def check_attention_weights(student_fn, *, seed: int = 0) -> None:
    """Exercise 1.3: attention weights from raw scores q·k and the key size d_k."""
    ex = "1.3"
    rng = np.random.default_rng((13, seed))
    cases = [
        (np.array([112.0, 96.0]), 64),
        (np.array([3.0, 1.0, -2.0, 0.0]), 4),
        (np.array([[10.0, 20.0], [5.0, 5.0]]), 16),
        (rng.normal(size=(2, 3)) * 10, int(rng.choice([9, 25, 36]))),
    ]
    for scores, d_k in cases:
        got = call_student(ex, student_fn, scores.copy(), d_k)
        mistakes = {
            "you divided by d_k; attention divides by the SQUARE ROOT of d_k.": softmax(
                scores / d_k
            ),
            "the scores must be scaled: divide them by sqrt(d_k) before the softmax.": softmax(
                scores
            ),
            "scale by dividing by sqrt(d_k), not multiplying.": softmax(scores * np.sqrt(d_k)),
        }
        if scores.ndim == 2:
            z = scores / np.sqrt(d_k)
            mistakes["the softmax runs along the last axis (one row per query), not axis 0."] = (
                np.exp(z - z.max(0)) / np.exp(z - z.max(0)).sum(0)
            )
        check_mistakes(ex, got, softmax(scores / np.sqrt(d_k)),
                       what=f"weights for scores {np.round(scores, 3).tolist()} with d_k={d_k}",
                       hint="scale by the square root of d_k, then apply a stable softmax.",
                       mistakes=mistakes)  # fmt: skip
    passed(ex, "attention weights from scores")


@functools.lru_cache(maxsize=64)
def _top_weights(d_k: int, n_keys: int, scaled: bool, n_queries: int, seed) -> np.ndarray:
    """The largest softmax weight of each of ``n_queries`` random queries over ``n_keys`` keys.

    Sampled without drawing the d_k-dimensional vectors: for a fixed query q and standard-normal
    keys, the scores q·k_j are independent N(0, |q|^2), and |q|^2 is chi-squared with d_k degrees
    of freedom. So s_j = |q| z_j with z_j ~ N(0, 1) has exactly the distribution of q·k_j, at
    1/d_k of the cost (tests/test_checks_lecture01.py compares it with drawn vectors)."""
    rng = np.random.default_rng(seed)
    tops = []
    for _ in range(-(-n_queries // 500)):
        q_norm = np.sqrt(rng.chisquare(d_k, size=(500, 1)))  # |q| of 500 queries
        s = q_norm * rng.standard_normal((500, n_keys)) / (np.sqrt(d_k) if scaled else 1.0)
        tops.append(softmax(s).max(axis=-1))
    return np.concatenate(tops)[:n_queries]


STUDENT_QUERIES = 2000  # the queries the check asks the student's function to average over


def check_saturation(student_fn, unscaled_dk, scaled_dk, *, seed: int = 0) -> None:
    """Exercise 1.4 (predict, then measure): when does the unscaled softmax saturate?

    ``student_fn(d_k, n_keys, scaled, rng, n_queries)`` is the student's measurement: the mean
    largest weight of softmax(q·k) (divided by sqrt(d_k) if ``scaled``) over ``n_queries``
    random standard-normal queries and ``n_keys`` keys. The check runs it on 100 keys (seed 0)
    and on a hidden number of keys and d_k (other seeds) and compares with its own measurement
    (4,000 queries) within 4.5 standard errors of the two means. ``unscaled_dk`` and
    ``scaled_dk`` are the student's conclusions for 100 keys; a wrong one is told "too low" or
    "too high", never the value. Measured: the mean is 0.39 at d_k = 8 and 0.54 at d_k = 16
    for 100 keys; scaled, it stays near 0.08 (``tests/test_checks_lecture01.py``).
    """
    ex = "1.4"
    rng = np.random.default_rng([14, seed])
    if seed == 0:
        cases = [(1, 100, False), (16, 100, False), (256, 100, False), (16, 100, True)]
    else:
        n_keys = int(rng.choice([10, 30, 300]))
        cases = [(int(2 ** rng.integers(0, 4)), n_keys, False),
                 (int(2 ** rng.integers(4, 9)), n_keys, False),
                 (int(2 ** rng.integers(2, 9)), n_keys, True)]  # fmt: skip
    for d_k, n_keys, scaled in cases:
        student_rng = np.random.default_rng(rng.integers(2**31))
        got = call_student(ex, student_fn, d_k, n_keys, scaled, student_rng, STUDENT_QUERIES)
        what = (f"mean_top_weight(d_k={d_k}, n_keys={n_keys}, scaled={scaled}, rng, "
                f"n_queries={STUDENT_QUERIES})")  # fmt: skip
        try:
            got = float(np.asarray(got, dtype=float))
        except (TypeError, ValueError):
            raise ExerciseError(ex, f"{what}: expected one number (a mean), got {got!r:.80}.",
                                "return the mean over the queries of the largest weight, "
                                "a float.") from None  # fmt: skip
        tops = _top_weights(d_k, n_keys, scaled, 4000, (14, d_k, n_keys, scaled))
        sd = float(tops.std())
        tol = 4.5 * sd * np.sqrt(1 / STUDENT_QUERIES + 1 / tops.size) + 1e-3
        if abs(got - tops.mean()) <= tol:
            continue
        other = _top_weights(d_k, n_keys, not scaled, 4000, (14, d_k, n_keys, not scaled))
        if abs(got - other.mean()) <= tol:
            hint = ("that is the other case: with scaled=True divide the scores by sqrt(d_k), "
                    "with scaled=False do not.")  # fmt: skip
        elif abs(got - 1 / n_keys) <= 1e-6:
            hint = ("that is the mean of ALL weights (1 / n_keys): take each query's LARGEST "
                    "weight (max over the keys), then average over the queries.")  # fmt: skip
        else:
            hint = ("for each of n_queries queries draw q (d_k,) and n_keys keys (n_keys, d_k) "
                    "from rng.standard_normal, take the largest softmax weight of q·k "
                    "(/ sqrt(d_k) if scaled), and average those maxima.")  # fmt: skip
        side = "too low" if got < tops.mean() else "too high"
        raise ExerciseError(ex, f"{what} = {got:.4f} is {side} (more than {tol:.3f} from the "
                            "check's own measurement).", hint)  # fmt: skip
    check_prediction(
        ex, unscaled_dk, 16,
        what="unscaled_dk, the smallest power of 2 at which the mean largest weight of the "
        "UNSCALED softmax over 100 keys exceeds 0.5",
        too_low="measure mean_top_weight(d_k, 100, False, rng) at that d_k: the mean is still "
        "below 0.5 there. With 100 keys (the lecture's plot had 10) the top weight is shared "
        "more, so it takes a larger d_k.",
        too_high="a smaller power of 2 already puts more than 0.5 on one key on average: measure "
        "every power of 2 and take the first one above 0.5.",
    )  # fmt: skip
    if scaled_dk is not None:
        raise ExerciseError(
            ex,
            f"scaled_dk:\n  expected None\n  got      {scaled_dk!r}",
            "with scores divided by sqrt(d_k) the mean largest weight stays far below 0.5 for "
            "every d_k (measure it): the scaled softmax never saturates, so the answer is None.",
        )
    passed(ex, "when an unscaled softmax saturates")
