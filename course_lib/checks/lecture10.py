"""Checks for the exercises of lecture 10 (attention at scale: online softmax, chunked attention)."""

from __future__ import annotations

import numpy as np

from ..attention import scaled_dot_product_attention
from ..chunked_attention import attention_block_update, chunked_attention
from ..softmax import OnlineSoftmaxState, online_softmax_update
from . import (
    ExerciseError,
    call_student,
    call_student_traced,
    check_array,
    check_mistakes,
    check_prediction,
    hidden_rng,
    passed,
)

__all__ = [
    "check_online_update",
    "check_attention_block",
    "check_chunked_attention",
    "check_overflow_points",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "10.1": (
        "course_lib.softmax.online_softmax_update",
        "course_lib.softmax.online_softmax_step",
        "course_lib.softmax.online_softmax",
    ),
    "10.2": ("course_lib.chunked_attention.attention_block_update",),
    "10.3": (
        "course_lib.chunked_attention.chunked_attention",
        "course_lib.chunked_attention.chunked_attention_with_logsumexp",
        "course_lib.chunked_attention.attention_block_update",
    ),
    "10.4": (),
}


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
    _check_block_structure(ex, student_fn, seed)
    passed(ex, "chunked attention")


BLOCK_N, BLOCK_SIZE, BLOCK_D = 4096, 64, 2  # the size at which the block structure is measured


def _check_block_structure(ex: str, student_fn, seed: int) -> None:
    """The point of chunking: never hold n x n (or n x block_size) scores. The largest memory
    the answer holds at once is measured with tracemalloc (numpy reports its arrays to it) at
    n = 4096, block_size = 64, d = 2: the full scores would be 134 MB and one row of blocks
    (block_size x n, as query-only chunking holds) 2 MB, while block x block scores, the output
    and copies of the inputs stay well below the 1 MB allowed."""
    rng = np.random.default_rng((1031, seed))
    q, k, v = (rng.normal(size=(BLOCK_N, BLOCK_D)) for _ in range(3))
    with np.errstate(all="ignore"):
        got, peak = call_student_traced(ex, student_fn, q, k, v, BLOCK_SIZE)
    # the reference is the library's chunked attention (tested equal to the naive formula): the
    # naive one would build the 134 MB score matrix and take most of the check's time
    check_array(ex, got, chunked_attention(q, k, v, block_size=256),
                what=f"chunked attention with n_q = n_k = {BLOCK_N}, block_size = {BLOCK_SIZE}",
                hint="compare your function with the naive formula on a long sequence.")  # fmt: skip
    limit = BLOCK_N * BLOCK_SIZE * 8 // 2
    if peak > limit:
        full, row = BLOCK_N * BLOCK_N * 8, BLOCK_N * BLOCK_SIZE * 8
        what = ("the full n x n score matrix" if peak >= full / 2 else
                "a block_size x n strip of scores (all keys, or all queries, at once)")  # fmt: skip
        raise ExerciseError(
            ex,
            f"with n = {BLOCK_N} and block_size = {BLOCK_SIZE} your function held "
            f"{peak / 2**20:.1f} MB at once: about {what}. The full scores would be "
            f"{full / 2**20:.0f} MB, one strip {row / 2**20:.0f} MB, one block_size x block_size "
            f"block {BLOCK_SIZE**2 * 8 / 2**10:.0f} KB.",
            "loop over blocks of queries AND, inside, over blocks of keys, so that no more than "
            "one block_size x block_size block of scores exists at a time (that is what lets "
            "FlashAttention-style kernels run in fast on-chip memory).",
        )


_HIDDEN_DTYPES = ("float16",)


def _first_inf(dtype: str) -> int:
    with np.errstate(over="ignore"):
        return next(x for x in range(100_000) if np.isinf(np.exp(np.dtype(dtype).type(x))))


def check_overflow_points(student_fn, *, seed: int = 0) -> None:
    """Exercise 10.4 (predict, then measure): ``first_inf(dtype)``, the smallest integer x with
    ``np.exp(x) == inf`` in the float type named ``dtype``. Seed 0 asks for "float32" (89, since
    log(3.4e38) = 88.72) and "float64" (710); other seeds also for a type not in the exercise
    ("float16", 12). A wrong value is told "too low" or "too high" and why, never the value."""
    ex = "10.4"
    dtypes = ["float32", "float64"]
    if seed:
        dtypes.append(str(hidden_rng(seed, 104).choice(_HIDDEN_DTYPES)))
    for dtype in dtypes:
        got = call_student(ex, student_fn, dtype)
        want = _first_inf(dtype)
        hints = {
            _first_inf("float64"): "that is where float64 overflows; a smaller type overflows "
            "much earlier: compute exp in the type you are given, np.dtype(dtype).type(x).",
            _first_inf("float32"): "that is where float32 overflows: compute exp in the type "
            "you are given, np.dtype(dtype).type(x).",
        }
        hints.pop(want, None)
        check_prediction(
            ex, got, want,
            what=f"first_inf({dtype!r}), the smallest integer x with exp(x) = inf in {dtype}",
            too_low=f"exp of your x is still finite in {dtype} (below np.finfo(np.{dtype}).max): "
            "the first integer that overflows comes later.",
            too_high=f"a smaller integer already overflows in {dtype}: try np.exp on "
            f"np.{dtype}(x) for x = 0, 1, 2, … and stop at the first inf.",
            hints=hints,
        )  # fmt: skip
    passed(ex, "where exp overflows")
