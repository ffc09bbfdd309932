"""One transformer encoder layer and one decoder layer, built from attention, FFN and
:func:`~course_lib.layers.residual.residual`.

Post-LN (default, as in the notes and the 2017 paper)::

    x = norm1(x + dropout(self_attn(x, x, x)))
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
    check_heads,
    check_positive_int,
    check_positive_number,
)
from .attention import MultiHeadAttention, attention_mask, causal_mask_torch
from .feedforward import FeedForward
from .residual import residual

__all__ = ["EncoderLayer", "DecoderLayer"]


class _Layer(nn.Module):
    """What both layers hold: attention(s), an FFN, one LayerNorm and one dropout per sublayer.

    The arguments are documented in :class:`EncoderLayer`. Submodules are created in the order self_attn, [cross_attn], ffn, norms, dropouts so that a
    seeded model gets the same weights as before the split.
    """

    cross_attention: bool  # whether the layer attends to an encoder's output (decoder)

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        norm_first: bool = False,
        *,
        bias: bool = True,
        layer_norm_eps: float = 1e-5,
        activation: str = "relu",
    ):
        super().__init__()
        check_heads(d_model, num_heads)
        d_ff = 4 * d_model if d_ff is None else check_positive_int(d_ff, "d_ff")
        dropout = check_dropout(dropout)
        check_positive_number(layer_norm_eps, "layer_norm_eps")
        self.d_model, self.num_heads, self.d_ff = d_model, num_heads, d_ff
        self.norm_first = bool(norm_first)
        self.layer_norm_eps = float(layer_norm_eps)
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        if self.cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout, bias, activation)
        n_sublayers = 3 if self.cross_attention else 2
        for i in range(1, n_sublayers + 1):
            self.add_module(f"norm{i}", nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        for i in range(1, n_sublayers + 1):
            self.add_module(f"dropout{i}", nn.Dropout(dropout))

    @property
    def activation(self) -> str:
        """The FFN's activation name."""
        return self.ffn.activation

    def _self_attention(self, mask):
        return lambda x: self.self_attn(x, x, x, mask)[0]


class EncoderLayer(_Layer):
    """One transformer encoder layer: self-attention and FFN, each with residual + LayerNorm
    (post-LN, or pre-LN with ``norm_first=True``; see the module docstring).

    Args:
        d_model, num_heads: as for :class:`MultiHeadAttention`.
        d_ff: width of the FFN's hidden layer; default ``4 * d_model``.
        dropout: after attention, inside the FFN and after it (training only).
        norm_first: pre-LN instead of post-LN.
        bias: biases in the linear maps and LayerNorms.
        layer_norm_eps: epsilon of the LayerNorms (torch's default 1e-5; BERT uses 1e-12).
        activation: the FFN's, ``"relu"`` (default), ``"gelu"`` or ``"gelu_new"`` (tanh).

    ``self.attention_weights`` holds the last call's attention weights ``(batch, heads, n, n)``
    (``attn_weights`` is its older name).
    """

    cross_attention = False

    @property
    def attention_weights(self) -> torch.Tensor | None:
        return self.self_attn.attention_weights

    attn_weights = attention_weights  # older name, read by lectures 05 and 09

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        """x ``(batch, n, d_model)`` -> ``(batch, n, d_model)``; mask as in
        :meth:`MultiHeadAttention.forward` (True = may attend), e.g. a padding mask."""
        check_features(x, "x", self.d_model)
        x = residual(x, self._self_attention(mask), self.norm1, self.dropout1, self.norm_first)
        return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoderLayer) -> EncoderLayer:
        """Copy a ``torch.nn.TransformerEncoderLayer``; see
        :func:`course_lib.layers.from_torch.encoder_layer_from_torch`."""
        from .from_torch import encoder_layer_from_torch

        return encoder_layer_from_torch(module)


class DecoderLayer(_Layer):
    """One transformer decoder layer: causal self-attention, cross-attention to the encoder's
    output (``memory``), FFN; each with residual + LayerNorm (post-LN or pre-LN as in
    :class:`EncoderLayer`, which documents the arguments).

    Post-LN::

        x = norm1(x + self_attn(x, x, x, causal & self_mask))
        x = norm2(x + cross_attn(x, memory, memory, memory_mask))
        x = norm3(x + ffn(x))

    ``self.self_attention_weights`` ``(batch, heads, n, n)`` and
    ``self.cross_attention_weights`` ``(batch, heads, n, n_memory)`` hold the last call's
    weights (``self_attn_weights`` / ``cross_attn_weights`` are their older names).
    """

    cross_attention = True

    @property
    def self_attention_weights(self) -> torch.Tensor | None:
        return self.self_attn.attention_weights

    @property
    def cross_attention_weights(self) -> torch.Tensor | None:
        return self.cross_attn.attention_weights

    self_attn_weights = self_attention_weights  # older names, read by lectures 05, 07 and 99
    cross_attn_weights = cross_attention_weights

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask=None,
        memory_mask=None,
        *,
        causal: bool = True,
    ) -> torch.Tensor:
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
        check_features(x, "x", self.d_model)
        check_features(memory, "memory", self.d_model)
        if memory.shape[0] != x.shape[0]:
            raise ValueError(
                f"x {tuple(x.shape)} and memory {tuple(memory.shape)} must share the batch size"
            )
        b, n, n_mem = x.shape[0], x.shape[1], memory.shape[1]
        self_mask = attention_mask(self_mask, b, self.num_heads, n, n, "self_mask")
        memory_mask = attention_mask(memory_mask, b, self.num_heads, n, n_mem, "memory_mask")
        if causal:
            causal_m = causal_mask_torch(n, x.device)
            self_mask = causal_m if self_mask is None else self_mask & causal_m

        def cross(y):
            return self.cross_attn(y, memory, memory, memory_mask)[0]

        nf = self.norm_first
        x = residual(x, self._self_attention(self_mask), self.norm1, self.dropout1, nf)
        x = residual(x, cross, self.norm2, self.dropout2, nf)
        return residual(x, self.ffn, self.norm3, self.dropout3, nf)

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoderLayer) -> DecoderLayer:
        """Copy a ``torch.nn.TransformerDecoderLayer``; see
        :func:`course_lib.layers.from_torch.decoder_layer_from_torch`."""
        from .from_torch import decoder_layer_from_torch

        return decoder_layer_from_torch(module)
