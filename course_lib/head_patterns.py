"""Summaries of what attention heads do: positional patterns, sinks, and value-weighted norms.

Looking at 72 heads one by one does not scale, so lecture 09 condenses each head into a few
numbers: how much it looks one token back or ahead (``offset_score``), how much it parks on
``[CLS]``/``[SEP]`` (``attention_to_positions``), and which tokens one query looks at most
(``top_attended``). ``weighted_value_norms`` is the caution: a large weight on a token whose
value vector is tiny moves almost nothing (Kobayashi et al., 2020, "Attention is not only a
weight").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_float_array, check_labels, check_positive_int

__all__ = ["attention_to_positions", "offset_score", "top_attended", "weighted_value_norms"]


def _square(attention, name: str = "attention") -> np.ndarray:
    a = as_float_array(attention, name, min_ndim=2)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"{name} must be self-attention (..., n, n), got shape {a.shape} "
            f"({a.shape[-2]} queries, {a.shape[-1]} keys)"
        )
    return a


def offset_score(attention: ArrayLike, offset: int) -> np.ndarray:
    """Mean weight that a query at ``i`` puts on the key at ``i + offset``.

    ``attention``: ``(..., n, n)`` weights (rows sum to 1). ``offset`` -1 measures a
    previous-token head, 0 a self head, +1 a next-token head. Averages over the ``n - |offset|``
    queries that have such a key; returns shape ``(...)`` (one number per layer/head).
    """
    a = _square(attention)
    n = a.shape[-1]
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"offset must be an integer, got {type(offset).__name__} {offset!r}")
    if abs(offset) >= n:
        raise ValueError(
            f"offset must be between -{n - 1} and {n - 1} for {n} tokens, got {offset}"
        )
    # The diagonal `offset` of the (n, n) matrix holds exactly the pairs (i, i + offset).
    return np.diagonal(a, offset=offset, axis1=-2, axis2=-1).mean(axis=-1)


def attention_to_positions(attention: ArrayLike, positions: Sequence[int]) -> np.ndarray:
    """Mean (over queries) total weight put on the keys at ``positions``; shape ``(...)``.

    ``attention``: ``(..., n_q, n_k)``. With ``positions=[0, n - 1]`` on a BERT input this is
    the share of attention that goes to ``[CLS]`` and ``[SEP]``. Negative positions count from
    the end, as in Python; repeated positions are counted once.
    """
    a = as_float_array(attention, "attention", min_ndim=2)
    n_k = a.shape[-1]
    if isinstance(positions, (int, np.integer)):
        positions = [positions]
    if isinstance(positions, str) or not isinstance(positions, (Sequence, np.ndarray)):
        raise TypeError(
            f"positions must be a list of key positions, got {type(positions).__name__}"
        )
    keys = set()
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise TypeError(f"positions must be integers, got {type(p).__name__} {p!r}")
        if not -n_k <= p < n_k:
            raise ValueError(f"position {p} is out of range for {n_k} keys")
        keys.add(int(p) % n_k)
    if not keys:
        raise ValueError("positions is empty; give at least one key position")
    return a[..., sorted(keys)].sum(axis=-1).mean(axis=-1)


def top_attended(weights: ArrayLike, tokens: Sequence[str], k: int = 3) -> list[tuple[str, float]]:
    """The ``k`` keys one query attends to most: ``[(token, weight), ...]``, largest first.

    ``weights``: ``(n_k,)``, one row of an attention matrix; ``tokens``: the ``n_k`` key
    tokens. Ties keep the earlier position first.
    """
    w = as_float_array(weights, "weights")
    if w.ndim != 1:
        raise ValueError(f"weights must be one row (n_k,), got shape {w.shape}")
    if np.isnan(w).any():
        raise ValueError(f"weights contains nan at {np.flatnonzero(np.isnan(w)).tolist()}; "
                         "a nan weight cannot be ranked")  # fmt: skip
    tokens = check_labels(tokens, "tokens", w.shape[0], "weights")
    k = min(check_positive_int(k, "k"), w.shape[0])
    order = np.argsort(-w, kind="stable")[:k]
    return [(tokens[i], float(w[i])) for i in order]


def weighted_value_norms(weights: ArrayLike, values: ArrayLike) -> np.ndarray:
    """``||weights[..., i, j] * values[..., j, :]||``: how far key j actually moves query i.

    ``weights``: ``(..., n_q, n_k)``; ``values``: ``(..., n_k, d_v)`` (same leading dims, or
    broadcastable). Returns ``(..., n_q, n_k)``. The output of a head is
    ``sum_j weights[i, j] * values[j]``, so this is the length of each term of that sum.
    """
    w = as_float_array(weights, "weights", min_ndim=2)
    v = as_float_array(values, "values", min_ndim=2)
    if w.shape[-1] != v.shape[-2]:
        raise ValueError(
            f"weights has {w.shape[-1]} keys (shape {w.shape}) but values has "
            f"{v.shape[-2]} rows (shape {v.shape}); expected values (..., {w.shape[-1]}, d_v)"
        )
    norms = np.linalg.norm(v, axis=-1)  # (..., n_k): the length of each value vector
    return w * norms[..., None, :]
