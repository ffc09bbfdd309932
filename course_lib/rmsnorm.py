"""RMSNorm (Zhang & Sennrich 2019) in numpy: LayerNorm without the mean, as in Llama.

LayerNorm (lecture 05) centres each token and divides by its standard deviation, then applies a
gain and a shift::

    LN(x)      = gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta

RMSNorm drops the centring and the shift and divides by the root mean square instead::

    RMSNorm(x) = gamma * x / sqrt(mean(x ** 2) + eps)

For a token whose features already have mean 0 the two agree (with beta = 0). It has half the
parameters (no beta) and one reduction instead of two.
"""

from __future__ import annotations

import numpy as np

from ._validation import as_float_array, check_eps

__all__ = ["rms_norm"]


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """``weight * x / sqrt(mean(x ** 2, last axis) + eps)``.

    Args:
        x: ``(..., d)``.
        weight: the gain ``gamma``, ``(d,)``.
        eps: added inside the square root (keeps an all-zero token finite).

    Returns:
        ``(..., d)``. The torch module of lecture 13's model is :class:`course_lib.nn.RMSNorm`.

    Raises:
        ValueError: ``weight`` is not ``(d,)``; ``eps < 0``.
    """
    eps = check_eps(eps)
    x = as_float_array(x, "x", min_ndim=1)
    weight = as_float_array(weight, "weight", min_ndim=1)
    if weight.shape != x.shape[-1:]:
        raise ValueError(f"weight must have shape (d,) = ({x.shape[-1]},), got {weight.shape}")
    return weight * x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)
