"""Checks for the exercises of lecture 01 (softmax)."""

from __future__ import annotations

import numpy as np

from ..softmax import softmax
from . import (
    ExerciseError,
    call_student,
    call_student_frozen,
    check_mistakes,
    check_value,
    frozen,
    passed,
)

__all__ = [
    "check_stable_softmax",
    "check_softmax_temperature",
    "check_attention_weights",
    "check_saturation",
]

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


def check_saturation(unscaled_dk, scaled_dk) -> None:
    """Exercise 1.4 (predict, then measure): when does the unscaled softmax saturate?

    Measured with 100 keys and standard normal q, k, the mean largest weight of softmax(q·k)
    is 0.39 at d_k = 8 and 0.54 at d_k = 16 (standard error 0.004 with 4000 queries, so even
    500 queries tell them apart); with the 1/sqrt(d_k) scaling it stays near 0.08 for every
    d_k. ``tests/test_checks_lecture01.py`` re-measures both facts.
    """
    ex = "1.4"
    if isinstance(unscaled_dk, bool) or not isinstance(unscaled_dk, (int, np.integer)):
        raise ExerciseError(ex, f"unscaled_dk: expected an int such as 64, got {unscaled_dk!r}.")
    hints = {
        8: "8 is the answer for 10 keys (the lecture's plot). Here there are 100 keys: with "
        "more keys the top weight is shared more, so it takes a larger d_k.",
        32: "at d_k = 16 the mean largest weight is already above 0.5; measure every power "
        "of 2 and take the first one above 0.5.",
    }
    check_value(ex, int(unscaled_dk), 16,
                what="smallest d_k (a power of 2) at which the mean largest weight of the "
                "UNSCALED softmax over 100 keys exceeds 0.5",
                hint=hints.get(int(unscaled_dk),
                               "measure mean(max(softmax(q·k))) over >= 500 random queries, "
                               "100 keys, standard normal entries, for d_k = 1, 2, 4, ..."))  # fmt: skip
    if scaled_dk is not None:
        raise ExerciseError(
            ex,
            f"scaled_dk:\n  expected None\n  got      {scaled_dk!r}",
            "with scores divided by sqrt(d_k) the mean largest weight stays near 0.08 for "
            "every d_k: the scaled softmax never saturates, so the answer is None.",
        )
    passed(ex, "when an unscaled softmax saturates")
