"""Input checks shared by the public functions: clear errors at the boundary.

Every public function in ``course_lib`` validates its arguments here, so a student who passes
the wrong thing reads which argument was wrong, the shape it had and the shape it needed,
instead of a numpy broadcasting traceback or a silent NaN.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__: list[str] = []  # private helpers; nothing is re-exported


def as_float_array(x, name: str, *, min_ndim: int = 0) -> np.ndarray:
    """Return ``x`` as a floating numpy array, or raise a ``TypeError``/``ValueError`` naming it.

    Integer and boolean inputs are promoted to float64; float16/32/64 are kept as they are, so
    float32 stays float32. Strings, objects and complex numbers are refused.
    """
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists, for instance
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}") from exc
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind != "f":
        raise TypeError(
            f"{name} must contain real numbers, got dtype {arr.dtype} ({type(x).__name__})"
        )
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}"
        )
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); it needs at least one element")
    return arr


def as_bool_mask(mask, name: str = "mask") -> np.ndarray:
    """Return ``mask`` as a boolean array (True = may attend), refusing non-boolean dtypes."""
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        raise TypeError(
            f"{name} must be boolean (True = may attend), got dtype {arr.dtype}; "
            "build it with causal_mask()/padding_mask() or a comparison such as `x > 0`"
        )
    return arr


def check_positive_int(value, name: str, *, allow_zero: bool = False) -> int:
    """Return ``value`` as an ``int`` if it is a (positive) integer, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    low = 0 if allow_zero else 1
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def broadcast_shape(shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Broadcast the named shapes together, or raise a ``ValueError`` that names them all."""
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        listed = ", ".join(f"{k} {v}" for k, v in shapes.items())
        raise ValueError(f"shapes do not broadcast: {listed}") from None
