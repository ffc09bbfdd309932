"""Checks for the exercises of lecture 03 (multi-head attention)."""

from __future__ import annotations

import numpy as np

from ..multihead import merge_heads, multi_head_attention, split_heads
from . import call_student, check_array, check_count, passed

__all__ = [
    "check_split_heads",
    "check_merge_heads",
    "check_multi_head_self_attention",
    "check_mha_parameter_count",
]


def check_split_heads(student_fn) -> None:
    """Exercise 3.1: (..., n, d_model) -> (..., heads, n, d_head)."""
    ex = "3.1"
    rng = np.random.default_rng(31)
    cases = [
        ((4, 6), 2, "one sentence of 4 tokens, d_model=6, 2 heads"),
        ((2, 3, 8), 4, "a batch of 2 sentences, d_model=8, 4 heads"),
        ((3, 5), 1, "one head (nothing to split)"),
        ((1, 6), 6, "6 heads of width 1"),
    ]
    for shape, h, what in cases:
        x = rng.normal(size=shape)
        got = call_student(ex, student_fn, x.copy(), h)
        check_array(
            ex,
            got,
            split_heads(x, h),
            what=f"split_heads for {what} (x shape {shape})",
            hint="reshape to (..., n, heads, d_head), then swap the n and heads axes "
            "(np.swapaxes(y, -3, -2)). Reshaping straight to (..., heads, n, d_head) mixes "
            "up the tokens.",
        )
    passed(ex, "split into heads")


def check_merge_heads(student_fn) -> None:
    """Exercise 3.2: (..., heads, n, d_head) -> (..., n, heads * d_head), the inverse of 3.1."""
    ex = "3.2"
    rng = np.random.default_rng(32)
    for shape in ((2, 4, 3), (2, 3, 5, 2), (1, 1, 4)):
        x = rng.normal(size=shape)
        got = call_student(ex, student_fn, x.copy())
        check_array(
            ex,
            got,
            merge_heads(x),
            what=f"merge_heads of an array of shape {shape} (..., heads, n, d_head)",
            hint="swap the heads and n axes back (np.swapaxes(x, -3, -2)), then reshape the last "
            "two axes into one of size heads * d_head.",
        )
    y = rng.normal(size=(2, 5, 6))
    got = call_student(ex, student_fn, split_heads(y, 3))
    check_array(ex, got, y, what="merge_heads(split_heads(y, 3)) should give y back",
                hint="merge_heads must undo split_heads exactly.")  # fmt: skip
    passed(ex, "merge the heads")


def check_multi_head_self_attention(student_fn) -> None:
    """Exercise 3.3: Concat(head_1..head_h) W_O for self-attention, returning the output."""
    ex = "3.3"
    rng = np.random.default_rng(33)
    for n, d_model, h in ((4, 6, 2), (5, 8, 4), (3, 4, 1), (1, 6, 3)):
        x = rng.normal(size=(n, d_model))
        ws = [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
        got = call_student(ex, student_fn, x.copy(), *ws, h)
        expected, _ = multi_head_attention(x, x, *ws, num_heads=h)
        check_array(
            ex,
            got,
            expected,
            what=f"multi-head self-attention, n={n}, d_model={d_model}, {h} head(s)",
            hint="project with the full matrices, split Q, K, V into heads, run attention per "
            "head with scores divided by sqrt(d_head) (not sqrt(d_model)), merge, then @ W_O.",
        )
    passed(ex, "multi-head self-attention")


def check_mha_parameter_count(student_fn) -> None:
    """Exercise 3.4: parameters of multi-head attention with/without biases."""
    ex = "3.4"
    for d_model, h, bias in ((512, 8, True), (512, 1, True), (64, 4, False), (1, 1, True)):
        got = call_student(ex, student_fn, d_model, h, bias)
        expected = 4 * d_model * d_model + (4 * d_model if bias else 0)
        check_count(
            ex,
            got,
            expected,
            what=f"parameter count for d_model={d_model}, num_heads={h}, bias={bias}",
            hint="W_Q, W_K, W_V and W_O are each d_model x d_model whatever the number of "
            "heads; with bias=True each map also has a bias vector of length d_model.",
        )
    passed(ex, "parameter count of multi-head attention")
