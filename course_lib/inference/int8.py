"""Absmax int8 quantisation of a weight matrix, per tensor or per output channel (weight-only).

One scale for a group of weights (the whole matrix, or one row = one output channel); every
weight is stored as the 8-bit integer nearest to it on a grid of 255 levels spanning
``[-max |w|, max |w|]``::

    a = max |w|          q = round(w * 127 / a)   in -127..127          w ≈ (a / 127) * q

so the largest weight lands exactly on ±127 (LLM.int8()'s "vector-wise" absmax, Dettmers et al.
2022). "Weight-only": the activations stay in float; a layer computes ``x @ (s * q).T`` with
``s = a / 127``, de-quantising on the fly. The values and row statistics equal bitsandbytes'
``int8_vectorwise_quant`` (per channel; per tensor = the same on the matrix as one row), on CPU.
(torchao's ``Int8WeightOnlyConfig`` divides by 127.5 instead, using -128 too.) numpy only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_finite_array, check_flag

__all__ = ["int8_quantize", "int8_dequantize"]


def int8_quantize(w: ArrayLike, per_channel: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Absmax int8 quantisation of ``w (out_features, in_features)``.

    Args:
        w: the weight matrix, one row per output channel (``nn.Linear.weight``'s layout).
        per_channel: one scale per row (``True``) or one for the whole matrix (``False``).

    Returns:
        ``q`` int8 ``(out, in)`` in -127..127 and ``scale = absmax / 127`` float32 ``(out, 1)``
        (per channel) or ``(1, 1)``, with ``w ≈ scale * q``. An all-zero row gets scale 0.

    Raises:
        ValueError: ``w`` is not 2-D, or holds nan or inf.
    """
    w = as_finite_array(w, "w").astype(np.float32)
    if w.ndim != 2:
        raise ValueError(
            f"w must be a 2-D weight matrix (out_features, in_features), got {w.shape}"
        )
    if check_flag(per_channel, "per_channel"):
        absmax = np.abs(w).max(axis=1, keepdims=True)  # (out, 1): one per output channel
    else:
        absmax = np.abs(w).max().reshape(1, 1)  # (1, 1): one for the matrix
    safe = np.where(absmax == 0, np.float32(1), absmax)  # an all-zero row: q = 0
    q = np.round(w * (np.float32(127) / safe)).astype(np.int8)  # (out, in) in -127..127
    return q, absmax / np.float32(127)


def int8_dequantize(q: np.ndarray, scale: ArrayLike) -> np.ndarray:
    """``scale * q`` as float32: the weights an int8 layer computes with.

    ``q``: int8 ``(out, in)``; ``scale``: ``(out, 1)`` or ``(1, 1)`` (what :func:`int8_quantize`
    returns)."""
    if not isinstance(q, np.ndarray) or q.dtype != np.int8 or q.ndim != 2:
        got = f"{q.dtype} array of shape {q.shape}" if isinstance(q, np.ndarray) else type(q)
        raise TypeError(f"q must be a 2-D int8 numpy array (out, in), got {got}")
    scale = as_finite_array(scale, "scale").astype(np.float32)
    if scale.shape not in ((q.shape[0], 1), (1, 1)):
        raise ValueError(
            f"scale must have shape ({q.shape[0]}, 1) (per channel) or (1, 1) (per tensor) for "
            f"q of shape {q.shape}, got {scale.shape}"
        )
    return scale * q.astype(np.float32)  # (out, in)
