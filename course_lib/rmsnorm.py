"""RMSNorm (Zhang & Sennrich 2019): LayerNorm without the mean, as in Llama and most current LLMs.

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
import torch
from torch import nn

from ._validation import as_float_array, check_last_dim, check_positive_int

__all__ = ["rms_norm", "RMSNorm"]


def _check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"eps must be a number >= 0, got {eps!r}")
    return float(eps)


def rms_norm(
    x: np.ndarray | torch.Tensor, weight: np.ndarray | torch.Tensor, eps: float = 1e-6
) -> np.ndarray | torch.Tensor:
    """``weight * x / sqrt(mean(x ** 2, last axis) + eps)``, numpy or torch.

    Args:
        x: ``(..., d)``, a numpy array or torch tensor.
        weight: the gain ``gamma``, ``(d,)``, of the same kind as ``x``.
        eps: added inside the square root (keeps an all-zero token finite).

    Returns:
        ``(..., d)``, same type as ``x``. A torch input is normalised in float32 (or float64 if it
        is float64) and cast back before the gain, as ``transformers``' ``LlamaRMSNorm`` does.

    Raises:
        ValueError: ``weight`` is not ``(d,)``; ``eps < 0``.
        TypeError: mixed numpy/torch arguments.
    """
    eps = _check_eps(eps)
    if isinstance(x, torch.Tensor):
        if not isinstance(weight, torch.Tensor):
            raise TypeError(f"x is a torch tensor, so weight must be one too, got {type(weight)}")
        if weight.shape != x.shape[-1:]:
            raise ValueError(
                f"weight must have shape (d,) = ({x.shape[-1]},), got {tuple(weight.shape)}"
            )
        work = x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)
        scaled = work * torch.rsqrt(work.pow(2).mean(dim=-1, keepdim=True) + eps)
        return weight * scaled.to(x.dtype)
    x = as_float_array(x, "x", min_ndim=1)
    weight = as_float_array(weight, "weight", min_ndim=1)
    if weight.shape != x.shape[-1:]:
        raise ValueError(f"weight must have shape (d,) = ({x.shape[-1]},), got {weight.shape}")
    return weight * x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps)


class RMSNorm(nn.Module):
    """RMSNorm over the last axis with a learned gain ``weight`` (initialised to ones), no bias.

    Args:
        d_model: feature width.
        eps: added to the mean square (Llama: 1e-6 or 1e-5).

    ``forward(x)``: ``(..., d_model)`` -> ``(..., d_model)``; see :func:`rms_norm`.
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(check_positive_int(d_model, "d_model")))
        self.eps = _check_eps(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(check_last_dim(x, "x", self.weight.shape[0]), self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"
