"""Multi-head attention in numpy, written the way the notes write it.

    head_i    = Attention(X_q W_Q^i, X_kv W_K^i, X_kv W_V^i)
    MultiHead = Concat(head_1, ..., head_h) W_O

One big projection ``X W_Q`` with ``W_Q`` of shape ``(d_model, h * d_head)`` computes all h
per-head projections at once: its columns ``[i*d_head:(i+1)*d_head]`` are ``W_Q^i``. So
"splitting into heads" is only a reshape of the projected features, and "Concat" is the
reverse reshape. Row convention (one token per row), as in :mod:`course_lib.attention`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_bool_mask, as_float_array, check_positive_int
from .attention import linear, scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "multi_head_attention"]


def split_heads(x: ArrayLike, num_heads: int) -> np.ndarray:
    """Split the feature axis into heads: ``(..., n, d_model)`` -> ``(..., heads, n, d_head)``.

    ``d_head = d_model // num_heads``; head i gets features ``[i*d_head:(i+1)*d_head]``.

    Raises:
        ValueError: ``d_model`` is not divisible by ``num_heads``, or ``x`` has fewer than 2 axes.
    """
    x = as_float_array(x, "x", min_ndim=2)
    num_heads = check_positive_int(num_heads, "num_heads")
    *lead, n, d_model = x.shape
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} (last axis of x, shape {x.shape}) is not divisible by "
            f"num_heads={num_heads}; each head needs d_model / num_heads features"
        )
    d_head = d_model // num_heads
    # (..., n, heads, d_head) then move the head axis in front of the positions.
    return np.swapaxes(x.reshape(*lead, n, num_heads, d_head), -3, -2)


def merge_heads(x: ArrayLike) -> np.ndarray:
    """Concatenate the heads again: ``(..., heads, n, d_head)`` -> ``(..., n, heads * d_head)``.

    The inverse of :func:`split_heads`: ``merge_heads(split_heads(x, h))`` equals ``x``.
    """
    x = as_float_array(x, "x", min_ndim=3)
    *lead, h, n, d_head = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, n, h * d_head)


def multi_head_attention(
    x_q: ArrayLike,
    x_kv: ArrayLike,
    w_q: ArrayLike,
    w_k: ArrayLike,
    w_v: ArrayLike,
    w_o: ArrayLike,
    num_heads: int,
    mask: ArrayLike | None = None,
    b_q: ArrayLike | None = None,
    b_k: ArrayLike | None = None,
    b_v: ArrayLike | None = None,
    b_o: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``Concat(head_1, ..., head_h) W_O`` with ``head_i = Attention(X_q W_Q^i, X_kv W_K^i, X_kv W_V^i)``.

    Args:
        x_q: the sequence that asks, ``(..., n_q, d_model)``.
        x_kv: the sequence that is looked at, ``(..., n_k, d_model)``; pass ``x_q`` again for
            self-attention.
        w_q, w_k: ``(d_model, h * d_k)``; w_v: ``(d_model, h * d_v)``; w_o: ``(h * d_v, d_out)``.
            Usually all are ``(d_model, d_model)`` with ``d_k = d_v = d_model / h``.
        num_heads: h.
        mask: optional boolean, True = may attend. Shape ``(..., n_q, n_k)`` (broadcastable,
            e.g. :func:`causal_mask` or :func:`padding_mask`) is used for every head; a mask
            with one more axis than ``x_q``, ``(..., heads, n_q, n_k)``, is used as it is.
        b_q, b_k, b_v, b_o: optional biases, shaped like the second axis of their matrix.

    Returns:
        ``(output, weights)``: output ``(..., n_q, d_out)``; weights per head
        ``(..., heads, n_q, n_k)``, each row summing to 1.

    Raises:
        ValueError: a projection width not divisible by ``num_heads``, matrices of the wrong
        shape, or a mask that does not fit.
    """
    x_q = as_float_array(x_q, "x_q", min_ndim=2)
    x_kv = as_float_array(x_kv, "x_kv", min_ndim=2)
    num_heads = check_positive_int(num_heads, "num_heads")
    if x_q.shape[-1] != x_kv.shape[-1]:
        raise ValueError(
            f"x_q and x_kv must have the same feature width d_model: x_q has shape {x_q.shape}, "
            f"x_kv has shape {x_kv.shape}"
        )
    q = linear(x_q, w_q, b_q, name="w_q", x_name="x_q")
    k = linear(x_kv, w_k, b_k, name="w_k", x_name="x_kv")
    v = linear(x_kv, w_v, b_v, name="w_v", x_name="x_kv")
    for y, args in ((q, "x_q, w_q, b_q"), (k, "x_kv, w_k, b_k"), (v, "x_kv, w_v, b_v")):
        if not np.isfinite(y).all():  # name the arguments, not the projections inside
            raise ValueError(f"{args}: their projection contains nan or inf; attention needs "
                             "finite inputs")  # fmt: skip
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"w_q and w_k must produce the same width, got {q.shape[-1]} and {k.shape[-1]}"
        )
    for name, y in (("w_q/w_k", q), ("w_v", v)):
        if y.shape[-1] % num_heads:
            raise ValueError(
                f"{name} produce {y.shape[-1]} features, not divisible by num_heads={num_heads}"
            )
    qh, kh, vh = (split_heads(y, num_heads) for y in (q, k, v))
    if mask is not None:
        m = as_bool_mask(mask, "mask")
        if m.ndim <= x_q.ndim:
            # Same mask for every head: give it a head axis of length 1 that broadcasts.
            m = np.expand_dims(m, axis=-3) if m.ndim >= 2 else m
        mask = m
    heads, weights = scaled_dot_product_attention(qh, kh, vh, mask)
    concat = merge_heads(heads)  # (..., n_q, h * d_v)
    w_o = as_float_array(w_o, "w_o", min_ndim=2)
    if w_o.ndim != 2 or w_o.shape[0] != concat.shape[-1]:
        raise ValueError(
            f"w_o must have shape (h * d_v={concat.shape[-1]}, d_out) to multiply the "
            f"concatenated heads, got {w_o.shape}"
        )
    return linear(concat, w_o, b_o, name="w_o", x_name="Concat(heads)"), weights
