"""Checks for the exercises of lecture 03 (multi-head attention)."""

from __future__ import annotations

import numpy as np

from ..attention import scaled_dot_product_attention
from ..multihead import merge_heads, multi_head_attention, split_heads
from . import (
    ExerciseError,
    call_on_batch,
    call_student,
    check_batched,
    check_count,
    check_mistakes,
    hidden_rng,
    passed,
    tokens_around_x0,
)

__all__ = [
    "check_split_heads",
    "check_merge_heads",
    "check_multi_head_self_attention",
    "check_mha_parameter_count",
    "check_two_relations",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "3.1": ("course_lib.multihead.split_heads",),
    "3.2": ("course_lib.multihead.merge_heads",),
    "3.3": (
        "course_lib.multihead.multi_head_attention",
        "course_lib.nn.attention.MultiHeadAttention",
    ),
    "3.4": ("course_lib.grouped_query.attention_parameter_count",),
    "3.5": (),
}


BATCH_HINT = (
    "keep every leading axis: write the shapes as (*lead, n, d_model) = x.shape and swap axes "
    "counted from the end (-3, -2), not fixed ones like (1, 0, 2)."
)


def _check_batched(ex: str, got, expected, *, batched: bool, **kwargs) -> None:
    check_batched(ex, got, expected, batched=batched, batch_hint=BATCH_HINT, **kwargs)


def _call_on_batch(ex: str, fn, *args, batched: bool):
    where = " (on an input with a leading batch axis)"
    return call_on_batch(ex, fn, *args, batched=batched, batch_hint=BATCH_HINT, where=where)


def check_split_heads(student_fn, *, seed: int = 0) -> None:
    """Exercise 3.1: (..., n, d_model) -> (..., heads, n, d_head)."""
    ex = "3.1"
    rng = np.random.default_rng((31, seed))
    cases = [
        ((4, 6), 2, "one sentence of 4 tokens, d_model=6, 2 heads"),
        ((3, 5), 1, "one head (nothing to split)"),
        ((1, 6), 6, "6 heads of width 1"),
        ((2, 3, 8), 4, "a batch of 2 sentences, d_model=8, 4 heads"),
        ((2, 2, 5, 6), 3, "a (2, 2) batch of sentences, d_model=6, 3 heads"),
    ]
    for shape, h, what in cases:
        x = rng.normal(size=shape)
        got = _call_on_batch(ex, student_fn, x.copy(), h, batched=len(shape) > 2)
        *lead, n, d = shape
        mistakes = {
            "reshaping straight to (..., heads, n, d_head) mixes up the tokens: reshape to "
            "(..., n, heads, d_head) first, then swap the n and heads axes.": x.reshape(
                *lead, h, n, d // h
            ),
            "head i gets the CONTIGUOUS features i*d_head .. (i+1)*d_head - 1; reshaping to "
            "(..., n, d_head, heads) deals the features out like cards.": np.moveaxis(
                x.reshape(*lead, n, d // h, h), -1, -3
            ),
        }
        _check_batched(
            ex,
            got,
            split_heads(x, h),
            batched=len(shape) > 2,
            what=f"split_heads for {what} (x shape {shape})",
            hint="reshape to (..., n, heads, d_head), then swap the n and heads axes "
            "(np.swapaxes(y, -3, -2)).",
            mistakes=mistakes,
        )
    passed(ex, "split into heads")


def check_merge_heads(student_fn, *, seed: int = 0) -> None:
    """Exercise 3.2: (..., heads, n, d_head) -> (..., n, heads * d_head), the inverse of 3.1."""
    ex = "3.2"
    rng = np.random.default_rng((32, seed))
    for shape in ((2, 4, 3), (1, 1, 4), (3, 5, 2), (2, 3, 5, 2)):
        x = rng.normal(size=shape)
        got = _call_on_batch(ex, student_fn, x.copy(), batched=len(shape) > 3)
        *lead, h, n, dh = shape
        mistakes = {
            "a plain reshape to (..., n, heads * d_head) mixes tokens and heads: swap the heads "
            "and n axes back first (np.swapaxes(x, -3, -2)), then reshape.": x.reshape(
                *lead, n, h * dh
            ),
            "the features of head 0 come first, then head 1's: swap (heads, n), not move the "
            "heads axis to the end.": np.moveaxis(x, -3, -1).reshape(*lead, n, h * dh),
        }
        _check_batched(
            ex,
            got,
            merge_heads(x),
            batched=len(shape) > 3,
            what=f"merge_heads of an array of shape {shape} (..., heads, n, d_head)",
            hint="swap the heads and n axes back (np.swapaxes(x, -3, -2)), then reshape the last "
            "two axes into one of size heads * d_head.",
            mistakes=mistakes,
        )
    y = rng.normal(size=(2, 5, 6))
    got = call_student(ex, student_fn, split_heads(y, 3))
    check_mistakes(ex, got, y, what="merge_heads(split_heads(y, 3)) should give y back",
                   hint="merge_heads must undo split_heads exactly.")  # fmt: skip
    passed(ex, "merge the heads")


def _mha_mistakes(x, ws, h) -> dict:
    w_q, w_k, w_v, w_o = ws
    n, d = x.shape
    q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
    s = q @ np.swapaxes(k, -1, -2)

    def attend(scores):
        e = np.exp(scores - scores.max(-1, keepdims=True))
        return merge_heads((e / e.sum(-1, keepdims=True)) @ v)

    return {
        "inside each head scale by sqrt(d_head) = sqrt(d_model / heads), not sqrt(d_model).": (
            attend(s / np.sqrt(d)) @ w_o
        ),
        "after Concat comes the output projection: multiply the merged heads by W_O.": attend(
            s / np.sqrt(d // h)
        ),
        "use num_heads: split Q, K and V into heads before attention (one softmax per head).": (
            scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)[0] @ w_o
        ),
    }


def check_multi_head_self_attention(student_fn, *, seed: int = 0) -> None:
    """Exercise 3.3: Concat(head_1..head_h) W_O for self-attention, returning the output."""
    ex = "3.3"
    rng = np.random.default_rng((33, seed))
    for n, d_model, h in ((4, 6, 2), (5, 8, 4), (3, 4, 1), (1, 6, 3), (6, 12, 3)):
        x = rng.normal(size=(n, d_model))
        ws = [rng.normal(size=(d_model, d_model)) for _ in range(4)]
        got = call_student(ex, student_fn, x.copy(), *ws, h)
        expected, _ = multi_head_attention(x, x, *ws, num_heads=h)
        check_mistakes(
            ex,
            got,
            expected,
            what=f"multi-head self-attention, n={n}, d_model={d_model}, {h} head(s)",
            hint="project with the full matrices, split Q, K, V into heads, run attention per "
            "head with scores divided by sqrt(d_head), merge, then @ W_O.",
            mistakes=_mha_mistakes(x, ws, h),
        )
    passed(ex, "multi-head self-attention")


def mha_parameters(d_model: int, num_heads: int, d_head: int, bias: bool) -> int:
    """Parameters of multi-head attention whose heads have width ``d_head`` (any value)."""
    inner = num_heads * d_head
    return 4 * d_model * inner + ((3 * inner + d_model) if bias else 0)


def check_mha_parameter_count(student_fn, *, seed: int = 0) -> None:
    """Exercise 3.4: parameters of multi-head attention with a free head width d_head (fixed
    sizes, and hidden ones for seed > 0)."""
    ex = "3.4"
    cases = ((512, 8, 64, True), (512, 8, 32, True), (64, 4, 8, False), (6, 3, 5, True),
             (768, 12, 64, False), (1, 1, 1, True))  # fmt: skip
    if seed:
        rng = hidden_rng(seed, 34)
        cases = tuple((int(rng.integers(2, 900)), int(rng.integers(1, 17)),
                       int(rng.integers(1, 129)), bool(b)) for b in (True, False, True))  # fmt: skip
    for d_model, h, d_head, bias in cases:
        got = call_student(ex, student_fn, d_model, h, d_head, bias)
        inner = h * d_head
        hints = {
            4 * d_model * d_model + (4 * d_model if bias else 0): "that is the count for "
            "d_head = d_model / heads (the lecture's case). Here W_Q, W_K, W_V are "
            "d_model x (heads * d_head) and W_O is (heads * d_head) x d_model.",
            4 * d_model * inner + (4 * inner if bias else 0): "W_O maps back to d_model, so its "
            "bias has d_model entries, not heads * d_head.",
            3 * d_model * inner + (3 * inner if bias else 0): "do not forget the output "
            "projection W_O (and its bias).",
            4 * d_model * inner: "with bias=True each of the four maps also has a bias vector.",
        }
        expected = mha_parameters(d_model, h, d_head, bias)
        hint = hints.get(int(got), None) if isinstance(got, (int, np.integer)) else None
        check_count(
            ex,
            got,
            expected,
            what=f"parameters for d_model={d_model}, num_heads={h}, d_head={d_head}, bias={bias}",
            hint=hint
            or "W_Q, W_K, W_V: d_model x (heads * d_head) each, plus a bias of "
            "heads * d_head if bias; W_O: (heads * d_head) x d_model, plus a bias of d_model.",
        )
    passed(ex, "parameter count of multi-head attention")


def _relations_cases(seed: int) -> list[tuple[np.ndarray, float]]:
    """(token 0, share): the notebook's (seed 0) or hidden ones (each half of x0 with its own
    length and direction, larger shares). The last hidden case always has both halves short
    (< 0.3) and share 0.999: no fixed factor of 100 or less passes it, whatever the draw."""
    if seed == 0:
        return [(np.array([1.0, 0.0, 1.0, 0.0]), 0.8), (np.array([0.0, 2.0, 0.5, 0.5]), 0.9)]
    rng = hidden_rng(seed, 35)
    cases = []
    for share, shortest, longest in ((0.8, 0.3, 3.0), (0.95, 0.3, 3.0), (0.999, 0.2, 0.3)):
        halves = []
        for _ in range(2):
            angle, length = rng.uniform(0, 2 * np.pi), rng.uniform(shortest, longest)
            halves += [length * np.cos(angle), length * np.sin(angle)]
        cases.append((np.array(halves), share))
    return cases


def check_two_relations(student_fn, *, seed: int = 0) -> None:
    """Exercise 3.5 (construct): ``two_relations(x0, share) -> X`` (3, 4) with ``X[0] = x0``, on
    which token 0 puts more than ``share`` of head 0's weight on token 1 and more than ``share``
    of head 1's weight on token 2.

    d_model = 4, two heads, W_Q = W_K = W_V = W_O = I: head 0 compares features 0-1, head 1
    features 2-3. Every such X is accepted; the grader varies x0 and the share.
    """
    ex = "3.5"
    for x0, share in _relations_cases(seed):
        arr, given = tokens_around_x0(ex, student_fn, x0, share, (3, 4), "3 tokens, d_model = 4")
        heads = split_heads(arr, 2)  # (2, 3, 2)
        _, a = scaled_dot_product_attention(heads, heads, heads)  # (2 heads, 3, 3)
        if a[0, 0, 1] > share and a[1, 0, 2] > share:
            continue
        if a[0, 0, 1] > share:
            hint = (
                "head 0 works. Head 1 only sees features 2 and 3 (d_head = 2): token 2 must win "
                "there, in the direction of token 0's features 2-3."
            )
        elif a[1, 0, 2] > share:
            hint = (
                "head 1 works. Head 0 only sees features 0 and 1: token 1 must win there, in the "
                "direction of token 0's features 0-1."
            )
        else:
            hint = (
                "head 0 compares features 0-1 only and head 1 features 2-3 only. In each slice, "
                "the key that wins for token 0 must point the same way as token 0's slice, and "
                "be long enough for this x0 and share (work it out from them)."
            )
        got_w = np.round(a[:, 0], 3)
        raise ExerciseError(
            ex,
            f"{given}, token 0's weights on tokens (0, 1, 2):\n  expected head 0 > {share} on "
            f"token 1 and head 1 > {share} on token 2\n  got      head 0 {got_w[0]}, head 1 "
            f"{got_w[1]}",
            hint,
        )
    passed(ex, "two heads, two relations")
