"""NF4, QLoRA's 4-bit NormalFloat (Dettmers et al. 2023): 16 levels placed for normal weights.

Trained weights are close to normally distributed, so NF4 puts its 16 levels at quantiles of a
normal distribution (scaled to [-1, 1], with an exact 0) instead of evenly as Q4_0 does: equal
numbers of weights fall between neighbouring levels. Per block of 64 weights::

    a = max |w|                      one float32 "absmax" per block
    i = the level nearest w / a      4 bits: the index into NF4_CODE (ties go to the lower level)
    w ≈ NF4_CODE[i] * a

Two indices are packed per byte, the **first weight in the high** four bits (GGUF's 4-bit
formats do the opposite). :func:`nf4_quantize`/:func:`nf4_dequantize` give exactly the bytes,
absmax and floats of bitsandbytes' ``quantize_4bit(..., quant_type="nf4")`` /
``dequantize_4bit`` on CPU. numpy only.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_finite_array, check_positive_int

__all__ = ["NF4_CODE", "nf4_levels", "nf4_quantize", "nf4_dequantize"]

#: the 16 NF4 levels as published (QLoRA, appendix E) and used by bitsandbytes, float32
NF4_CODE = np.array(
    [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
     -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
     0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
     0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0],
    dtype=np.float32,
)  # fmt: skip


def nf4_levels(offset: float = 0.9677083) -> np.ndarray:
    """The NF4 levels derived from the normal distribution (how QLoRA builds them).

    8 positive levels at the normal quantiles of ``linspace(offset, 0.5, 9)[:-1]``, 7 negative
    ones at ``linspace(offset, 0.5, 8)[:-1]`` (one fewer, so that 0 is a level), and 0; divided
    by the largest so they span [-1, 1]. ``offset`` (the outermost probability, QLoRA's
    0.9677083) keeps the outer quantile finite. Agrees with :data:`NF4_CODE` to ~1e-7.
    """
    if isinstance(offset, bool) or not isinstance(offset, (int, float)):
        raise TypeError(f"offset must be a number in (0.5, 1), got {type(offset).__name__}")
    if not 0.5 < offset < 1:
        raise ValueError(
            f"offset must be in (0.5, 1) (a probability above the median), got {offset}"
        )
    quantile = NormalDist().inv_cdf
    positive = [quantile(p) for p in np.linspace(offset, 0.5, 9)[:-1]]
    negative = [-quantile(p) for p in np.linspace(offset, 0.5, 8)[:-1]]
    levels = np.sort(np.array([*negative, 0.0, *positive]))
    return levels / levels.max()  # (16,) in [-1, 1]


def nf4_quantize(w: ArrayLike, block_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """NF4-quantise ``w`` (any shape, read in memory order) in blocks of ``block_size`` weights.

    Returns:
        ``packed`` uint8 ``(w.size // 2, 1)`` (two 4-bit indices a byte, first one high; the
        shape bitsandbytes returns) and ``absmax`` float32 ``(w.size // block_size,)``.

    Raises:
        ValueError: ``block_size`` does not divide ``w.size`` (or is odd); nan or inf in ``w``.
    """
    w = as_finite_array(w, "w").astype(np.float32).reshape(-1)
    block_size = check_positive_int(block_size, "block_size")
    if w.size % block_size or block_size % 2:
        raise ValueError(
            f"block_size: {block_size} must be even and divide the number of weights {w.size}"
        )
    blocks = w.reshape(-1, block_size)  # (n_blocks, block_size)
    absmax = np.abs(blocks).max(axis=1)  # (n_blocks,)
    scaled = np.clip(
        blocks * (np.float32(1) / np.maximum(absmax, np.float32(1e-38)))[:, None], -1, 1
    )
    midpoints = (NF4_CODE[:-1] + NF4_CODE[1:]) / np.float32(2)  # (15,) boundaries between levels
    index = np.searchsorted(midpoints, scaled.reshape(-1), side="left").astype(np.uint8)
    packed = (index[0::2] << np.uint8(4)) | index[1::2]  # first weight high, second low
    return packed[:, None], absmax


def nf4_dequantize(
    packed: np.ndarray, absmax: ArrayLike, shape: tuple[int, ...], block_size: int = 64
) -> np.ndarray:
    """The float32 weights of ``shape`` stored by :func:`nf4_quantize`: ``NF4_CODE[i] * absmax``."""
    if not isinstance(packed, np.ndarray) or packed.dtype != np.uint8:
        got = f"{packed.dtype} array" if isinstance(packed, np.ndarray) else type(packed).__name__
        raise TypeError(f"packed must be a uint8 numpy array, got {got}")
    absmax = as_finite_array(absmax, "absmax").astype(np.float32).reshape(-1)
    block_size = check_positive_int(block_size, "block_size")
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in shape
    ):
        raise TypeError(f"shape must be a tuple of ints >= 1, got {shape!r:.60}")
    n = int(np.prod(shape))
    if packed.size * 2 != n or absmax.size * block_size != n:
        raise ValueError(
            f"packed ({packed.size} bytes) and absmax ({absmax.size} blocks of {block_size}) do "
            f"not hold the {n} weights of shape {tuple(shape)}"
        )
    b = packed.reshape(-1)
    index = np.stack([b >> np.uint8(4), b & np.uint8(0x0F)], axis=1).reshape(-1)  # (n,)
    w = NF4_CODE[index].reshape(-1, block_size) * absmax[:, None]  # (n_blocks, block_size)
    return w.reshape(tuple(int(s) for s in shape))
