"""RMSNorm (Zhang & Sennrich 2019), the norm of Llama and most current LLMs; LayerNorm is
torch's own ``nn.LayerNorm``.

    LN(x)      = gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta       (lecture 05)
    RMSNorm(x) = gamma * x / sqrt(mean(x ** 2) + eps)                    (lecture 13)

The numpy version of the formula, for the board, is :func:`course_lib.rms_norm`.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_eps, check_last_dim, check_positive_int

__all__ = ["RMSNorm"]


class RMSNorm(nn.Module):
    """RMSNorm over the last axis with a learned gain ``weight`` (initialised to ones), no bias.

    Args:
        d_model: feature width.
        eps: added to the mean square (Llama: 1e-6 or 1e-5); >= 0.

    ``forward(x)``: ``(..., d_model)`` -> ``(..., d_model)``. The input is normalised in float32
    (float64 stays float64) and cast back before the gain, as ``transformers``' ``LlamaRMSNorm``.
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(check_positive_int(d_model, "d_model")))
        self.eps = check_eps(eps)
        self.checks = True  # off inside a model whose forward has checked its input

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.checks:
            check_last_dim(x, "x", self.weight.shape[0])
        work = x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)
        scaled = work * torch.rsqrt(work.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., d)
        return self.weight * scaled.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"
