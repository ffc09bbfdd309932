"""Checks for the exercises of lecture 09 (seeing attention: summarising what heads do)."""

from __future__ import annotations

import numpy as np

from ..head_patterns import attention_to_positions, offset_score, weighted_value_norms
from ..softmax import softmax
from . import (
    ExerciseError,
    call_on_batch,
    call_student,
    check_batched,
    check_mistakes,
    hidden_rng,
    passed,
)
from .given import mystery_attention

__all__ = [
    "check_previous_token_score",
    "check_special_token_share",
    "check_value_contributions",
    "check_head_roles",
    "mystery_attention",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "9.1": ("course_lib.head_patterns.offset_score",),
    "9.2": ("course_lib.head_patterns.attention_to_positions",),
    "9.3": ("course_lib.head_patterns.weighted_value_norms",),
    "9.4": (
        "course_lib.head_patterns.offset_score",
        "course_lib.head_patterns.attention_to_positions",
    ),
}

BATCH_HINT = (
    "keep the leading (layer, head) axes: index from the end (a[..., i, j], axis=-1, "
    "np.diagonal(a, offset, axis1=-2, axis2=-1)); np.diag and a[i, j] only work for one head."
)


def _attention(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random attention weights (rows sum to 1), peaked enough to tell positions apart."""
    return softmax(3.0 * rng.normal(size=shape), axis=-1)


def _call(ex: str, fn, *args, batched: bool):
    where = " (on a (layers, heads, n, n) input)"
    return call_on_batch(ex, fn, *args, batched=batched, batch_hint=BATCH_HINT, where=where)


def _check(ex, got, expected, batched, **kwargs):
    check_batched(ex, got, expected, batched=batched, batch_hint=BATCH_HINT, **kwargs)


def check_previous_token_score(student_fn, *, seed: int = 0) -> None:
    """Exercise 9.1: mean weight that query i puts on key i - 1, one number per head."""
    ex = "9.1"
    rng = np.random.default_rng((91, seed))
    # One head; all layers and heads of a small model; the shortest input with a previous token.
    for shape in ((5, 5), (2, 3, 6, 6), (2, 2)):
        a = _attention(rng, shape)
        n = shape[-1]
        sub = np.diagonal(a, offset=-1, axis1=-2, axis2=-1)
        mistakes = {
            "token i's previous token is key i - 1: a[..., i, i - 1], the diagonal BELOW the "
            "main one (offset=-1). You took the next token (i + 1).": offset_score(a, 1),
            "query 0 has no previous token: average over the n - 1 queries i = 1..n-1, not "
            "over all n.": sub.sum(axis=-1) / n,
            "the score is a MEAN over the queries, not a sum.": sub.sum(axis=-1),
            "do not wrap around: query 0 has no previous token (np.roll puts the last key "
            "there).": (sub.sum(axis=-1) + a[..., 0, n - 1]) / n,
        }
        _check(ex, _call(ex, student_fn, a, batched=len(shape) > 2), offset_score(a, -1),
               len(shape) > 2, what=f"previous-token score of attention with shape {shape}",
               hint="the pairs (i, i - 1) for i = 1..n-1 lie on the diagonal just below the main "
               "one: np.diagonal(a, offset=-1, axis1=-2, axis2=-1); average it over its last "
               "axis.", mistakes=mistakes)  # fmt: skip
    shift = np.eye(4, k=-1)
    shift[0, 0] = 1.0  # a perfect previous-token head (query 0 looks at itself)
    check_mistakes(ex, call_student(ex, student_fn, shift), 1.0,
                   what="score of a head that always looks one token back",
                   hint="average over the n - 1 queries that have a previous token, not over "
                   "all n.")  # fmt: skip
    passed(ex, "previous-token score")


def check_special_token_share(student_fn, *, seed: int = 0) -> None:
    """Exercise 9.2: mean share of attention on the first and last token ([CLS] and [SEP])."""
    ex = "9.2"
    rng = np.random.default_rng((92, seed))
    for shape in ((6, 6), (3, 4, 5, 5), (2, 2)):
        a = _attention(rng, shape)
        mistakes = {
            "add the weights on BOTH special keys: the first (a[..., 0]) and the last "
            "(a[..., -1]).": a[..., 0].mean(axis=-1),
            "columns are keys: take a[..., :, 0] and a[..., :, -1] (what every query gives "
            "them), not rows a[..., 0, :].": (a[..., 0, :] + a[..., -1, :]).mean(axis=-1),
            "average over the queries (the mean of the n per-query shares), not a sum.": (
                a[..., 0] + a[..., -1]
            ).sum(axis=-1),
        }
        _check(ex, _call(ex, student_fn, a, batched=len(shape) > 2),
               attention_to_positions(a, [0, -1]), len(shape) > 2,
               what=f"share of attention on [CLS] and [SEP] for shape {shape}",
               hint="for each query add the weights of key 0 and key -1 (a[..., 0] + a[..., -1]), "
               "then average over the queries (axis -1 of that result).",
               mistakes=mistakes)  # fmt: skip
    passed(ex, "share of attention on [CLS] and [SEP]")


def check_value_contributions(student_fn, *, seed: int = 0) -> None:
    """Exercise 9.3: ||alpha_ij v_j||, the size of key j's term in query i's output."""
    ex = "9.3"
    rng = np.random.default_rng((93, seed))
    for heads, n_q, n, d in ((None, 4, 4, 3), (2, 5, 5, 4), (3, 2, 6, 1), (None, 3, 5, 2)):
        lead = () if heads is None else (heads,)
        w = _attention(rng, (*lead, n_q, n))
        v = rng.normal(size=(*lead, n, d))
        v[..., 0, :] = 0.0  # a "sink" whose value vector is zero contributes nothing
        lengths = np.linalg.norm(v, axis=-1)
        mistakes = {
            "||alpha v|| = alpha ||v||: the LENGTH of each value vector, not its squared length.": w
            * (lengths**2)[..., None, :],
            "key j's value length multiplies COLUMN j of the weights (lengths[..., None, :]), "
            "not row j.": w * lengths[..., :, None] if n_q == n else None,
            "the length of a value vector is the norm over its features (axis=-1).": None,
        }
        _check(ex, _call(ex, student_fn, w, v, batched=heads is not None),
               weighted_value_norms(w, v), heads is not None,
               what=f"contributions for weights {w.shape} and values {v.shape}",
               hint="the length of each value vector is np.linalg.norm(values, axis=-1), shape "
               "(..., n_k); multiply every row of the weights by it: weights * lengths[..., None, :].",
               mistakes={k: m for k, m in mistakes.items() if m is not None})  # fmt: skip
    passed(ex, "value-weighted contributions")


def _head(ex: str, name: str, got) -> tuple[int, int]:
    """A pair of integers (not strings such as "11", not floats such as 1.9, not bools)."""

    def is_int(x) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))

    if isinstance(got, np.ndarray) and got.dtype.kind in "iu" and got.shape == (2,):
        got = tuple(got.tolist())
    if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(is_int(x) for x in got)):
        raise ExerciseError(ex, f"{name}: expected a pair of integers (layer, head), got "
                            f"{got!r:.60}.",
                            "e.g. (0, 2) for layer 0, head 2 (counting from 0): integers you "
                            "read off your scores, not strings or floats.")  # fmt: skip
    return int(got[0]), int(got[1])


def _not_it(ex: str, got: tuple, expected: tuple, what: str, hint: str) -> None:
    """A wrong head is named as wrong, with a hint, without giving the right one away."""
    if got != expected:
        raise ExerciseError(ex, f"{what}: {got} is not that head.", hint)


def _mystery_models(seed: int) -> list[np.ndarray]:
    """The notebook's model (seed 0), or hidden ones: other sizes, the jobs in other heads. In
    each hidden model the [CLS] head's query 1 is spread evenly, so that on query 1 (whose previous
    token IS [CLS]) the previous-token head puts more weight on key 0: only an average over the
    queries finds the [CLS] head, whatever the draw."""
    if seed == 0:
        return [mystery_attention()]
    rng = hidden_rng(seed, 94)
    models = [mystery_attention(int(rng.integers(1, 2**31)), layers, heads, n)
              for layers, heads, n in ((2, 3, 10), (3, 4, 12), (4, 2, 8))]  # fmt: skip
    for a in models:
        a[_pair(a, a[..., 0].mean(axis=-1)) + (1,)] = 1.0 / a.shape[-1]
    return models


def _pair(a: np.ndarray, score: np.ndarray) -> tuple[int, int]:
    return tuple(int(x) for x in np.unravel_index(score.argmax(), a.shape[:2]))


def check_head_roles(student_fn, *, seed: int = 0) -> None:
    """Exercise 9.4 (interpret): ``find_heads(att) -> (previous_head, cls_head)``: which head
    of a model's attention ``(layers, heads, n, n)`` is the previous-token head, and which parks
    its attention on [CLS] (key 0)? The grader's hidden models put the jobs in other heads."""
    ex = "9.4"
    for a in _mystery_models(seed):
        got = call_student(ex, student_fn, a.copy())
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise ExerciseError(ex, f"expected a pair (previous_head, cls_head), got {got!r:.80}.",
                                "return previous_head, cls_head: two (layer, head) pairs.")  # fmt: skip
        model = f"on a model of {a.shape[0]} layers x {a.shape[1]} heads"
        prev, cls = _pair(a, offset_score(a, -1)), _pair(a, a[..., 0].mean(axis=-1))
        hints = {
            _pair(a, offset_score(a, 1)): (
                "that head sends token i to token i + 1 (the NEXT token): check the offset "
                "(-1, below the diagonal) and that rows are queries."
            ),
            cls: "that head looks at [CLS]: from query 1 the previous token is [CLS], but for "
            "the other queries it is not; average over all queries 1..n-1.",
        }
        mine = _head(ex, "previous_head", got[0])
        _not_it(ex, mine, prev, f"previous-token head (layer, head) {model}",
                hints.get(mine, "compute your previous_token_score (9.1) on the whole array and "
                          "take the head with the highest score."))  # fmt: skip
        mine = _head(ex, "cls_head", got[1])
        sep = _pair(a, a[..., -1].mean(axis=-1))
        _not_it(ex, mine, cls, f"head that parks its attention on [CLS] {model}",
                "that head looks at the LAST token, [SEP]; [CLS] is key 0." if mine == sep
                else "average a[..., :, 0] (the weight every query puts on key 0) per head and "
                "take the largest.")  # fmt: skip
    passed(ex, "reading heads from their attention")
