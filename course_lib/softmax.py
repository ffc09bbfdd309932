"""Softmax as written on the board, made numerically safe.

softmax(x)_i = exp(x_i) / sum_j exp(x_j). Computed literally, exp(1000) overflows to inf and
the result is nan. Subtracting the row maximum first changes nothing mathematically (the
factor exp(-max) cancels) but keeps every exponent <= 0, so nothing overflows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ._validation import as_float_array, check_float_buffer, check_float_dtype, check_positive_int

__all__ = [
    "softmax",
    "log_softmax",
    "naive_softmax",
    "softmax_inplace_unchecked",
    "softmax_jacobian",
]


def _check_axis(arr: np.ndarray, axis: int) -> None:
    if (
        isinstance(axis, bool)
        or not isinstance(axis, (int, np.integer))
        or not -arr.ndim <= axis < max(arr.ndim, 1)
    ):
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


def softmax(x: ArrayLike, axis: int = -1) -> np.ndarray:
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


def log_softmax(x: ArrayLike, axis: int = -1) -> np.ndarray:
    """Stable ``log(softmax(x))``: ``x - max - log(sum(exp(x - max)))``, same shape and dtype."""
    z, _ = _shifted(x, axis)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def softmax_jacobian(x: ArrayLike) -> np.ndarray:
    """``d softmax(x)_i / d x_j = p_i (delta_ij - p_j)``, i.e. ``diag(p) - p p^T``, for every row
    of ``x`` ``(..., n)`` (softmax along the last axis): shape ``(..., n, n)``. Lectures 01 and 99
    use it to show that a saturated softmax has (almost) no gradient."""
    p = softmax(x, axis=-1)
    return p[..., :, None] * np.eye(p.shape[-1], dtype=p.dtype) - p[..., :, None] * p[..., None, :]


def softmax_inplace_unchecked(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable softmax of a float array, computed in place in ``x`` and returned; no checks.

    For hot paths (attention) whose caller has already ensured every row has a finite maximum:
    it saves the validation passes and the temporaries of :func:`softmax` on large score matrices.
    Only the type and ``axis`` are checked (no pass over the values).
    """
    _check_axis(check_float_buffer(x, "x"), axis)
    x -= np.max(x, axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= np.sum(x, axis=axis, keepdims=True)
    return x


def naive_softmax(x: ArrayLike, axis: int = -1) -> np.ndarray:
    """The textbook formula with no max-subtraction: overflows for large logits (on purpose).

    Used in lecture 01 to show why the stable version exists; don't use it elsewhere.
    """
    arr = as_float_array(x, "x")
    _check_axis(arr, axis)
    if np.isnan(arr).any():
        raise ValueError("x contains nan; softmax of nan is undefined")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(arr)
        return e / np.sum(e, axis=axis, keepdims=True)


# --- Online (streaming) softmax: lecture 10 ------------------------------------------------
#
# The stable softmax above needs the row maximum *before* it can exponentiate anything, so it
# reads the whole row twice. The online softmax reads the row in blocks and keeps two numbers
# per row: the maximum m seen so far and the sum s = sum_j exp(x_j - m) *relative to that m*.
# When a later block raises the maximum from m to m', every term already in s is too large by
# the factor exp(m' - m), so s is multiplied by exp(m - m') <= 1 (the "rescaling"). At the end,
# m + log(s) is the log-sum-exp of the row and softmax(x)_i = exp(x_i - m - log s).

__all__ += [
    "OnlineSoftmaxState",
    "online_softmax_start",
    "online_softmax_step",
    "online_softmax_update",
    "online_softmax",
]


class OnlineSoftmaxState(NamedTuple):
    """What the online softmax remembers about each row after some blocks.

    Attributes:
        running_max: ``(...,)`` the largest logit seen so far (``-inf`` before any block).
        running_sum: ``(...,)`` ``sum_j exp(x_j - running_max)`` over the logits seen so far.
    """

    running_max: np.ndarray
    running_sum: np.ndarray

    @property
    def logsumexp(self) -> np.ndarray:
        """``log(sum_j exp(x_j))`` of everything seen so far: ``running_max + log(running_sum)``."""
        with np.errstate(divide="ignore"):  # log(0) = -inf for a row that saw only -inf
            return self.running_max + np.log(self.running_sum)


def online_softmax_start(
    shape: tuple[int, ...] = (), dtype: DTypeLike = np.float64
) -> OnlineSoftmaxState:
    """The state before any block: maximum ``-inf`` and sum 0, for rows of batch shape ``shape``."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape must be an int or a tuple of ints, got {type(shape).__name__}")
    shape = tuple(
        check_positive_int(s, f"shape[{i}]", allow_zero=True) for i, s in enumerate(shape)
    )
    dtype = check_float_dtype(dtype, "dtype", "the running maximum starts at -inf")
    return OnlineSoftmaxState(np.full(shape, -np.inf, dtype=dtype), np.zeros(shape, dtype=dtype))


def _online_step(
    running_max: np.ndarray, running_sum: np.ndarray, block: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unchecked core of :func:`online_softmax_step` (also the inner loop of chunked attention)."""
    new_max = np.maximum(running_max, np.max(block, axis=-1))
    # A row that has seen only -inf so far keeps max -inf; exponentiate against 0 instead,
    # so exp(-inf - 0) = 0 rather than exp(-inf - (-inf)) = nan. Its sum stays exactly 0.
    safe_max = np.where(np.isneginf(new_max), 0, new_max).astype(block.dtype, copy=False)
    rescale = np.exp(running_max - safe_max)  # exp(m - m') <= 1: old terms shrink to the new max
    p = np.exp(block - safe_max[..., None])  # this block's terms, relative to the new max
    new_sum = rescale * running_sum + np.sum(p, axis=-1)
    return new_max, new_sum, rescale, p


def _check_state(state, batch: tuple[int, ...], dtype) -> OnlineSoftmaxState:
    if not isinstance(state, tuple) or len(state) != 2:
        raise TypeError(
            "state must be an OnlineSoftmaxState (running_max, running_sum), "
            f"got {type(state).__name__}; start one with online_softmax_start()"
        )
    m = np.asarray(state[0], dtype=dtype)
    s = np.asarray(state[1], dtype=dtype)
    for name, arr in (("state.running_max", m), ("state.running_sum", s)):
        if arr.shape != batch:
            raise ValueError(
                f"{name} has shape {arr.shape} but the block has {batch} rows "
                f"(block (..., b) needs a state of shape (...,) = {batch})"
            )
    return OnlineSoftmaxState(m, s)


def _check_block(block, name: str = "block") -> np.ndarray:
    arr = as_float_array(block, name, min_ndim=1)
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains nan; softmax of nan is undefined")
    if np.isposinf(arr).any():
        raise ValueError(f"{name} contains +inf; softmax would be nan (inf - inf)")
    return arr


def online_softmax_step(
    state: OnlineSoftmaxState, block: ArrayLike
) -> tuple[OnlineSoftmaxState, np.ndarray, np.ndarray]:
    """Fold one block of logits into the running state, and return what attention needs too.

    With ``m`` the old maximum and ``m' = max(m, max(block))``::

        rescale = exp(m - m')                  # shrink the old sum to the new reference
        p_j     = exp(block_j - m')            # the new terms, never above 1
        s'      = rescale * s + sum_j p_j

    Args:
        state: the state so far, arrays of shape ``(...,)``.
        block: logits ``(..., b)``; ``-inf`` entries (masked) contribute exactly 0.

    Returns:
        ``(new_state, rescale, p)`` with shapes ``(...,)``, ``(...,)`` and ``(..., b)``.
        Chunked attention multiplies its output accumulator by ``rescale`` and adds ``p @ v``.
    """
    arr = _check_block(block)
    m, s = _check_state(state, arr.shape[:-1], arr.dtype)
    new_max, new_sum, rescale, p = _online_step(m, s, arr)
    return OnlineSoftmaxState(new_max, new_sum), rescale, p


def online_softmax_update(state: OnlineSoftmaxState, block: ArrayLike) -> OnlineSoftmaxState:
    """The new ``(running_max, running_sum)`` after seeing ``block`` ``(..., b)``; see
    :func:`online_softmax_step` for the formula."""
    return online_softmax_step(state, block)[0]


def online_softmax(x: ArrayLike, block_size: int, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis`` computed by reading the row in blocks of ``block_size``.

    Pass 1 streams over the blocks with :func:`online_softmax_update`, keeping only a running
    maximum and a running sum per row; pass 2 writes ``exp(x - logsumexp)``. Equal to
    :func:`softmax` up to rounding (about 1e-16 in float64).

    Args:
        x: real array ``(..., n)`` (``axis`` selects the row; ``-inf`` entries get 0).
        block_size: how many entries of a row are read at a time (any positive int; the last
            block may be shorter).
        axis: the axis that sums to one.

    Returns:
        Array of the same shape and float dtype as ``x``.

    Raises:
        TypeError: ``x`` is not numeric or ``block_size`` is not an int. ValueError: ``x`` is
        empty, contains nan or +inf, has a row that is entirely ``-inf``, or ``block_size < 1``.
    """
    arr = _check_block(x, "x")
    _check_axis(arr, axis)
    block_size = check_positive_int(block_size, "block_size")
    rows = np.moveaxis(arr, axis, -1)
    m = np.full(rows.shape[:-1], -np.inf, dtype=rows.dtype)
    s = np.zeros(rows.shape[:-1], dtype=rows.dtype)
    for start in range(0, rows.shape[-1], block_size):
        m, s, _, _ = _online_step(m, s, rows[..., start : start + block_size])
    if np.isneginf(m).any():
        raise ValueError(
            "x has a row whose entries are all -inf (every position masked out); "
            "softmax over it is undefined"
        )
    lse = OnlineSoftmaxState(m, s).logsumexp
    return np.moveaxis(np.exp(rows - lse[..., None]), -1, axis)
