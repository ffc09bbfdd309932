"""Additive (Bahdanau) attention in numpy, as on the board.

Before dot products, Bahdanau et al. (2015) scored how well the decoder state ``s`` (the
query) matches each encoder state ``h_j`` (the keys) with a one-hidden-layer network::

    e_j     = v · tanh(W_s s + W_h h_j)        (score)
    alpha_j = softmax_j(e_j)                   (attention weights over the source)
    c       = sum_j alpha_j h_j                (context vector: an expected value of h)

Queries and keys may have different widths; ``W_s`` and ``W_h`` bring both to a common
attention width ``d_att`` where they are added.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_bool_mask, as_finite_array
from .softmax import softmax

__all__ = ["additive_attention_scores", "additive_attention"]


def additive_attention_scores(
    query: ArrayLike, keys: ArrayLike, w_query: ArrayLike, w_key: ArrayLike, v: ArrayLike
) -> np.ndarray:
    """Scores ``e_j = v · tanh(W_s s + W_h h_j)``.

    Args:
        query: decoder state(s) ``s``: ``(..., d_q)``.
        keys: encoder states ``h``: ``(..., n_k, d_k)``.
        w_query: ``(d_q, d_att)``; ``w_key``: ``(d_k, d_att)``; ``v``: ``(d_att,)``.
            Row convention: ``s @ w_query`` (the board's ``W_s s`` with ``W_s = w_query.T``).

    Returns:
        ``(..., n_k)`` unnormalised scores, one per key.
    """
    s = as_finite_array(query, "query", min_ndim=1)
    h = as_finite_array(keys, "keys", min_ndim=2)
    wq = as_finite_array(w_query, "w_query", min_ndim=2)
    wk = as_finite_array(w_key, "w_key", min_ndim=2)
    v = as_finite_array(v, "v", min_ndim=1)
    if wq.ndim != 2 or wq.shape[0] != s.shape[-1]:
        raise ValueError(f"w_query must be (d_q={s.shape[-1]}, d_att), got shape {wq.shape}")
    if wk.ndim != 2 or wk.shape[0] != h.shape[-1]:
        raise ValueError(f"w_key must be (d_k={h.shape[-1]}, d_att), got shape {wk.shape}")
    if wk.shape[1] != wq.shape[1] or v.shape != (wq.shape[1],):
        raise ValueError(
            f"w_query {wq.shape}, w_key {wk.shape} and v {v.shape} must share d_att: "
            f"expected (d_q, d_att), (d_k, d_att) and (d_att,)"
        )
    hidden = np.tanh((s @ wq)[..., None, :] + h @ wk)  # (..., n_k, d_att)
    return hidden @ v


def additive_attention(
    query: ArrayLike,
    keys: ArrayLike,
    w_query: ArrayLike,
    w_key: ArrayLike,
    v: ArrayLike,
    mask: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Context vector and weights of additive attention (values = keys = encoder states).

    Args:
        query, keys, w_query, w_key, v: as in :func:`additive_attention_scores`.
        mask: optional boolean ``(..., n_k)``, True = may attend (padding is False).

    Returns:
        ``(context, weights)``: ``(..., d_k)`` and ``(..., n_k)`` (rows sum to 1).
    """
    scores = additive_attention_scores(query, keys, w_query, w_key, v)
    if mask is not None:
        m = as_bool_mask(mask, "mask")
        try:
            m = np.broadcast_to(m, scores.shape)
        except ValueError:
            raise ValueError(
                f"mask of shape {m.shape} does not fit the scores (..., n_k) = {scores.shape}"
            ) from None
        if not m.any(axis=-1).all():
            raise ValueError(
                "mask hides every key from some query; each needs at least one True (may attend)"
            )
        scores = np.where(m, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    keys = np.asarray(keys, dtype=weights.dtype)
    return (weights[..., None, :] @ keys)[..., 0, :], weights
