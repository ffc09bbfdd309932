"""Exact attention in blocks: the same result as the naive formula, without the n × n matrix.

The naive ``softmax(q k^T / sqrt(d_k)) v`` stores an ``n_q × n_k`` score matrix: at n = 16,384
in float32 that is 1 GiB, and the softmax makes a few more of them. Reading the keys in blocks
with the online softmax (:func:`course_lib.online_softmax_step`) needs only a block of scores at
a time plus, for every query, a running maximum, a running sum and an output accumulator:

    for each key block j:
        s      = q k_j^T / sqrt(d_k)           # (b_q, b_k) scores of this block only
        m'     = max(m, rowmax(s))
        acc    = exp(m - m') * acc + exp(s - m') v_j
        l      = exp(m - m') * l   + rowsum(exp(s - m'))
    out = acc / l

This is the idea behind FlashAttention; here it is plain numpy, written to be read.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validation import (
    as_bool_mask,
    as_float_array,
    broadcast_shape,
    check_attention_mask,
    check_flag,
    check_positive_int,
    check_qkv,
    check_scores_finite,
)
from .softmax import OnlineSoftmaxState, online_softmax_step

__all__ = [
    "chunked_attention",
    "chunked_attention_with_logsumexp",
    "ChunkedAttention",
    "attention_block_update",
    "attention_cost",
    "AttentionCost",
]


def attention_block_update(
    state: OnlineSoftmaxState,
    acc: ArrayLike,
    q_block: ArrayLike,
    k_block: ArrayLike,
    v_block: ArrayLike,
    mask_block: ArrayLike | None = None,
) -> tuple[OnlineSoftmaxState, np.ndarray]:
    """Fold one block of keys and values into the running result of a block of queries.

    Args:
        state: online-softmax state of the queries, arrays ``(..., b_q)`` (start with
            ``online_softmax_start((..., b_q))``).
        acc: un-normalised output so far ``(..., b_q, d_v)`` (start with zeros):
            ``sum_j exp(s_j - running_max) v_j`` over the keys seen so far.
        q_block: queries ``(..., b_q, d_k)``, **not** pre-scaled.
        k_block: keys ``(..., b_k, d_k)``.
        v_block: values ``(..., b_k, d_v)``.
        mask_block: optional boolean ``(..., b_q, b_k)`` (broadcastable); True = may attend.

    Returns:
        ``(new_state, new_acc)``. After the last key block, the attention output is
        ``new_acc / new_state.running_sum[..., None]``.
    """
    q_block, k_block, v_block = check_qkv(
        q_block, k_block, v_block, ("q_block", "k_block", "v_block")
    )
    scores = (
        q_block @ np.swapaxes(k_block, -1, -2) / np.sqrt(q_block.shape[-1]).astype(q_block.dtype)
    )
    if mask_block is not None:
        mask_block = as_bool_mask(mask_block, "mask_block")
        try:
            np.broadcast_shapes(mask_block.shape, scores.shape)
        except ValueError:
            raise ValueError(
                f"mask_block of shape {mask_block.shape} does not broadcast to the block's "
                f"scores {scores.shape} (..., b_q, b_k)"
            ) from None
        scores = np.where(mask_block, scores, -np.inf)
    acc = as_float_array(acc, "acc", min_ndim=2)
    out_batch = np.broadcast_shapes(scores.shape[:-2], v_block.shape[:-2])
    expected = (*out_batch, scores.shape[-2], v_block.shape[-1])
    if acc.shape != expected:
        raise ValueError(f"acc has shape {acc.shape}, expected (..., b_q, d_v) = {expected}")
    new_state, rescale, p = online_softmax_step(state, scores)
    return new_state, rescale[..., None] * acc + p @ v_block


def chunked_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    mask: ArrayLike | None = None,
    block_size: int = 512,
    *,
    causal: bool = False,
) -> np.ndarray:
    """softmax(q k^T / sqrt(d_k)) v computed block by block, never storing all the scores.

    Equal to ``scaled_dot_product_attention(q, k, v, mask)[0]`` up to rounding, with the same
    checks and error messages; see :func:`chunked_attention_with_logsumexp` (the one
    implementation, which also returns the log-sum-exp) for the arguments.
    Returns ``out`` ``(..., n_q, d_v)``.
    """
    return chunked_attention_with_logsumexp(q, k, v, mask, block_size, causal=causal).out


class ChunkedAttention(NamedTuple):
    """What :func:`chunked_attention_with_logsumexp` returns."""

    out: np.ndarray  # (..., n_q, d_v): the attention output
    logsumexp: np.ndarray  # (..., n_q): log(sum_j exp(s_ij)) over the attended keys


def chunked_attention_with_logsumexp(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    mask: ArrayLike | None = None,
    block_size: int = 512,
    *,
    causal: bool = False,
) -> ChunkedAttention:
    """Chunked attention and, per query, ``log(sum_j exp(s_ij))`` over the attended keys —
    the one number per query a backward pass needs (what flash attention saves).

    Args:
        q: queries ``(..., n_q, d_k)``.
        k: keys ``(..., n_k, d_k)``.
        v: values ``(..., n_k, d_v)``. Leading (batch, head) dimensions broadcast.
        mask: optional boolean array broadcastable to ``(..., n_q, n_k)``; True = may attend.
        block_size: queries and keys per block; the largest temporary is a few
            ``block_size × block_size`` arrays (per batch entry). Need not divide n.
        causal: if True, query i may attend only to keys j <= i (top-left aligned, as
            ``causal_mask(n)`` and torch's ``is_causal=True``); built per block, so no
            ``n × n`` mask exists, and blocks entirely above the diagonal are skipped.
            Combined with ``mask`` by logical and.

    Returns:
        :class:`ChunkedAttention` ``(out (..., n_q, d_v), logsumexp (..., n_q))``.

    Raises:
        ValueError: mismatched ``d_k`` or ``n_k``, nan/inf in the inputs, ``q k^T``
        overflowing to inf, a mask of the wrong shape, a mask that hides every key from some
        query, or ``block_size < 1``. TypeError: non-numeric input,
        non-boolean mask, non-integer ``block_size``.
    """
    q, k, v = check_qkv(q, k, v)
    block_size = check_positive_int(block_size, "block_size")
    causal = check_flag(causal, "causal")
    n_q, n_k = q.shape[-2], k.shape[-2]
    score_batch = broadcast_shape({"q[..., :-2]": q.shape[:-2], "k[..., :-2]": k.shape[:-2]})
    out_batch = broadcast_shape({"scores": score_batch, "v[..., :-2]": v.shape[:-2]})
    m = None
    if mask is not None:
        m = check_attention_mask(mask, n_q, n_k, score_batch)
        m = m.reshape((1,) * (2 - m.ndim) + m.shape)  # give it (n_q, n_k) axes to slice
    dtype = q.dtype
    # Scale q once (n_q × d_k work) instead of every block of scores (n_q × n_k work).
    q_in, q = q, q / np.sqrt(q.shape[-1]).astype(dtype)
    # |q_i . k_j| <= |q_i| |k_j| (Cauchy-Schwarz), for every partial sum too: only when that bound
    # nears the dtype's range can a score overflow, so only then is each block checked for inf.
    with np.errstate(over="ignore"):
        bound = np.sqrt(np.square(q).sum(-1)).max() * np.sqrt(np.square(k).sum(-1)).max()
    may_overflow = not bound < np.finfo(dtype).max / 4

    out = np.empty((*out_batch, n_q, v.shape[-1]), dtype=dtype)
    lse = np.empty((*score_batch, n_q), dtype=dtype)
    for qs in range(0, n_q, block_size):
        qe = min(qs + block_size, n_q)
        q_blk = q[..., qs:qe, :]
        run_max = np.full((*score_batch, qe - qs), -np.inf, dtype=dtype)
        run_sum = np.zeros((*score_batch, qe - qs), dtype=dtype)
        acc = np.zeros((*out_batch, qe - qs, v.shape[-1]), dtype=dtype)
        # With causal=True, keys after the last query of this block are hidden from all of it.
        k_stop = min(n_k, qe) if causal else n_k
        for ks in range(0, k_stop, block_size):
            ke = min(ks + block_size, k_stop)
            s = q_blk @ np.swapaxes(k[..., ks:ke, :], -1, -2)  # (..., b_q, b_k)
            if may_overflow:  # as scaled_dot_product_attention: overflow is an error
                check_scores_finite(s, q_in, k)
            keep = None
            if m is not None:
                keep = m[
                    ...,
                    slice(qs, qe) if m.shape[-2] > 1 else slice(None),
                    slice(ks, ke) if m.shape[-1] > 1 else slice(None),
                ]
            if causal and ke - 1 > qs:  # the block crosses the diagonal
                tri = np.arange(qs, qe)[:, None] >= np.arange(ks, ke)[None, :]
                keep = tri if keep is None else keep & tri
            if keep is not None:
                s = np.where(keep, s, -np.inf)
            # The online-softmax step, in place on this block's scores (no second b_q x b_k array).
            new_max = np.maximum(run_max, s.max(axis=-1))  # (..., b_q)
            safe_max = np.where(np.isneginf(new_max), 0, new_max).astype(dtype, copy=False)
            rescale = np.exp(run_max - safe_max)  # exp(m - m') <= 1: old terms shrink
            s -= safe_max[..., None]
            p = np.exp(s, out=s)  # exp(s - m'): this block's terms, relative to the new max
            run_max, run_sum = new_max, rescale * run_sum + p.sum(axis=-1)
            acc *= rescale[..., None]
            acc += p @ v[..., ks:ke, :]
        if np.isneginf(run_max).any():  # only possible when causal and mask combine
            where = tuple(int(i) for i in np.argwhere(np.isneginf(run_max))[0])
            raise ValueError(
                f"mask hides every key from some query (first at index {where} of the "
                f"queries' block starting at {qs}, with causal=True); "
                "each query needs at least one True in its row"
            )
        out[..., qs:qe, :] = acc / run_sum[..., None]
        lse[..., qs:qe] = OnlineSoftmaxState(run_max, run_sum).logsumexp
    return ChunkedAttention(out, lse)


class AttentionCost(NamedTuple):
    """Operation and memory counts of one naive attention ``softmax(q k^T / sqrt(d)) v``."""

    matmul_flops: int  # multiply-adds counted as 2 FLOPs: q k^T and weights @ v
    softmax_elements: int  # entries exponentiated (one exp each): n_q * n_k
    score_bytes: int  # one n_q × n_k score matrix in the given precision
    io_bytes: int  # q, k, v read once and the output written once


def attention_cost(
    n_q: int, n_k: int, d_k: int, d_v: int | None = None, itemsize: int = 4
) -> AttentionCost:
    """Count the work of naive attention for one (batch, head): FLOPs grow like ``n_q·n_k·d``.

    ``q k^T`` is ``n_q·n_k`` dot products of length ``d_k`` (``2·n_q·n_k·d_k`` FLOPs);
    ``weights @ v`` is ``2·n_q·n_k·d_v``. The score matrix needs ``n_q·n_k·itemsize`` bytes,
    while the inputs and output need only ``(n_q·d_k + n_k·d_k + n_k·d_v + n_q·d_v)·itemsize``.
    """
    n_q = check_positive_int(n_q, "n_q")
    n_k = check_positive_int(n_k, "n_k")
    d_k = check_positive_int(d_k, "d_k")
    d_v = d_k if d_v is None else check_positive_int(d_v, "d_v")
    itemsize = check_positive_int(itemsize, "itemsize")
    return AttentionCost(
        matmul_flops=2 * n_q * n_k * d_k + 2 * n_q * n_k * d_v,
        softmax_elements=n_q * n_k,
        score_bytes=n_q * n_k * itemsize,
        io_bytes=(n_q * d_k + n_k * d_k + n_k * d_v + n_q * d_v) * itemsize,
    )
