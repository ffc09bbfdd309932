"""LoRA: fine-tune a frozen linear layer through a low-rank update (Hu et al., 2021).

A linear layer ``y = x W^T + b`` with ``W`` of shape ``(out, in)`` is kept **frozen**; what is
trained is a product of two thin matrices, ``A (r, in)`` and ``B (out, r)`` with ``r`` much
smaller than ``in`` and ``out``::

    y = x W^T + b  +  (alpha / r) * x A^T B^T        scaling = alpha / r

``B`` starts at zero, so the adapted layer starts equal to the frozen one; ``A`` starts random
(``nn.Linear``'s default, as peft does). The layout is peft's (``lora_A`` an
``nn.Linear(in, r, bias=False)``, ``lora_B`` an ``nn.Linear(r, out, bias=False)``), so weights
copy across and the tests hold the layer to ``peft``'s LoRA to 1e-6. :meth:`LoRALinear.merge`
folds the update into one plain ``nn.Linear`` (``W + scaling * B A``): no extra cost at
inference.

The scaling is ``alpha / r``, not ``alpha``: with the same ``alpha``, a larger rank does not
make the update larger.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .._validation import (
    check_dropout,
    check_last_dim,
    check_module,
    check_positive_int,
    check_positive_number,
    check_token_sequence,
)

__all__ = ["LoRALinear", "apply_lora", "merge_lora", "trainable_parameter_count"]


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update ``(alpha / r) B A``.

    Args:
        base: the layer to adapt (its parameters are frozen: ``requires_grad=False``).
        r: rank of the update (>= 1).
        alpha: the update is scaled by ``alpha / r`` (> 0).
        dropout: dropout on the input of the update only (peft's ``lora_dropout``).

    Shapes: ``forward(x (..., in)) -> (..., out)``.
    """

    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0):
        super().__init__()
        r, alpha, dropout = _check_lora_settings(base, r, alpha, dropout)
        self.base = base.requires_grad_(False)  # frozen
        self.in_features, self.out_features = base.in_features, base.out_features  # as peft
        self.r, self.alpha, self.scaling = r, alpha, alpha / r
        self.lora_dropout = nn.Dropout(dropout)
        self.lora_A = nn.Linear(base.in_features, r, bias=False)  # kaiming-uniform, as peft
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)  # the update starts at zero
        self.lora_A.to(base.weight)  # same dtype and device as the frozen weight
        self.lora_B.to(base.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_last_dim(x, "x", self.in_features, "in_features", like=self)
        # (..., in) -> A -> (..., r) -> B -> (..., out)
        update = self.lora_B(self.lora_A(self.lora_dropout(x)))
        return self.base(x) + self.scaling * update

    @torch.no_grad()
    def merge(self) -> nn.Linear:
        """A new plain ``nn.Linear`` with weight ``W + scaling * B @ A`` (same bias): equal to
        this layer in eval mode. The layer itself is left unchanged."""
        merged = nn.Linear(self.base.in_features, self.base.out_features,
                           bias=self.base.bias is not None)  # fmt: skip
        merged.to(self.base.weight)
        delta = self.lora_B.weight @ self.lora_A.weight  # (out, r) @ (r, in) -> (out, in)
        merged.weight.copy_(self.base.weight + self.scaling * delta)
        if self.base.bias is not None:
            merged.bias.copy_(self.base.bias)
        return merged


def _check_lora_settings(base, r, alpha, dropout) -> tuple[int, float, float]:
    """LoRALinear's door: an ``nn.Linear`` to adapt, ``r >= 1``, ``alpha > 0``, a dropout rate."""
    if not isinstance(base, nn.Linear):
        raise TypeError(f"base must be a torch.nn.Linear, got {type(base).__name__}")
    r = check_positive_int(r, "r")
    alpha = check_positive_number(alpha, "alpha")
    return r, alpha, check_dropout(dropout)


def trainable_parameter_count(model: nn.Module) -> int:
    """How many numbers an optimiser would update: parameters with ``requires_grad``."""
    check_module(model)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def apply_lora(
    model: nn.Module,
    r: int,
    alpha: float,
    target_names: Sequence[str],
    dropout: float = 0.0,
) -> int:
    """Freeze ``model`` and wrap, in place, every ``nn.Linear`` whose attribute name is in
    ``target_names`` (e.g. ``["w_q", "w_v"]``, as peft's ``target_modules``) in a
    :class:`LoRALinear`. Returns the number of trainable parameters afterwards.

    Raises:
        ValueError: no layer of that name, r < 1, alpha <= 0; TypeError: a name that is not
            an ``nn.Linear``.
    """
    check_module(model)
    names = check_token_sequence(target_names, "target_names")
    if not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f"target_names must be a non-empty list of layer names, got {names!r}")
    r = check_positive_int(r, "r")
    alpha = check_positive_number(alpha, "alpha")
    check_dropout(dropout)
    targets = [(parent, name, child) for parent in model.modules()
               for name, child in parent.named_children() if name in names]  # fmt: skip
    for _, name, child in targets:  # every name checked before the model is touched
        if not isinstance(child, nn.Linear):
            raise TypeError(f"target_names: {name!r} is a {type(child).__name__}, not an nn.Linear")
    missing = [n for n in names if n not in {name for _, name, _ in targets}]
    if missing:
        raise ValueError(f"target_names: the model has no nn.Linear named {missing}")
    for p in model.parameters():
        p.requires_grad_(False)
    for parent, name, child in targets:
        setattr(parent, name, LoRALinear(child, r, alpha, dropout))
    return trainable_parameter_count(model)


def merge_lora(model: nn.Module) -> nn.Module:
    """Replace, in place, every :class:`LoRALinear` of ``model`` by its merged ``nn.Linear``
    (trainable again, like the rest of the model's parameters). Returns ``model``; given a
    bare :class:`LoRALinear` (which has no parent to replace it in), its merged ``nn.Linear``."""
    check_module(model)
    if isinstance(model, LoRALinear):
        return model.merge().requires_grad_(True)
    if not any(isinstance(m, LoRALinear) for m in model.modules()):
        raise ValueError("model has no LoRALinear layer to merge (call apply_lora first)")
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, LoRALinear):
                setattr(parent, name, child.merge())
    for p in model.parameters():
        p.requires_grad_(True)
    return model
