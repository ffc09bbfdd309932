"""Softmax as written on the board, made numerically safe.

softmax(x)_i = exp(x_i) / sum_j exp(x_j). Computed literally, exp(1000) overflows to inf and
the result is nan. Subtracting the row maximum first changes nothing mathematically (the
factor exp(-max) cancels) but keeps every exponent <= 0, so nothing overflows.
"""

from __future__ import annotations

import numpy as np

from ._validation import as_float_array

__all__ = ["softmax", "log_softmax", "naive_softmax"]


def _check_axis(arr: np.ndarray, axis: int) -> None:
    if not isinstance(axis, (int, np.integer)) or not -arr.ndim <= axis < max(arr.ndim, 1):
        raise ValueError(f"axis={axis!r} is out of range for x of shape {arr.shape}")


def _shifted(x, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(x - max, mask_of_rows_that_are_all_-inf)`` along ``axis``."""
    arr = as_float_array(x, "x")
    _check_axis(arr, axis)
    if np.isnan(arr).any():
        raise ValueError("x contains nan; softmax of nan is undefined")
    if np.isposinf(arr).any():
        raise ValueError("x contains +inf; softmax would be nan (inf - inf)")
    m = np.max(arr, axis=axis, keepdims=True)
    all_masked = np.isneginf(m)
    if all_masked.any():
        raise ValueError(
            "x has a row whose entries are all -inf (every position masked out); "
            "softmax over it is undefined"
        )
    return arr - m, m


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Args:
        x: real array of any shape ``(..., n)``; ``-inf`` entries get probability exactly 0.
        axis: the axis that sums to one.

    Returns:
        Array of the same shape and float dtype as ``x`` (float32 stays float32).

    Raises:
        TypeError: ``x`` is not numeric. ValueError: ``x`` is empty, contains nan or +inf, or
        has a row that is entirely ``-inf``.
    """
    z, _ = _shifted(x, axis)
    e = np.exp(z)  # every exponent <= 0: no overflow; exp(-inf) == 0 exactly
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis: int = -1) -> np.ndarray:
    """Stable ``log(softmax(x))``: ``x - max - log(sum(exp(x - max)))``, same shape and dtype."""
    z, _ = _shifted(x, axis)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def naive_softmax(x, axis: int = -1) -> np.ndarray:
    """The textbook formula with no max-subtraction: overflows for large logits (on purpose).

    Used in lecture 01 to show why the stable version exists; don't use it elsewhere.
    """
    arr = as_float_array(x, "x")
    _check_axis(arr, axis)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(arr)
        return e / np.sum(e, axis=axis, keepdims=True)
