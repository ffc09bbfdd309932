"""The residual connection around a sublayer, written once for post-LN and pre-LN.

The encoder and decoder layers of lecture 05 wrap each sublayer the same way; the only choice
is where the LayerNorm goes (the lecture's point):

* post-LN (2017 paper, BERT): ``norm(x + dropout(sublayer(x)))``
* pre-LN (GPT-2, most models since): ``x + dropout(sublayer(norm(x)))``

GPT and the Llama-style model are pre-LN only: their blocks write the two lines out.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

__all__ = ["residual"]


def residual(
    x: torch.Tensor,
    sublayer: Callable[[torch.Tensor], torch.Tensor],
    norm: nn.Module,
    dropout: nn.Module,
    norm_first: bool = False,
) -> torch.Tensor:
    """``x + dropout(sublayer(norm(x)))`` if ``norm_first`` else ``norm(x + dropout(sublayer(x)))``."""
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))
