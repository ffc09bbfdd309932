"""Checks for the exercises of lecture 02 (Q/K/V self-attention)."""

from __future__ import annotations

import numpy as np

from ..attention import causal_mask, project_qkv, scaled_dot_product_attention
from . import ExerciseError, call_student, check_array, check_value, passed

__all__ = ["check_self_attention", "check_causal_mask", "check_masked_attention"]


def _example(rng: np.random.Generator, n: int = 4, d_model: int = 6, d_k: int = 3):
    x = rng.normal(size=(n, d_model))
    w = [rng.normal(size=(d_model, d_k)) for _ in range(3)]
    return x, w


def check_self_attention(student_fn) -> None:
    """Exercise 2.1: Z = softmax(X W_Q (X W_K)^T / sqrt(d_k)) X W_V."""
    ex = "2.1"
    rng = np.random.default_rng(21)
    for n, d_model, d_k in ((4, 6, 3), (1, 2, 2), (5, 4, 8)):
        x, (w_q, w_k, w_v) = _example(rng, n, d_model, d_k)
        got = call_student(ex, student_fn, x, w_q, w_k, w_v)
        z, _ = scaled_dot_product_attention(*project_qkv(x, w_q, w_k, w_v))
        check_array(
            ex,
            got,
            z,
            what=f"Z for a sentence of {n} tokens (d_model={d_model}, d_k={d_k})",
            hint="Q = X @ W_Q (same for K, V); scores = Q @ K.T / sqrt(d_k); "
            "softmax along each row; Z = A @ V.",
        )
    passed(ex, "self-attention from X, W_Q, W_K, W_V")


def check_causal_mask(student_fn) -> None:
    """Exercise 2.2: a boolean (n, n) mask, True where query i may look at key j (j <= i)."""
    ex = "2.2"
    for n in (1, 3, 6):
        got = call_student(ex, student_fn, n)
        arr = np.asarray(got)
        if arr.dtype != bool:
            raise ExerciseError(
                ex,
                f"for n={n} the mask has dtype {arr.dtype}, expected bool.",
                "compare numbers to get booleans, e.g. `j <= i`, or use .astype(bool).",
            )
        check_value(ex, arr.shape, (n, n), what=f"shape of the mask for n={n}")
        if not np.array_equal(arr, causal_mask(n)):
            raise ExerciseError(
                ex,
                f"for n={n}:\n  expected\n{causal_mask(n).astype(int)}\n  got\n{arr.astype(int)}",
                "row i is the query; it may see keys 0..i (on and below the diagonal).",
            )
    passed(ex, "causal mask")


def check_masked_attention(student_fn) -> None:
    """Exercise 2.3: attention where mask == False gets weight exactly 0."""
    ex = "2.3"
    rng = np.random.default_rng(23)
    n, d = 5, 4
    q, k, v = (rng.normal(size=(n, d)) for _ in range(3))
    masks = {
        "a causal mask": causal_mask(n),
        "a padding mask hiding the last two keys": np.array([[True] * 3 + [False] * 2] * n),
    }
    for what, mask in masks.items():
        got = call_student(ex, student_fn, q, k, v, mask)
        if not (isinstance(got, tuple) and len(got) == 2):
            raise ExerciseError(
                ex, f"expected a tuple (Z, A), got {type(got).__name__}.", "end with `return Z, A`."
            )
        z_ref, a_ref = scaled_dot_product_attention(q, k, v, mask=mask)
        check_array(
            ex,
            got[1],
            a_ref,
            what=f"attention weights A with {what}",
            hint="set masked scores to -inf (np.where(mask, scores, -np.inf)) BEFORE the softmax.",
        )
        check_array(ex, got[0], z_ref, what=f"output Z with {what}", hint="Z = A @ V.")
    passed(ex, "masked attention")
