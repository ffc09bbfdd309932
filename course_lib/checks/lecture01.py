"""Checks for the exercises of lecture 01 (softmax)."""

from __future__ import annotations

import numpy as np

from ..softmax import softmax
from . import ExerciseError, call_student, check_array, passed

__all__ = ["check_stable_softmax", "check_softmax_temperature", "check_attention_weights"]


def check_stable_softmax(student_softmax) -> None:
    """Exercise 1.1: a softmax over the last axis that survives huge logits."""
    ex = "1.1"
    cases = [
        ("the notes' scaled scores [14, 12]", np.array([14.0, 12.0])),
        ("three equal scores", np.array([3.0, 3.0, 3.0])),
        ("a 2-D batch (softmax along each row)", np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]])),
    ]
    for what, x in cases:
        got = call_student(ex, student_softmax, x.copy())
        check_array(
            ex,
            got,
            softmax(x),
            what=f"softmax of {what}",
            hint="divide exp(x) by the sum of exp(x) along the last axis (axis=-1, keepdims=True).",
        )
    big = np.array([1000.0, 999.0, 998.0])
    with np.errstate(all="ignore"):
        got = call_student(ex, student_softmax, big.copy())
    check_array(
        ex,
        got,
        softmax(big),
        what="softmax of large logits [1000, 999, 998]",
        hint="exp(1000) overflows to inf. Subtract the maximum of each row first: "
        "softmax(x) = softmax(x - max(x)).",
    )
    masked = np.array([2.0, -np.inf, 0.5])
    with np.errstate(all="ignore"):
        got = call_student(ex, student_softmax, masked.copy())
    check_array(
        ex,
        got,
        softmax(masked),
        what="softmax of [2, -inf, 0.5] (a masked position)",
        hint="exp(-inf) is exactly 0, so the masked position should get probability 0.",
    )
    passed(ex, "stable softmax")


def check_softmax_temperature(student_fn) -> None:
    """Exercise 1.2: softmax(x / T)."""
    ex = "1.2"
    x = np.array([14.0, 12.0, 9.0])
    for t in (1.0, 0.5, 4.0, 100.0):
        got = call_student(ex, student_fn, x.copy(), t)
        check_array(
            ex,
            got,
            softmax(x / t),
            what=f"softmax of {x.tolist()} at temperature T={t}",
            hint="divide the scores by T before the softmax: softmax(x / T).",
        )
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
            "a temperature must be positive: `raise ValueError(...)` when T <= 0.",
        )
    passed(ex, "softmax with temperature")


def check_attention_weights(student_fn) -> None:
    """Exercise 1.3: attention weights from raw scores q·k and the key size d_k."""
    ex = "1.3"
    cases = [
        (np.array([112.0, 96.0]), 64),
        (np.array([3.0, 1.0, -2.0, 0.0]), 4),
        (np.array([[10.0, 20.0], [5.0, 5.0]]), 16),
    ]
    for scores, d_k in cases:
        got = call_student(ex, student_fn, scores.copy(), d_k)
        check_array(
            ex,
            got,
            softmax(scores / np.sqrt(d_k)),
            what=f"weights for scores {scores.tolist()} with d_k={d_k}",
            hint="scale by the square root of d_k (not by d_k), then apply a stable softmax.",
        )
    passed(ex, "attention weights from scores")
