"""Checks for the exercises of lecture 10 (attention at scale: online softmax, chunked attention)."""

from __future__ import annotations

import numpy as np

from ..attention import scaled_dot_product_attention
from ..chunked_attention import attention_block_update
from ..softmax import OnlineSoftmaxState, online_softmax_update
from . import ExerciseError, call_student, check_array, check_mistakes, check_value, passed

__all__ = [
    "check_online_update",
    "check_attention_block",
    "check_chunked_attention",
    "check_overflow_points",
]


def _update_mistakes(m: float, s: float, block) -> dict:
    """(m_new, s_new) of the usual wrong online updates, keyed by the hint naming each."""
    block = np.asarray(block, dtype=float)
    with np.errstate(all="ignore"):
        m_new = max(m, float(np.max(block)))
        return {
            "when the maximum grows, the old sum was counted against the OLD maximum: multiply "
            "it by exp(m - m_new) before adding the block.": (
                m_new,
                s + np.sum(np.exp(block - m_new)),
            ),
            "m_new is the maximum of everything seen so far, max(m, max(block)), not only of "
            "this block.": (
                float(np.max(block)),
                s * np.exp(m - np.max(block)) + np.sum(np.exp(block - np.max(block))),
            ),
        }


def _pair(ex: str, got, what: str, names: str) -> tuple:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise ExerciseError(
            ex,
            f"{what}: expected a pair {names}, got {type(got).__name__} {got!r:.200}.",
            f"end your function with `return {names.strip('()')}`.",
        )
    return tuple(got)


def check_online_update(student_update, *, seed: int = 0) -> None:
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
        mistakes = _update_mistakes(m, s, block)
        check_mistakes(ex, got_m, expected.running_max, what=f"m_new for {what}", hint=hint,
                       mistakes={h: v[0] for h, v in mistakes.items()})  # fmt: skip
        check_mistakes(ex, got_s, expected.running_sum, what=f"s_new for {what}", hint=hint,
                       mistakes={h: v[1] for h, v in mistakes.items()})  # fmt: skip
    # Streamed over a whole row, the state gives the log-sum-exp of the row.
    row = np.random.default_rng((10, seed)).normal(size=23) * 30
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


def _block_mistakes(m, s, acc, qb, kb, vb) -> dict:
    """(m_new, s_new, acc_new) of the usual wrong block updates, keyed by their hint."""
    with np.errstate(all="ignore"):

        def fold(scores, rescale_acc=True, rescale_s=True):
            m_new = np.maximum(m, scores.max(axis=1))
            r = np.exp(m - m_new)
            p = np.exp(scores - m_new[:, None])
            s_new = (r if rescale_s else 1.0) * s + p.sum(axis=1)
            acc_new = (r[:, None] if rescale_acc else 1.0) * acc + p @ vb
            return m_new, s_new, acc_new

        raw = qb @ kb.T
        d = qb.shape[1]
        return {
            "acc was accumulated against the old maximum too: multiply it by exp(m - m_new) "
            "(per row, [:, None]) like s.": fold(raw / np.sqrt(d), rescale_acc=False),
            "rescale BOTH s and acc by exp(m - m_new) when the maximum grows.": fold(
                raw / np.sqrt(d), rescale_acc=False, rescale_s=False
            ),
            "scale the scores by sqrt(d_k) (q_block.shape[1]), not by d_k.": fold(raw / d),
            "the scores are divided by sqrt(d_k), d_k = q_block.shape[1] (the feature size), "
            "not the number of keys in the block.": fold(raw / np.sqrt(kb.shape[0])),
            "scale the scores: q_block @ k_block.T / sqrt(d_k).": fold(raw),
        }


def check_attention_block(student_block, *, seed: int = 0) -> None:
    """Exercise 10.2: one key block of chunked attention for a block of queries."""
    ex = "10.2"
    rng = np.random.default_rng((102, seed))
    hint = (
        "scores = q_block @ k_block.T / sqrt(d_k); m_new = max(m, row max of scores); "
        "p = exp(scores - m_new[:, None]); s_new = exp(m - m_new) * s + p.sum(axis=1); "
        "acc_new = exp(m - m_new)[:, None] * acc + p @ v_block."
    )
    q, k, v = _block_case(rng, 3, 4, d=5)
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
        mistakes = _block_mistakes(m, s, acc, qb, kb, vb)
        for k, (name, want) in enumerate(
            (("m_new", state.running_max), ("s_new", state.running_sum), ("acc_new", expected_acc))
        ):
            check_mistakes(ex, got[k], want, what=f"{name} for {what}", hint=hint,
                           mistakes={h: v[k] for h, v in mistakes.items()})  # fmt: skip
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


def check_chunked_attention(student_fn, *, seed: int = 0) -> None:
    """Exercise 10.3: the two loops of chunked attention, compared with the naive formula."""
    ex = "10.3"
    rng = np.random.default_rng((103, seed))
    cases = [(8, 8, 4), (10, 10, 4), (9, 13, 5), (7, 7, 7), (6, 11, 100), (1, 1, 3)]
    for n_q, n_k, block_size in cases:
        q, _, _ = _block_case(rng, n_q, 1, scale=2.0)
        _, k, v = _block_case(rng, 1, n_k, scale=2.0)
        shape_hint = (
            "the output has one row per query and d_v = v.shape[1] columns; "
            "np.empty_like(q) only works when d_v == d_k."
        )
        try:
            with np.errstate(all="ignore"):
                got = call_student(ex, student_fn, q, k, v, block_size)
        except ExerciseError as err:
            if "broadcast" in err.message and q.shape[1] != v.shape[1]:
                raise ExerciseError(ex, err.message, shape_hint) from None
            raise
        if np.shape(got) == (n_q, q.shape[1]) != (n_q, v.shape[1]):
            raise ExerciseError(
                ex,
                f"expected an output of shape ({n_q}, {v.shape[1]}), got {np.shape(got)}.",
                shape_hint,
            )
        cut = n_k - n_k % block_size
        mistakes = {}
        if 0 < cut < n_k:
            mistakes["the last key block is shorter when block_size does not divide n_k: loop "
                     "with range(0, n_k, block_size) and slice k[ks:ks + block_size] (numpy "
                     "stops at the end)."] = scaled_dot_product_attention(q, k[:cut], v[:cut])[0]  # fmt: skip
        check_mistakes(
            ex,
            got,
            scaled_dot_product_attention(q, k, v)[0],
            mistakes=mistakes,
            what=f"chunked attention with n_q = {n_q}, n_k = {n_k}, block_size = {block_size}",
            hint="loop over query blocks q[i:i + block_size]; for each, start m = -inf, s = 0, "
            "acc = 0, loop over key blocks with your attention_block, then divide acc by "
            "s[:, None]. Slicing past the end is fine in numpy: the last block is shorter.",
        )
    passed(ex, "chunked attention")


def check_overflow_points(first_inf_float32, first_inf_float64) -> None:
    """Exercise 10.4 (predict, then measure): the smallest integer x with exp(x) = inf, in
    float32 (89, since log(3.4e38) = 88.72) and in float64 (710, log(1.8e308) = 709.78)."""
    ex = "10.4"
    hints = {
        88: "exp(88) = 1.65e38 is still below the float32 maximum 3.4e38; the next integer "
        "overflows.",
        709: "exp(709) = 8.2e307 is still below the float64 maximum 1.8e308; the next integer "
        "overflows.",
        710: "710 is the float64 answer; float32 overflows much earlier (its maximum is 3.4e38).",
        89: "89 is the float32 answer; float64 goes much further (its maximum is 1.8e308).",
        12: "that is float16 (maximum 65504); the question asks for float32.",
    }
    for name, got, want in (
        ("float32", first_inf_float32, 89),
        ("float64", first_inf_float64, 710),
    ):
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            raise ExerciseError(ex, f"first_inf_{name}: expected an int, got {got!r:.60}.",
                                "the smallest INTEGER x with np.exp(np.{name}(x)) == inf.")  # fmt: skip
        check_value(ex, int(got), want, what=f"smallest integer x with exp(x) = inf in {name}",
                    hint=hints.get(int(got), f"try np.exp(np.{name}(x)) for growing integers x; "
                                   f"or predict it: log of np.finfo(np.{name}).max."))  # fmt: skip
    passed(ex, "where exp overflows")
