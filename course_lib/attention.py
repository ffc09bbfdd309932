"""Scaled dot-product attention and its masks, in numpy, as written on the board.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Shapes follow the row convention of "Attention Is All You Need": one token per row.
Masks are boolean and **True means "may attend"** (the convention of torch's
``F.scaled_dot_product_attention``; ``nn.MultiheadAttention`` uses the opposite one).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ._validation import (
    as_finite_array,
    as_float_array,
    check_attention_mask,
    check_positive_int,
    check_qkv,
    check_scores_finite,
)
from .softmax import softmax, softmax_inplace_unchecked

__all__ = [
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_inplace",
    "attention_scores",
    "causal_mask",
    "padding_mask",
    "project_qkv",
    "project_qkv_columns",
]


def attention_scores(q: ArrayLike, k: ArrayLike) -> np.ndarray:
    """Scaled scores ``q k^T / sqrt(d_k)``: q ``(..., n_q, d_k)``, k ``(..., n_k, d_k)`` ->
    ``(..., n_q, n_k)``, in the inputs' float dtype. The one place the formula is written."""
    q = as_finite_array(q, "q", min_ndim=2)
    k = as_finite_array(k, "k", min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q {q.shape} and k {k.shape} must share the last dimension d_k")
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return check_scores_finite(scores, q, k)


def scaled_dot_product_attention(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, mask: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(q k^T / sqrt(d_k)) v, returning the output and the attention weights.

    Args:
        q: queries ``(..., n_q, d_k)``.
        k: keys ``(..., n_k, d_k)``.
        v: values ``(..., n_k, d_v)``. Leading (batch, head) dimensions broadcast.
        mask: optional boolean array broadcastable to ``(..., n_q, n_k)``; True = may attend.

    Returns:
        ``(output, weights)`` with shapes ``(..., n_q, d_v)`` and ``(..., n_q, n_k)``; each row
        of ``weights`` sums to 1 and masked positions get exactly 0.

    Raises:
        ValueError: mismatched ``d_k`` or ``n_k``, nan/inf in the inputs, a mask of the wrong
        shape, or a mask that hides every key from some query. TypeError: non-numeric input or
        non-boolean mask.

    :func:`scaled_dot_product_attention_inplace` computes the same in one buffer, faster.
    """
    q, k, v = check_qkv(q, k, v)
    scores = attention_scores(q, k)  # q k^T / sqrt(d_k): (..., n_q, n_k)
    if mask is not None:
        mask = check_attention_mask(mask, q.shape[-2], k.shape[-2], scores.shape[:-2])
        scores = np.where(mask, scores, -np.inf)  # a masked key gets weight exactly 0
    weights = softmax(scores, axis=-1)  # each row sums to 1
    return weights @ v, weights  # weighted sum of the values


def scaled_dot_product_attention_inplace(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, mask: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scaled_dot_product_attention` (same arguments, checks and results, equal up to
    rounding) computed in place on one ``(..., n_q, n_k)`` buffer: q is scaled before the
    product (n_q x d_k numbers instead of n_q x n_k), the mask and the softmax write into the
    scores. What ``benchmarks/bench_attention.py`` and lecture 10 time against torch.
    """
    q, k, v = check_qkv(q, k, v)
    scores = (q * q.dtype.type(1.0 / np.sqrt(q.shape[-1]))) @ np.swapaxes(k, -1, -2)
    check_scores_finite(scores, q, k)
    if mask is not None:
        m = check_attention_mask(mask, q.shape[-2], k.shape[-2], scores.shape[:-2])
        np.copyto(scores, -np.inf, where=~m)
    weights = softmax_inplace_unchecked(scores)  # lecture 01's stable softmax, in place
    return weights @ v, weights


def causal_mask(n: int) -> np.ndarray:
    """``(n, n)`` boolean lower-triangular mask: position i may attend to positions j <= i."""
    n = check_positive_int(n, "n")
    return np.tril(np.ones((n, n), dtype=bool))


def padding_mask(lengths: ArrayLike, n: int) -> np.ndarray:
    """Key-padding mask ``(batch, 1, n)``: True for the first ``lengths[b]`` keys of sequence b.

    The singleton middle axis lets it broadcast against scores ``(batch, n_q, n)``; for
    multi-head scores ``(batch, heads, n_q, n)`` use ``padding_mask(...)[:, None]``.
    """
    n = check_positive_int(n, "n")
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.size == 0 or lengths.dtype.kind not in "iu":
        raise ValueError(f"lengths must be a non-empty 1-D array of integers, got {lengths!r}")
    if (lengths < 1).any() or (lengths > n).any():
        raise ValueError(f"every length must be between 1 and n={n}, got {lengths.tolist()}")
    return (np.arange(n)[None, :] < lengths[:, None])[:, None, :]


def linear(x: np.ndarray, w, b=None, *, name: str = "w", x_name: str = "x") -> np.ndarray:
    """``x @ w + b`` with shape checks: x ``(..., n, d_in)``, w ``(d_in, d_out)``, b ``(d_out,)``.

    ``name`` and ``x_name`` are the argument names used in error messages (``w_q``, ``x_kv``...).
    """
    w = as_float_array(w, name, min_ndim=2)
    if w.ndim != 2 or w.shape[0] != x.shape[-1]:
        raise ValueError(
            f"{name} must have shape (d_model={x.shape[-1]}, d_out) to multiply {x_name} of "
            f"shape {x.shape}, got {w.shape}"
        )
    y = x @ w
    if b is not None:
        b_name = "b" + name[1:] if name.startswith("w") else f"bias of {name}"
        b = as_float_array(b, b_name)
        if b.shape != (w.shape[1],):
            raise ValueError(f"{b_name} must have shape ({w.shape[1]},), got {b.shape}")
        y = y + b
    return y


def project_qkv(
    x: ArrayLike,
    w_q: ArrayLike,
    w_k: ArrayLike,
    w_v: ArrayLike,
    b_q: ArrayLike | None = None,
    b_k: ArrayLike | None = None,
    b_v: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row form ``Q = X W_Q + b_q`` (and K, V): x ``(..., n, d_model)``, W ``(d_model, d)``.

    Returns ``(Q, K, V)``, each ``(..., n, d)`` for its own ``d``.
    """
    x = as_float_array(x, "x", min_ndim=2)
    return (
        linear(x, w_q, b_q, name="w_q"),
        linear(x, w_k, b_k, name="w_k"),
        linear(x, w_v, b_v, name="w_v"),
    )


def project_qkv_columns(
    x_cols: ArrayLike,
    omega_q: ArrayLike,
    beta_q: ArrayLike,
    omega_k: ArrayLike,
    beta_k: ArrayLike,
    omega_v: ArrayLike,
    beta_v: ArrayLike,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column form of the notes: ``q_n = beta_q + Omega_q x_n`` for every column ``x_n``.

    x_cols ``(d_model, n)`` holds one token per **column**; each Omega is ``(d, d_model)`` and
    each beta ``(d,)``. Returns ``(Q, K, V)`` as ``(d, n)`` column matrices. This is the row
    form transposed: Omega = W^T, beta = b, and ``project_qkv(x_cols.T, ...)[i].T`` agrees.
    """
    x_cols = as_float_array(x_cols, "x_cols", min_ndim=2)
    if x_cols.ndim != 2:
        raise ValueError(f"x_cols must be (d_model, n), got shape {x_cols.shape}")
    # Check here, not in project_qkv: its errors would name w_q/b_q and show Omega transposed.
    omegas = []
    for name, omega, beta in (
        ("q", omega_q, beta_q),
        ("k", omega_k, beta_k),
        ("v", omega_v, beta_v),
    ):
        omega = as_float_array(omega, f"omega_{name}", min_ndim=2)
        if omega.ndim != 2 or omega.shape[1] != x_cols.shape[0]:
            raise ValueError(
                f"omega_{name} must have shape (d, d_model={x_cols.shape[0]}) to multiply "
                f"x_cols of shape {x_cols.shape}, got {omega.shape}"
            )
        beta = as_float_array(beta, f"beta_{name}")
        if beta.shape != (omega.shape[0],):
            raise ValueError(f"beta_{name} must have shape ({omega.shape[0]},), got {beta.shape}")
        omegas.append(omega)
    q, k, v = project_qkv(x_cols.T, *(o.T for o in omegas), beta_q, beta_k, beta_v)
    return q.T, k.T, v.T
