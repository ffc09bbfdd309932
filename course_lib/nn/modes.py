"""``with eval_mode(model):`` — run a model in eval mode and give it back in the mode it had."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from torch import nn

from .._validation import check_module

__all__ = ["eval_mode"]


def eval_mode(model: nn.Module) -> AbstractContextManager[nn.Module]:
    """``with eval_mode(model):`` switches ``model`` to eval mode (no dropout) for the block, then
    restores its mode, even if the block raises. The one place the course writes this."""
    return _eval_mode(check_module(model))


@contextmanager
def _eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
