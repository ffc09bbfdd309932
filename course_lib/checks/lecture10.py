"""Checks for the exercises of lecture 10 (attention at scale: online softmax, chunked attention)."""

from __future__ import annotations

import numpy as np

from ..attention import scaled_dot_product_attention
from ..chunked_attention import attention_block_update
from ..softmax import OnlineSoftmaxState, online_softmax_update
from . import ExerciseError, call_student, check_array, passed

__all__ = ["check_online_update", "check_attention_block", "check_chunked_attention"]


def _pair(ex: str, got, what: str, names: str) -> tuple:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise ExerciseError(
            ex,
            f"{what}: expected a pair {names}, got {type(got).__name__} {got!r:.200}.",
            f"end your function with `return {names.strip('()')}`.",
        )
    return tuple(got)


def check_online_update(student_update) -> None:
    """Exercise 10.1: fold one block of a row into the running maximum and running sum."""
    ex = "10.1"
    hint_rescale = (
        "the new maximum is m_new = max(m, max(block)); the old sum counted exp(x - m), so it "
        "must be multiplied by exp(m - m_new) before adding sum(exp(block - m_new))."
    )
    cases = [
        ("the first block [1, 2] (m = -inf, s = 0)", -np.inf, 0.0, [1.0, 2.0], hint_rescale),
        ("block [5, 0] raising the maximum from 2 (s = 1.5)", 2.0, 1.5, [5.0, 0.0], hint_rescale),
        ("block [-1, 0] below the maximum 3 (s = 2)", 3.0, 2.0, [-1.0, 0.0], hint_rescale),
        (
            "huge logits [1000, 999] after m = 998, s = 1",
            998.0,
            1.0,
            [1000.0, 999.0],
            "never exponentiate a raw logit: exp(1000) overflows. Only exp(x - m_new) <= 1 "
            "and exp(m - m_new) <= 1 appear.",
        ),
        (
            "block [-inf, 0.5] with a masked entry (m = 0, s = 1)",
            0.0,
            1.0,
            [-np.inf, 0.5],
            "a masked logit -inf contributes exp(-inf) = 0 to the sum.",
        ),
        (
            "a fully masked first block [-inf, -inf] (m = -inf, s = 0)",
            -np.inf,
            0.0,
            [-np.inf, -np.inf],
            "here m_new = -inf and exp(-inf - (-inf)) is nan. The state must stay m = -inf, "
            "s = 0: e.g. subtract 0 instead of m_new when m_new is -inf.",
        ),
    ]
    for what, m, s, block, hint in cases:
        expected = online_softmax_update(OnlineSoftmaxState(np.array(m), np.array(s)), block)
        with np.errstate(all="ignore"):
            got = call_student(ex, student_update, m, s, np.array(block))
        got_m, got_s = _pair(ex, got, f"update with {what}", "(m_new, s_new)")
        check_array(ex, got_m, expected.running_max, what=f"m_new for {what}", hint=hint)
        check_array(ex, got_s, expected.running_sum, what=f"s_new for {what}", hint=hint)
    # Streamed over a whole row, the state gives the log-sum-exp of the row.
    row = np.random.default_rng(10).normal(size=23) * 30
    m, s = -np.inf, 0.0
    with np.errstate(all="ignore"):
        for start in range(0, row.size, 5):
            m, s = _pair(
                ex,
                call_student(ex, student_update, m, s, row[start : start + 5]),
                "a row",
                "(m, s)",
            )
    expected_lse = np.max(row) + np.log(np.sum(np.exp(row - np.max(row))))
    check_array(
        ex,
        float(m) + np.log(float(s)),
        expected_lse,
        what="m + log(s) after streaming a row of 23 logits in blocks of 5",
        hint="after the last block, m + log(s) must be the log-sum-exp of the whole row.",
    )
    passed(ex, "online softmax update")


def _block_case(rng, b_q: int, b_k: int, d: int = 4, d_v: int = 3, scale: float = 1.0):
    q = rng.normal(size=(b_q, d)) * scale
    k = rng.normal(size=(b_k, d)) * scale
    v = rng.normal(size=(b_k, d_v))
    return q, k, v


def check_attention_block(student_block) -> None:
    """Exercise 10.2: one key block of chunked attention for a block of queries."""
    ex = "10.2"
    rng = np.random.default_rng(102)
    hint = (
        "scores = q_block @ k_block.T / sqrt(d_k); m_new = max(m, row max of scores); "
        "p = exp(scores - m_new[:, None]); s_new = exp(m - m_new) * s + p.sum(axis=1); "
        "acc_new = exp(m - m_new)[:, None] * acc + p @ v_block."
    )
    q, k, v = _block_case(rng, 3, 4)
    start = (np.full(3, -np.inf), np.zeros(3), np.zeros((3, 3)))
    q2, k2, v2 = _block_case(rng, 2, 5, scale=4.0)
    middle = (np.array([1.5, -0.5]), np.array([1.2, 2.0]), rng.normal(size=(2, 3)))
    cases = [
        ("the first key block (m = -inf, s = 0, acc = 0)", start, (q, k, v)),
        ("a later key block with scores above the running maximum", middle, (q2, k2, v2)),
        ("a single query and a single key", (np.full(1, -np.inf), np.zeros(1), np.zeros((1, 3))),
         _block_case(rng, 1, 1)),
    ]  # fmt: skip
    for what, (m, s, acc), (qb, kb, vb) in cases:
        state, expected_acc = attention_block_update(OnlineSoftmaxState(m, s), acc, qb, kb, vb)
        with np.errstate(all="ignore"):
            got = call_student(ex, student_block, m.copy(), s.copy(), acc.copy(), qb, kb, vb)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise ExerciseError(
                ex,
                f"expected a triple (m_new, s_new, acc_new), got {type(got).__name__}.",
                "end your function with `return m_new, s_new, acc_new`.",
            )
        check_array(ex, got[0], state.running_max, what=f"m_new for {what}", hint=hint)
        check_array(ex, got[1], state.running_sum, what=f"s_new for {what}", hint=hint)
        check_array(ex, got[2], expected_acc, what=f"acc_new for {what}", hint=hint)
    # Folding all key blocks and dividing by s gives exact attention.
    q, k, v = _block_case(rng, 4, 10, scale=2.0)
    m, s, acc = np.full(4, -np.inf), np.zeros(4), np.zeros((4, 3))
    with np.errstate(all="ignore"):
        for ks in range(0, 10, 4):
            m, s, acc = call_student(
                ex, student_block, m, s, acc, q, k[ks : ks + 4], v[ks : ks + 4]
            )
    check_array(
        ex,
        np.asarray(acc) / np.asarray(s)[:, None],
        scaled_dot_product_attention(q, k, v)[0],
        what="acc / s after folding 10 keys in blocks of 4, 4 and 2",
        hint="after the last block, acc / s[:, None] must equal softmax(q k^T / sqrt(d_k)) v.",
    )
    passed(ex, "one block of chunked attention")


def check_chunked_attention(student_fn) -> None:
    """Exercise 10.3: the two loops of chunked attention, compared with the naive formula."""
    ex = "10.3"
    rng = np.random.default_rng(103)
    cases = [(10, 10, 4), (9, 13, 5), (7, 7, 7), (6, 11, 100), (1, 1, 3)]
    for n_q, n_k, block_size in cases:
        q, _, _ = _block_case(rng, n_q, 1, scale=2.0)
        _, k, v = _block_case(rng, 1, n_k, scale=2.0)
        with np.errstate(all="ignore"):
            got = call_student(ex, student_fn, q, k, v, block_size)
        check_array(
            ex,
            got,
            scaled_dot_product_attention(q, k, v)[0],
            what=f"chunked attention with n_q = {n_q}, n_k = {n_k}, block_size = {block_size}",
            hint="loop over query blocks q[i:i + block_size]; for each, start m = -inf, s = 0, "
            "acc = 0, loop over key blocks with your attention_block, then divide acc by "
            "s[:, None]. Slicing past the end is fine in numpy: the last block is shorter.",
        )
    passed(ex, "chunked attention")
