"""The SwiGLU feed-forward layer (Shazeer 2020, "GLU Variants Improve Transformer"), as in Llama.

The 2017 FFN (lecture 05) is ``W_2 ReLU(W_1 x)``: two matrices, one nonlinearity. SwiGLU uses
*three* matrices: one hidden vector is passed through SiLU (``silu(z) = z * sigmoid(z)``) and
multiplies, element by element, a second, linear one (the "gate")::

    SwiGLU(x) = W_down( silu(W_gate x) * (W_up x) )

With hidden width ``d_ff`` it has ``3 * d_model * d_ff`` weights instead of ``2 * d_model * d_ff``,
so at equal parameter count its hidden width is two thirds of the ReLU FFN's: Llama uses
``d_ff = 2/3 * 4 d_model``, rounded up to a multiple of 256 (:func:`swiglu_hidden_size`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._validation import check_flag, check_last_dim, check_positive_int

__all__ = ["SwiGLUFeedForward", "swiglu_hidden_size"]


class SwiGLUFeedForward(nn.Module):
    """``down(silu(gate(x)) * up(x))``: ``d_model -> d_ff -> d_model``, no biases by default.

    Args:
        d_model: input and output width.
        d_ff: hidden width (each of ``gate`` and ``up`` maps to it).
        bias: biases on the three linear maps (Llama: none).

    ``forward(x)``: ``(..., d_model)`` -> ``(..., d_model)``, position by position.
    The attribute names ``gate``, ``up``, ``down`` match ``transformers``' ``LlamaMLP``
    (``gate_proj``, ``up_proj``, ``down_proj``).
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = False):
        super().__init__()
        d_model = check_positive_int(d_model, "d_model")
        d_ff = check_positive_int(d_ff, "d_ff")
        bias = check_flag(bias, "bias")
        self.gate = nn.Linear(d_model, d_ff, bias=bias)
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = check_last_dim(x, "x", self.gate.in_features)
        return self.down(F.silu(self.gate(x)) * self.up(x))  # (..., d_ff) -> (..., d_model)


def swiglu_hidden_size(d_model: int, multiple_of: int = 1) -> int:
    """Llama's SwiGLU width: ``2/3 * 4 * d_model``, rounded up to a multiple of ``multiple_of``.

    ``3 * d_model * swiglu_hidden_size(d_model)`` is (up to the rounding) the ``8 d_model^2``
    weights of a ReLU FFN with ``d_ff = 4 d_model``. Llama 1 7B: ``d_model = 4096``,
    ``multiple_of = 256`` -> 11,008.
    """
    d_model = check_positive_int(d_model, "d_model")
    multiple_of = check_positive_int(multiple_of, "multiple_of")
    hidden = int(2 * 4 * d_model / 3)
    return multiple_of * -(-hidden // multiple_of)
