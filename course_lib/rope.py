"""Rotary position embedding (RoPE, Su et al. 2021, "RoFormer") in numpy, for the board.

Lecture 04 *adds* a position vector to each token embedding. RoPE instead *rotates* the query
and key vectors of every head, after the projections, by an angle proportional to the token's
position. A head vector ``x`` of width ``d`` is read as ``d / 2`` pairs; pair ``i`` turns by

    angle(pos, i) = pos * omega_i,        omega_i = theta ** (-2i / d)      (i = 0 .. d/2 - 1)

the same frequencies as the sinusoidal table of lecture 04. Because a rotation by ``a`` followed
by the transpose of a rotation by ``b`` is a rotation by ``a - b``,

    rope(q, m) . rope(k, n) = q^T R(m)^T R(n) k = q^T R(n - m) k

depends on the positions only through the distance ``n - m``.

Which two coordinates form a pair is a convention:

* **interleaved** (this module, the RoFormer paper, Meta's original Llama code): pair ``i`` is
  coordinates ``(2i, 2i + 1)``, as in lecture 04's sin/cos columns;
* **halves** (``transformers``' ``rotate_half``, GPT-NeoX): pair ``i`` is ``(i, i + d/2)``.

The two are the same rotation applied to permuted coordinates, and a dot product does not change
when both ``q`` and ``k`` are permuted the same way: a model trained with one convention runs with
the other once the rows of ``W_Q`` and ``W_K`` of each head are permuted
(:func:`halves_to_interleaved`; ``course_lib.interop.from_hf`` does exactly that for a Llama).
"""

from __future__ import annotations

import numbers

import numpy as np

from ._validation import as_float_array, check_positive_int

__all__ = ["rope_frequencies", "rope", "halves_to_interleaved"]


def rope_frequencies(head_dim: int, theta: float = 10000.0) -> np.ndarray:
    """``omega_i = theta ** (-2i / head_dim)`` for ``i = 0 .. head_dim/2 - 1`` (float64).

    Pair 0 turns by 1 radian per position, the last pair by almost ``1 / theta``.

    Raises:
        ValueError: ``head_dim`` is not a positive even number, or ``theta`` is not finite > 1.
    """
    head_dim = check_positive_int(head_dim, "head_dim")
    if head_dim % 2:
        raise ValueError(
            f"head_dim must be even (coordinates are rotated in pairs), got {head_dim}"
        )
    if isinstance(theta, (bool, np.bool_)) or not isinstance(theta, (numbers.Real, np.number)):
        raise TypeError(f"theta must be a real number, got {type(theta).__name__}")
    if not 1 < theta < np.inf:
        raise ValueError(f"theta must be a finite number > 1, got {theta!r}")
    return float(theta) ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)


def _positions(positions, n: int) -> np.ndarray:
    pos = np.asarray(positions)
    if pos.dtype.kind not in "iuf" or pos.dtype == np.bool_:
        raise TypeError(f"positions must be integers (token positions), got dtype {pos.dtype}")
    if pos.ndim == 0 or pos.shape[-1] != n:
        raise ValueError(
            f"positions must have shape (n,) or (..., n) with n = {n} (one position per row of "
            f"x), got shape {pos.shape}"
        )
    if pos.dtype.kind == "f" and not np.array_equal(pos, np.round(pos)):
        raise ValueError(
            "positions must be whole numbers (token positions 0, 1, 2, ...), got "
            f"{pos[np.isfinite(pos) & (pos != np.round(pos))][:1].tolist() or pos.ravel()[:3].tolist()}"
        )
    return pos.astype(np.float64)


def rope(x: np.ndarray, positions: np.ndarray, theta: float = 10000.0) -> np.ndarray:
    """Rotate each pair ``(2i, 2i + 1)`` of ``x`` by the angle ``position * omega_i``.

    Args:
        x: queries or keys of one or more heads, ``(..., n, head_dim)``.
        positions: the position of each of the ``n`` rows, integers of shape ``(n,)`` or any
            shape ``(..., n)`` that broadcasts against ``x.shape[:-1]`` (e.g. ``(batch, 1, n)``
            for ``(batch, heads, n, head_dim)``). With a KV cache the new token's position is
            the number of tokens already seen, not 0.
        theta: the base of the frequencies (10,000 in RoFormer and Llama 1/2, 500,000 in Llama 3).

    Returns:
        The rotated array, same shape as ``x``. Angles are computed in float64, then the cosine
        and sine are cast to ``x``'s dtype. The torch version inside lecture 13's model is
        :func:`course_lib.nn.rope.rotate`.

    Raises:
        TypeError: ``x`` is not an array of real numbers, or positions are not integers.
        ValueError: ``head_dim`` is odd, or ``positions`` does not have ``n`` entries last.
    """
    x = as_float_array(x, "x", min_ndim=2)
    n, head_dim = x.shape[-2], x.shape[-1]
    if head_dim % 2:
        raise ValueError(
            f"x's last axis (head_dim) must be even (pairs are rotated), got shape {tuple(x.shape)}"
        )
    omega = rope_frequencies(head_dim, theta)  # (head_dim/2,)
    angle = _positions(positions, n)[..., None] * omega  # (..., n, head_dim/2)
    cos, sin = np.cos(angle).astype(x.dtype), np.sin(angle).astype(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., n, head_dim/2) each
    out = np.stack((even * cos - odd * sin, even * sin + odd * cos), axis=-1)  # (..., n, d/2, 2)
    return out.reshape(out.shape[:-2] + (head_dim,))  # (..., n, head_dim): pairs interleaved


def halves_to_interleaved(head_dim: int) -> np.ndarray:
    """The index permutation from the *halves* pairing to the *interleaved* one.

    ``x_interleaved = x_halves[..., perm]`` with ``perm = [0, d/2, 1, d/2 + 1, ...]``: coordinate
    ``2i`` takes coordinate ``i`` and coordinate ``2i + 1`` takes ``i + d/2``. Permuting the rows
    of each head's ``W_Q`` and ``W_K`` this way turns weights trained with ``transformers``'
    ``rotate_half`` into weights for :func:`rope` (the inverse is ``np.argsort(perm)``).
    """
    head_dim = check_positive_int(head_dim, "head_dim")
    if head_dim % 2:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    half = head_dim // 2
    return np.stack([np.arange(half), np.arange(half) + half], axis=-1).reshape(-1)
