"""The residual connection around a sublayer, written once for post-LN and pre-LN.

Every transformer layer (encoder, decoder, GPT block) wraps each sublayer the same way;
the only choice is where the LayerNorm goes:

* post-LN (2017 paper, BERT): ``norm(x + dropout(sublayer(x)))``
* pre-LN (GPT-2, most models since): ``x + dropout(sublayer(norm(x)))``

It is a function, not a module, so that a layer keeps its ``norm1``/``dropout1``... as its
own attributes (the names in its ``state_dict`` and in torch's layers).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .._validation import check_callable, check_tensor

__all__ = ["residual"]


def residual(
    x: torch.Tensor,
    sublayer: Callable[[torch.Tensor], torch.Tensor],
    norm: nn.Module,
    dropout: nn.Module,
    norm_first: bool = False,
) -> torch.Tensor:
    """``x + dropout(sublayer(norm(x)))`` if ``norm_first`` else ``norm(x + dropout(sublayer(x)))``.

    ``sublayer`` maps ``(batch, n, d_model)`` to the same shape (attention bound to its other
    arguments, or the FFN); the result has ``x``'s shape.
    """
    check_tensor(x, "x", None, "(batch, n, d_model)")
    for name, fn in (("sublayer", sublayer), ("norm", norm), ("dropout", dropout)):
        check_callable(fn, name)
    if norm_first:
        return x + dropout(_same_shape(sublayer(norm(x)), x))
    return norm(x + dropout(_same_shape(sublayer(x), x)))


def _same_shape(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``out`` if the sublayer kept ``x``'s shape; a broadcast in ``x + out`` would hide a bug."""
    if not isinstance(out, torch.Tensor) or out.shape != x.shape:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"sublayer must return the shape of x {tuple(x.shape)}, got {got}")
    return out
