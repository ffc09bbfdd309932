"""llama.cpp's block formats, read back to float32: what a GGUF file's quantised weights mean.

A quantised tensor is cut into **blocks of 32 weights** (along its rows, in memory order); each
block stores one or two float16 numbers and 32 small integers ``q``::

    Q8_0   d (f16), 32 x int8 q                    w = d * q               34 bytes: 8.5 bits/weight
    Q4_0   d (f16), 16 bytes of 4-bit q            w = d * (q - 8)         18 bytes: 4.5 bits/weight
    Q4_1   d (f16), m (f16), 16 bytes of 4-bit q   w = d * q + m           20 bytes: 5.0 bits/weight

In the 4-bit formats byte ``j`` holds weight ``j`` in its low four bits and weight ``j + 16`` in
its high four bits. :func:`dequantize` computes exactly what ``gguf.quants.dequantize`` computes
(float32 products, then the float32 sum): the tests hold the two equal bit for bit on every
tensor of SmolLM2's file. numpy only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BLOCK_SIZE", "BLOCK_BYTES", "dequantize"]

BLOCK_SIZE = 32  # weights per block, in every format here
#: bytes per block of 32 weights
BLOCK_BYTES = {"Q8_0": 2 + 32, "Q4_0": 2 + 16, "Q4_1": 2 + 2 + 16}


def _check_blocks(blocks, fmt: str, shape) -> tuple[np.ndarray, tuple[int, ...]]:
    if fmt not in BLOCK_BYTES:
        raise ValueError(f"fmt must be one of {sorted(BLOCK_BYTES)}, got {fmt!r}")
    if not isinstance(blocks, np.ndarray) or blocks.dtype != np.uint8:
        got = f"{blocks.dtype} array" if isinstance(blocks, np.ndarray) else type(blocks).__name__
        raise TypeError(f"blocks must be a uint8 numpy array (the file's bytes), got {got}")
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of ints, got {shape!r}") from None
    if not shape or any(s < 1 for s in shape) or shape[-1] % BLOCK_SIZE:
        raise ValueError(
            f"shape must be positive sizes whose last one is a multiple of {BLOCK_SIZE} "
            f"(blocks run along rows), got {shape}"
        )
    n_blocks = int(np.prod(shape)) // BLOCK_SIZE
    if blocks.size != n_blocks * BLOCK_BYTES[fmt]:
        raise ValueError(
            f"blocks holds {blocks.size} bytes; {fmt} of shape {shape} needs {n_blocks} blocks "
            f"x {BLOCK_BYTES[fmt]} bytes = {n_blocks * BLOCK_BYTES[fmt]}"
        )
    return blocks.reshape(n_blocks, BLOCK_BYTES[fmt]), shape


def _nibbles(packed: np.ndarray) -> np.ndarray:
    """``(n, 16)`` bytes -> ``(n, 32)`` 4-bit values: the 16 low halves, then the 16 high."""
    return np.concatenate([packed & 0x0F, packed >> 4], axis=1)  # (n, 32) uint8


def dequantize(blocks: np.ndarray, fmt: str, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 weights ``shape`` stored in ``blocks`` (uint8, the file's bytes) as ``fmt``.

    ``fmt`` is "Q8_0", "Q4_0" or "Q4_1" (see the module docstring); ``shape``'s last size is a
    multiple of 32. Raises ``ValueError`` when the byte count does not fit ``fmt`` and ``shape``.
    """
    b, shape = _check_blocks(blocks, fmt, shape)  # (n_blocks, bytes per block)
    d = b[:, 0:2].copy().view(np.float16).astype(np.float32)  # (n, 1): the scale
    if fmt == "Q8_0":
        q = b[:, 2:].copy().view(np.int8).astype(np.float32)  # (n, 32)
        w = q * d
    elif fmt == "Q4_0":
        q = _nibbles(b[:, 2:]).astype(np.float32) - 8  # (n, 32): 0..15 -> -8..7
        w = d * q
    else:  # Q4_1
        m = b[:, 2:4].copy().view(np.float16).astype(np.float32)  # (n, 1): the minimum
        q = _nibbles(b[:, 4:]).astype(np.float32)  # (n, 32): 0..15
        w = d * q + m
    return w.reshape(shape)
