"""The position-wise feed-forward network of a transformer layer, with its activation."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import check_dropout, check_last_dim, check_positive_int

__all__ = ["FeedForward", "ACTIVATIONS"]


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


# name -> function; "gelu_new" is the tanh approximation GPT-2 uses (Hugging Face's name for it).
ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_new": _gelu_tanh}


def check_activation(activation) -> str:
    """Return ``activation`` if it is one of :data:`ACTIVATIONS`' names, else raise."""
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
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
        self,
        d_model: int,
        d_ff: int,
        dropout: float = 0.0,
        bias: bool = True,
        activation: str = "relu",
    ):
        super().__init__()
        check_positive_int(d_model, "d_model")
        check_positive_int(d_ff, "d_ff")
        self.activation = check_activation(activation)
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(check_dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_last_dim(x, "x", self.linear1.in_features)
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))
