"""llama.cpp's block formats Q8_0, Q4_0, Q4_1: what a GGUF file's quantised weights mean.

A tensor is cut into **blocks of 32 weights** along its rows (the last axis, in memory order);
each block stores one or two float16 numbers and 32 small integers ``q``::

    Q8_0   d (f16), 32 x int8 q                    w = d * q          34 bytes: 8.5 bits/weight
    Q4_0   d (f16), 16 bytes of 4-bit q            w = d * (q - 8)    18 bytes: 4.5 bits/weight
    Q4_1   d (f16), m (f16), 16 bytes of 4-bit q   w = d * q + m      20 bytes: 5.0 bits/weight

How each block is chosen (ggml's reference quantisers, ``ggml-quants.c``):

* **Q8_0**: ``d = max|x| / 127``, ``q = round(x / d)`` (halves away from zero), so the largest
  weight lands on ±127;
* **Q4_0**: ``d = x[argmax |x|] / -8`` (the signed weight of largest size), ``q = trunc(x / d +
  8.5)`` clipped to 0..15: the largest weight lands exactly on ``q - 8 = -8``;
* **Q4_1**: ``d = (max - min) / 15``, ``m = min``, ``q = trunc((x - m) / d + 0.5)`` clipped to 0..15:
  the 16 levels span the block's range.

In the 4-bit formats byte ``j`` holds weight ``j`` in its low four bits and weight ``j + 16`` in
its high four bits. :func:`quantize` and :func:`dequantize` give exactly the bytes and floats of
``gguf.quants.quantize`` / ``dequantize`` (the tests hold them equal byte for byte, and on every
tensor of SmolLM2's file). numpy only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_finite_array, check_choice

__all__ = ["BLOCK_SIZE", "BLOCK_BYTES", "bits_per_weight", "quantize", "dequantize"]

BLOCK_SIZE = 32  # weights per block, in every format here
#: bytes per block of 32 weights: the float16 scale (and minimum) + the packed integers
BLOCK_BYTES = {"Q8_0": 2 + 32, "Q4_0": 2 + 16, "Q4_1": 2 + 2 + 16}


def bits_per_weight(fmt: str) -> float:
    """Storage per weight: ``8 * bytes per block / 32`` (Q8_0 8.5, Q4_0 4.5, Q4_1 5.0)."""
    check_choice(fmt, "fmt", BLOCK_BYTES)
    return 8 * BLOCK_BYTES[fmt] / BLOCK_SIZE


def _blocks_of(x, name: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """``x (..., n)`` -> float32 ``(n_blocks, 32)`` and x's shape; n must be a multiple of 32."""
    x = as_finite_array(x, name, min_ndim=1)
    if x.shape[-1] % BLOCK_SIZE:
        raise ValueError(
            f"{name}: the block size {BLOCK_SIZE} does not divide the row length "
            f"{x.shape[-1]} (shape {x.shape}); the last axis must be a multiple of {BLOCK_SIZE}"
        )
    return x.astype(np.float32).reshape(-1, BLOCK_SIZE), x.shape  # (n_blocks, 32)


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """C's ``roundf``: to the nearest integer, halves away from zero (numpy rounds them to even).

    ``floor(|v| + 0.5)`` would be wrong for ``|v| = 0.49999997`` (the float32 sum rounds up to 1);
    the fraction ``|v| - floor(|v|)`` is exact."""
    a = np.abs(v)
    whole = np.floor(a)
    return np.sign(v) * (whole + (a - whole >= np.float32(0.5)))


def _inverse(d: np.ndarray) -> np.ndarray:
    """``1 / d``, and 0 where ``d == 0`` (a block of zeros stores q = 0, or the middle level)."""
    safe = np.where(d == 0, np.float32(1), d)
    return np.where(d == 0, np.float32(0), np.float32(1) / safe)


def _f16_bytes(v: np.ndarray) -> np.ndarray:
    """float32 ``(n, 1)`` -> its float16 as 2 bytes ``(n, 2)`` (little-endian, as in the file)."""
    return v.astype("<f2").view(np.uint8)


def _pack_nibbles(q: np.ndarray) -> np.ndarray:
    """``(n, 32)`` values 0..15 -> ``(n, 16)`` bytes: weight j low, weight j + 16 high."""
    return q[:, :16] | (q[:, 16:] << np.uint8(4))


def _unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """``(n, 16)`` bytes -> ``(n, 32)`` values 0..15: the 16 low halves, then the 16 high."""
    return np.concatenate([packed & np.uint8(0x0F), packed >> np.uint8(4)], axis=1)


def quantize(x: ArrayLike, fmt: str) -> np.ndarray:
    """Quantise ``x (..., n)`` (n a multiple of 32) to ``fmt`` ("Q8_0", "Q4_0", "Q4_1").

    Returns uint8 ``(..., n // 32 * bytes per block)``: GGUF's layout, equal byte for byte to
    ``gguf.quants.quantize(x, GGMLQuantizationType[fmt])``.

    Raises:
        ValueError: an unknown ``fmt``, a row length that 32 does not divide, nan or inf in ``x``.
    """
    check_choice(fmt, "fmt", BLOCK_BYTES)
    x, shape = _blocks_of(x, "x")  # (n, 32) float32
    if fmt == "Q8_0":
        d = np.abs(x).max(axis=1, keepdims=True) / np.float32(127)  # (n, 1)
        q = _round_half_away(x * _inverse(d)).astype(np.int8)  # (n, 32) in -127..127
        out = np.concatenate([_f16_bytes(d), q.view(np.uint8)], axis=1)
    elif fmt == "Q4_0":
        i = np.abs(x).argmax(axis=1)[:, None]  # (n, 1): the weight of largest size
        d = np.take_along_axis(x, i, axis=1) / np.float32(-8)  # signed: it maps to q - 8 = -8
        q = np.trunc(x * _inverse(d) + np.float32(8.5)).clip(0, 15).astype(np.uint8)  # (n, 32)
        out = np.concatenate([_f16_bytes(d), _pack_nibbles(q)], axis=1)
    else:  # Q4_1
        lo, hi = x.min(axis=1, keepdims=True), x.max(axis=1, keepdims=True)  # (n, 1) each
        d = (hi - lo) / np.float32(15)  # 16 levels from the minimum to the maximum
        q = np.trunc((x - lo) * _inverse(d) + np.float32(0.5)).clip(0, 15).astype(np.uint8)
        out = np.concatenate([_f16_bytes(d), _f16_bytes(lo), _pack_nibbles(q)], axis=1)
    return out.reshape(*shape[:-1], shape[-1] // BLOCK_SIZE * BLOCK_BYTES[fmt])


def dequantize(blocks: np.ndarray, fmt: str, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 weights of ``shape`` stored in ``blocks`` (uint8, GGUF's layout) as ``fmt``.

    Equal bit for bit to ``gguf.quants.dequantize(blocks, GGMLQuantizationType[fmt])`` reshaped
    to ``shape``.

    Raises:
        ValueError: an unknown ``fmt``; a ``shape`` whose last size 32 does not divide; a byte
            count that does not fit ``fmt`` and ``shape``.
        TypeError: ``blocks`` is not a uint8 numpy array.
    """
    check_choice(fmt, "fmt", BLOCK_BYTES)
    b, shape = _check_blocks(blocks, fmt, shape)  # (n_blocks, bytes per block)
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)  # (n, 1): the scale
    if fmt == "Q8_0":
        w = b[:, 2:].copy().view(np.int8).astype(np.float32) * d  # (n, 32): d * q
    elif fmt == "Q4_0":
        w = d * (_unpack_nibbles(b[:, 2:]).astype(np.float32) - 8)  # (n, 32): d * (q - 8)
    else:  # Q4_1
        m = b[:, 2:4].copy().view("<f2").astype(np.float32)  # (n, 1): the minimum
        w = d * _unpack_nibbles(b[:, 4:]).astype(np.float32) + m  # (n, 32): d * q + m
    return w.reshape(shape)


def _check_blocks(blocks, fmt: str, shape) -> tuple[np.ndarray, tuple[int, ...]]:
    if not isinstance(blocks, np.ndarray) or blocks.dtype != np.uint8:
        got = f"{blocks.dtype} array" if isinstance(blocks, np.ndarray) else type(blocks).__name__
        raise TypeError(f"blocks must be a uint8 numpy array (the file's bytes), got {got}")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape
    ):
        raise TypeError(f"shape must be a tuple of ints, got {shape!r:.60}")
    shape = tuple(int(s) for s in shape)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"shape must be one or more sizes >= 1, got {shape}")
    if shape[-1] % BLOCK_SIZE:
        raise ValueError(
            f"shape: the block size {BLOCK_SIZE} does not divide the row length {shape[-1]} "
            f"(shape {shape}); blocks run along rows"
        )
    n_blocks = int(np.prod(shape)) // BLOCK_SIZE
    if blocks.size != n_blocks * BLOCK_BYTES[fmt]:
        raise ValueError(
            f"blocks holds {blocks.size} bytes; {fmt} of shape {shape} needs {n_blocks} blocks "
            f"x {BLOCK_BYTES[fmt]} bytes = {n_blocks * BLOCK_BYTES[fmt]}"
        )
    return np.ascontiguousarray(blocks).reshape(n_blocks, BLOCK_BYTES[fmt]), shape
