"""One transformer encoder layer and one decoder layer (lecture 05), built from
:class:`MultiHeadAttention`, :class:`FeedForward` and :func:`residual`.

Post-LN (default, as in the notes and the 2017 paper)::

    x = norm1(x + dropout(self_attn(x)))
    x = norm2(x + dropout(ffn(x)))

Pre-LN (``norm_first=True``; trains more stably in deep stacks)::

    x = x + dropout(self_attn(norm1(x)))
    x = x + dropout(ffn(norm2(x)))
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import (
    check_dropout,
    check_features,
    check_flag,
    check_heads,
    check_positive_int,
    check_positive_number,
    inner_checks_off,
)
from .attention import MultiHeadAttention, check_mask
from .feedforward import FeedForward
from .residual import residual

__all__ = ["EncoderLayer", "DecoderLayer"]


class _Layer(nn.Module):
    """What both layers hold, declared in this order (a seeded layer's weights depend on it):
    self-attention, cross-attention (decoder only), FFN, one LayerNorm and one dropout per
    sublayer. The arguments are documented in :class:`EncoderLayer`."""

    cross: bool  # whether the layer attends to an encoder's output (the decoder)

    def __init__(
        self, d_model: int, num_heads: int, d_ff: int | None = None, dropout: float = 0.0,
        norm_first: bool = False, *, bias: bool = True, layer_norm_eps: float = 1e-5,
        activation: str = "relu",
    ):  # fmt: skip
        super().__init__()
        check_heads(d_model, num_heads)
        d_ff = 4 * d_model if d_ff is None else check_positive_int(d_ff, "d_ff")
        dropout = check_dropout(dropout)
        check_positive_number(layer_norm_eps, "layer_norm_eps")
        self.d_model, self.num_heads, self.d_ff = d_model, num_heads, d_ff
        self.norm_first = check_flag(norm_first, "norm_first")
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        if self.cross:
            self.cross_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout, bias, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        if self.cross:
            self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
            self.dropout3 = nn.Dropout(dropout)
        inner_checks_off(self)
        self.checks = True  # off inside a stack or model whose forward has checked its input


class EncoderLayer(_Layer):
    """One transformer encoder layer: self-attention and FFN, each with residual + LayerNorm
    (post-LN, or pre-LN with ``norm_first=True``; see the module docstring).

    Args:
        d_model, num_heads: as for :class:`MultiHeadAttention`.
        d_ff: width of the FFN's hidden layer; default ``4 * d_model``.
        dropout: on the attention weights, inside the FFN and after each sublayer (training).
        norm_first: pre-LN instead of post-LN.
        bias: biases in the linear maps and LayerNorms.
        layer_norm_eps: epsilon of the LayerNorms (torch's default 1e-5; BERT uses 1e-12).
        activation: the FFN's, ``"relu"`` (default), ``"gelu"`` or ``"gelu_new"`` (tanh).

    ``self.attention_weights`` holds the last call's attention weights ``(batch, heads, n, n)``.
    """

    cross = False

    @property
    def attention_weights(self) -> torch.Tensor | None:
        return self.self_attn.attention_weights

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        """x ``(batch, n, d_model)`` -> ``(batch, n, d_model)``; mask as in
        :meth:`MultiHeadAttention.forward` (True = may attend), e.g. a padding mask."""
        if self.checks:
            check_features(x, "x", self.d_model, like=self)
            check_mask(mask, x.shape[0], self.num_heads, x.shape[1], x.shape[1])

        def self_attention(h):
            return self.self_attn(h, mask=mask)

        x = residual(x, self_attention, self.norm1, self.dropout1, self.norm_first)
        return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


class DecoderLayer(_Layer):
    """One transformer decoder layer: causal self-attention, cross-attention to the encoder's
    output (``memory``), FFN; each with residual + LayerNorm (post-LN or pre-LN as in
    :class:`EncoderLayer`, which documents the arguments).

    Post-LN::

        x = norm1(x + self_attn(x, causal & self_mask))
        x = norm2(x + cross_attn(x, memory, memory, memory_mask))
        x = norm3(x + ffn(x))

    ``self.self_attention_weights`` ``(batch, heads, n, n)`` and
    ``self.cross_attention_weights`` ``(batch, heads, n, n_memory)`` hold the last call's weights.
    """

    cross = True

    @property
    def self_attention_weights(self) -> torch.Tensor | None:
        return self.self_attn.attention_weights

    @property
    def cross_attention_weights(self) -> torch.Tensor | None:
        return self.cross_attn.attention_weights

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor, self_mask=None, memory_mask=None, *,
        causal: bool = True,
    ) -> torch.Tensor:  # fmt: skip
        """x ``(batch, n, d_model)``, memory ``(batch, n_memory, d_model)`` -> ``(batch, n, d_model)``.

        Args:
            self_mask: optional boolean (True = may attend) for self-attention, shaped as in
                :meth:`MultiHeadAttention.forward`, e.g. a target padding mask ``(batch, 1, n)``.
                With ``causal=True`` (default) it is combined (AND) with the causal mask, so
                position i never sees j > i; passing a causal mask again is harmless.
            memory_mask: optional boolean for cross-attention, e.g. the source padding mask
                ``(batch, 1, n_memory)``.
            causal: set False only for a non-autoregressive decoder.
        """
        if self.checks:
            check_decoder_inputs(x, memory, self_mask, memory_mask, self)

        def self_attention(h):
            return self.self_attn(h, mask=self_mask, causal=causal)

        def cross_attention(h):
            return self.cross_attn(h, memory, memory, memory_mask)

        nf = self.norm_first
        x = residual(x, self_attention, self.norm1, self.dropout1, nf)
        x = residual(x, cross_attention, self.norm2, self.dropout2, nf)
        return residual(x, self.ffn, self.norm3, self.dropout3, nf)


def check_decoder_inputs(x, memory, self_mask, memory_mask, module: nn.Module) -> None:
    """The door's checks of a decoder layer or stack ``module``."""
    d_model, heads = module.d_model, module.num_heads
    check_features(x, "x", d_model, like=module)
    check_features(memory, "memory", d_model, like=module)
    if memory.shape[0] != x.shape[0]:
        raise ValueError(
            f"x {tuple(x.shape)} and memory {tuple(memory.shape)} must share the batch size"
        )
    b, n, n_mem = x.shape[0], x.shape[1], memory.shape[1]
    check_mask(self_mask, b, heads, n, n, "self_mask")
    check_mask(memory_mask, b, heads, n, n_mem, "memory_mask")
