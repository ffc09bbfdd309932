"""The position-wise feed-forward networks: the 2017 one (lecture 05) and SwiGLU (lecture 13).

* :class:`FeedForward`: ``linear2(dropout(act(linear1(x))))``, d_model -> d_ff -> d_model, with
  ReLU (2017 paper), GELU (BERT) or its tanh form ``gelu_new`` (GPT-2).
* :class:`SwiGLUFeedForward` (Shazeer 2020, Llama): three matrices, one hidden vector through
  SiLU gating a second, linear one: ``W_down(silu(W_gate x) * (W_up x))``. At equal parameter
  count its hidden width is two thirds of the ReLU FFN's (:func:`swiglu_hidden_size`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import check_dropout, check_flag, check_last_dim, check_positive_int

__all__ = ["FeedForward", "SwiGLUFeedForward", "swiglu_hidden_size", "ACTIVATIONS"]


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


# name -> function; "gelu_new" is the tanh approximation GPT-2 uses (Hugging Face's name for it).
ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_new": _gelu_tanh}


def check_activation(activation, name: str = "activation") -> str:
    """Return ``activation`` if it is one of :data:`ACTIVATIONS`' names, else raise naming it."""
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"{name} must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    return activation


class FeedForward(nn.Module):
    """Position-wise FFN ``linear2(dropout(act(linear1(x))))``: d_model -> d_ff -> d_model.

    Args:
        d_model: width of input and output.
        d_ff: width of the hidden layer (4 * d_model in the 2017 paper, BERT and GPT-2).
        dropout: on the hidden activations (training only).
        bias: biases in both linear maps.
        activation: ``"relu"`` (2017 paper), ``"gelu"`` (exact, BERT) or ``"gelu_new"``
            (tanh approximation, GPT-2).

    ``x (..., d_model) -> (..., d_model)``; every position is transformed on its own.
    """

    def __init__(
        self, d_model: int, d_ff: int, dropout: float = 0.0, bias: bool = True,
        activation: str = "relu",
    ):  # fmt: skip
        super().__init__()
        check_positive_int(d_model, "d_model")
        check_positive_int(d_ff, "d_ff")
        self.activation = check_activation(activation)
        self.linear1 = nn.Linear(d_model, d_ff, bias=check_flag(bias, "bias"))
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.checks = True  # off inside a model whose forward has checked its input

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.checks:
            check_last_dim(x, "x", self.linear1.in_features, like=self)
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))


class SwiGLUFeedForward(nn.Module):
    """``down(silu(gate(x)) * up(x))``: ``d_model -> d_ff -> d_model``, no biases by default.

    Args:
        d_model: input and output width.
        d_ff: hidden width (each of ``gate`` and ``up`` maps to it).
        bias: biases on the three linear maps (Llama: none).

    ``forward(x)``: ``(..., d_model)`` -> ``(..., d_model)``, position by position. The names
    ``gate``, ``up``, ``down`` match ``transformers``' ``LlamaMLP`` (``gate_proj``, ...).
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = False):
        super().__init__()
        d_model = check_positive_int(d_model, "d_model")
        d_ff = check_positive_int(d_ff, "d_ff")
        bias = check_flag(bias, "bias")
        self.gate = nn.Linear(d_model, d_ff, bias=bias)
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)
        self.checks = True  # off inside a model whose forward has checked its input

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.checks:
            check_last_dim(x, "x", self.gate.in_features, like=self)
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
