"""Stacks of encoder or decoder layers: :class:`Encoder` and :class:`Decoder`."""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_features, check_flag, check_positive_int, inner_checks_off
from .attention import check_mask
from .blocks import DecoderLayer, EncoderLayer, check_decoder_inputs

__all__ = ["Encoder", "Decoder"]


class _Stack(nn.Module):
    """What :class:`Encoder` and :class:`Decoder` share: ``num_layers`` copies of one layer class
    and an optional final LayerNorm (on by default for pre-LN stacks, as in torch)."""

    layer_class: type[nn.Module]

    def __init__(
        self, num_layers: int, d_model: int, num_heads: int, d_ff: int | None = None,
        dropout: float = 0.0, norm_first: bool = False, *, final_norm: bool | None = None,
        bias: bool = True, layer_norm_eps: float = 1e-5, activation: str = "relu",
    ):  # fmt: skip
        super().__init__()
        check_positive_int(num_layers, "num_layers")
        self.layers = nn.ModuleList(
            self.layer_class(
                d_model, num_heads, d_ff, dropout, norm_first, bias=bias,
                layer_norm_eps=layer_norm_eps, activation=activation,
            )
            for _ in range(num_layers)
        )  # fmt: skip
        self.d_model, self.num_heads = d_model, num_heads
        final_norm = norm_first if final_norm is None else check_flag(final_norm, "final_norm")
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias) if final_norm else None
        inner_checks_off(self)
        self.checks = True  # off inside a model whose forward has checked its input

    def _finish(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.norm is None else self.norm(x)


class Encoder(_Stack):
    """A stack of ``num_layers`` :class:`EncoderLayer` s (layers in series, each with its own
    weights). With ``norm_first=True`` a final LayerNorm follows the stack (pre-LN layers
    leave their output un-normalised); ``final_norm`` overrides that choice. The other
    arguments are :class:`EncoderLayer`'s.

    ``forward(x, mask=None)``: ``(batch, n, d_model)`` -> ``(batch, n, d_model)``.
    :attr:`attention_weights` lists each layer's last weights ``(batch, heads, n, n)``.
    """

    layer_class = EncoderLayer

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        if self.checks:
            check_features(x, "x", self.d_model, like=self)
            check_mask(mask, x.shape[0], self.num_heads, x.shape[1], x.shape[1])
        for layer in self.layers:
            x = layer(x, mask)
        return self._finish(x)

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        return [layer.attention_weights for layer in self.layers]


class Decoder(_Stack):
    """A stack of ``num_layers`` :class:`DecoderLayer` s, all attending to the same ``memory``.

    ``forward(x, memory, self_mask=None, memory_mask=None)`` -> ``(batch, n, d_model)``.
    Final LayerNorm as in :class:`Encoder`. :attr:`self_attention_weights` and
    :attr:`cross_attention_weights` list each layer's last weights.
    """

    layer_class = DecoderLayer

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor, self_mask=None, memory_mask=None, *,
        causal: bool = True,
    ) -> torch.Tensor:  # fmt: skip
        if self.checks:
            check_decoder_inputs(x, memory, self_mask, memory_mask, self)
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask, causal=causal)
        return self._finish(x)

    @property
    def self_attention_weights(self) -> list[torch.Tensor | None]:
        return [layer.self_attention_weights for layer in self.layers]

    @property
    def cross_attention_weights(self) -> list[torch.Tensor | None]:
        return [layer.cross_attention_weights for layer in self.layers]
