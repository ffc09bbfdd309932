"""Checks for the exercises of lecture 04 (positional encoding)."""

from __future__ import annotations

import numpy as np

from ..positional import positional_encoding
from . import ExerciseError, call_student, check_array, passed

__all__ = ["check_positional_encoding", "check_shift_matrix", "check_dot_by_distance"]


def check_positional_encoding(student_fn) -> None:
    """Exercise 4.1: the sinusoidal table (num_positions, d_model)."""
    ex = "4.1"
    got = call_student(ex, student_fn, 2, 4)
    check_array(
        ex,
        got,
        [[0.0, 1.0, 0.0, 1.0], [np.sin(1), np.cos(1), np.sin(0.01), np.cos(0.01)]],
        what="the notes' example, positions 0 and 1 with d_model=4",
        hint="column 2i is sin(pos / 10000**(2i/d_model)), column 2i+1 the cos of the SAME "
        "angle; i counts pairs, so columns 2 and 3 both use 10000**(2/4).",
        atol=1e-12,
    )
    for n, d in ((5, 4), (50, 16), (1, 2), (3, 128)):
        got = call_student(ex, student_fn, n, d)
        check_array(ex, got, positional_encoding(n, d),
                    what=f"positional_encoding({n}, {d})",
                    hint="positions run 0..num_positions-1; the angle of pair i is "
                    "pos / 10000**(2*i/d_model); sin in even columns, cos in odd ones.",
                    atol=1e-10)  # fmt: skip
    passed(ex, "sinusoidal positional encoding")


def check_shift_matrix(student_fn) -> None:
    """Exercise 4.2: M_k with PE(pos + k) = M_k @ PE(pos) for every pos."""
    ex = "4.2"
    for k, d in ((1, 4), (7, 16), (0, 6), (25, 8)):
        got = call_student(ex, student_fn, k, d)
        try:
            m = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            raise ExerciseError(
                ex, f"expected a ({d}, {d}) array, got {type(got).__name__}."
            ) from None
        if m.shape != (d, d):
            raise ExerciseError(
                ex, f"for k={k}, d_model={d}: expected shape ({d}, {d}), got {m.shape}."
            )
        table = positional_encoding(60 + k, d)
        check_array(
            ex,
            table[:60] @ m.T,
            table[k:],
            what=f"M_k @ PE(pos) for k={k}, d_model={d}, compared with PE(pos + {k}) (pos = 0..59)",
            hint="each pair (sin a, cos a) turns by b = k * 10000**(-2i/d_model): "
            "sin(a+b) = cos b sin a + sin b cos a, cos(a+b) = -sin b sin a + cos b cos a. "
            "Put these 2x2 blocks on the diagonal.",
            atol=1e-9,
        )
    passed(ex, "PE(pos + k) as a linear map of PE(pos)")


def check_dot_by_distance(student_fn) -> None:
    """Exercise 4.3: PE(p) . PE(p + k) as a function of k alone, from the closed form."""
    ex = "4.3"
    for d, ks in ((4, np.arange(5)), (16, np.arange(-10, 11)), (64, np.array([0, 3, 100, -100]))):
        got = call_student(ex, student_fn, ks.copy(), d)
        table = positional_encoding(400, d)
        expected = np.array([table[200] @ table[200 + k] for k in ks])
        check_array(
            ex,
            got,
            expected,
            what=f"PE(p)·PE(p+k) for d_model={d}, k={ks.tolist()}",
            hint="sin a sin b + cos a cos b = cos(a - b), so the dot product is the sum over "
            "pairs i of cos(omega_i * k) with omega_i = 10000**(-2i/d_model). Return one "
            "number per k (an array of the same shape as k).",
            atol=1e-9,
        )
    passed(ex, "dot products depend only on the distance")
