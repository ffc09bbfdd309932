"""Checks for the exercises of lecture 09 (seeing attention: summarising what heads do)."""

from __future__ import annotations

import numpy as np

from ..head_patterns import attention_to_positions, offset_score, weighted_value_norms
from ..softmax import softmax
from . import call_student, check_array, passed

__all__ = ["check_previous_token_score", "check_special_token_share", "check_value_contributions"]


def _attention(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random attention weights (rows sum to 1), peaked enough to tell positions apart."""
    return softmax(3.0 * rng.normal(size=shape), axis=-1)


def check_previous_token_score(student_fn) -> None:
    """Exercise 9.1: mean weight that query i puts on key i - 1, one number per head."""
    ex = "9.1"
    rng = np.random.default_rng(91)
    # One head; all layers and heads of a small model; the shortest input with a previous token.
    for shape in ((5, 5), (2, 3, 6, 6), (2, 2)):
        a = _attention(rng, shape)
        check_array(
            ex,
            call_student(ex, student_fn, a),
            offset_score(a, -1),
            what=f"previous-token score of attention with shape {shape}",
            hint="the pairs (i, i - 1) for i = 1..n-1 lie on the diagonal just below the main "
            "one: np.diagonal(a, offset=-1, axis1=-2, axis2=-1); average it over its last axis "
            "(query 0 has no previous token, so it does not count).",
        )
    shift = np.eye(4, k=-1)
    shift[0, 0] = 1.0  # a perfect previous-token head (query 0 looks at itself)
    check_array(
        ex,
        call_student(ex, student_fn, shift),
        1.0,
        what="score of a head that always looks one token back",
        hint="average over the n - 1 queries that have a previous token, not over all n.",
    )
    passed(ex, "previous-token score")


def check_special_token_share(student_fn) -> None:
    """Exercise 9.2: mean share of attention on the first and last token ([CLS] and [SEP])."""
    ex = "9.2"
    rng = np.random.default_rng(92)
    for shape in ((6, 6), (3, 4, 5, 5), (2, 2)):
        a = _attention(rng, shape)
        check_array(
            ex,
            call_student(ex, student_fn, a),
            attention_to_positions(a, [0, -1]),
            what=f"share of attention on [CLS] and [SEP] for shape {shape}",
            hint="for each query add the weights of key 0 and key -1 (a[..., 0] + a[..., -1]), "
            "then average over the queries (axis -1 of that result).",
        )
    passed(ex, "share of attention on [CLS] and [SEP]")


def check_value_contributions(student_fn) -> None:
    """Exercise 9.3: ||alpha_ij v_j||, the size of key j's term in query i's output."""
    ex = "9.3"
    rng = np.random.default_rng(93)
    for heads, n, d in ((None, 4, 3), (2, 5, 4), (3, 3, 1)):
        lead = () if heads is None else (heads,)
        w = _attention(rng, (*lead, n, n))
        v = rng.normal(size=(*lead, n, d))
        v[..., 0, :] = 0.0  # a "sink" whose value vector is zero contributes nothing
        check_array(
            ex,
            call_student(ex, student_fn, w, v),
            weighted_value_norms(w, v),
            what=f"contributions for weights {w.shape} and values {v.shape}",
            hint="the length of each value vector is np.linalg.norm(values, axis=-1), shape "
            "(..., n_k); multiply every row of the weights by it: weights * lengths[..., None, :].",
        )
    passed(ex, "value-weighted contributions")
