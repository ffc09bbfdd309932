"""A small Transformer encoder–decoder for translation, built from the course's own layers.

Source and target tokens are embedded (scaled by ``sqrt(d_model)``), the sinusoidal
:func:`course_lib.positional_encoding` is added, then :class:`course_lib.Encoder` reads the
source with a padding mask and :class:`course_lib.Decoder` reads the target prefix with the
causal mask (position ``i`` sees positions ``<= i``) while cross-attending to the encoder's
output. Same interface as the RNN models (see :mod:`course_lib.models.seq2seq`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._validation import (
    check_features,
    check_positive_int,
    check_src_mask,
    check_token_ids,
    check_translation_sizes,
    inner_checks_off,
)
from ..nn import Decoder, Encoder
from ..positional import positional_encoding

__all__ = ["TransformerTranslator"]


class TransformerTranslator(nn.Module):
    """Transformer encoder–decoder: ``forward(src, src_mask, tgt_in) -> logits (B, T, V_tgt)``.

    Args:
        src_vocab, tgt_vocab: vocabulary sizes.
        d_model, num_heads, num_layers, d_ff, dropout: as for :class:`course_lib.Encoder`
            (the same for encoder and decoder).
        context_length: longest sequence the positional table covers.
        pad_id: id of ``<pad>``.
        norm_first: pre-LN layers (train more easily with few steps and no warm-up tricks).

    After a call, ``self.decoder.cross_attention_weights`` lists per layer the weights
    ``(batch, heads, T, S)`` of the target positions over the source words.
    """

    def __init__(
        self, src_vocab: int, tgt_vocab: int, d_model: int = 64, num_heads: int = 4,
        num_layers: int = 2, d_ff: int = 256, dropout: float = 0.0, context_length: int = 128,
        pad_id: int = 0, norm_first: bool = True,
    ):  # fmt: skip
        super().__init__()
        check_translation_sizes(src_vocab, tgt_vocab, pad_id, d_model=d_model)
        check_positive_int(context_length, "context_length")
        self.d_model = d_model
        self.src_embed = nn.Embedding(src_vocab, d_model, padding_idx=pad_id)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model, padding_idx=pad_id)
        for table in (self.src_embed, self.tgt_embed):
            # std d^-1/2, so that embedding * sqrt(d) has unit scale like the positional
            # encoding; with torch's default std 1 the positions would be drowned out.
            nn.init.normal_(table.weight, std=d_model**-0.5)
            with torch.no_grad():
                table.weight[pad_id].zero_()
        pe = torch.as_tensor(positional_encoding(context_length, d_model), dtype=torch.float32)
        self.register_buffer("pe", pe, persistent=False)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, dropout, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, dropout, norm_first)
        self.out = nn.Linear(d_model, tgt_vocab)
        self.dropout = nn.Dropout(dropout)
        inner_checks_off(self)  # encode and decode check their inputs at the door

    def _embed(self, table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        if n > self.pe.shape[0]:
            raise ValueError(
                f"sequence of length {n} is longer than context_length={self.pe.shape[0]}"
            )
        return self.dropout(table(ids) * math.sqrt(self.d_model) + self.pe[:n])

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """Encoder output ``(batch, S, d_model)``; padding keys are masked out."""
        check_token_ids(src, "src", "(batch, length)", self.src_embed.num_embeddings)
        mask = check_src_mask(src, src_mask)[:, None, :]  # (batch, 1, S): every query alike
        return self.encoder(self._embed(self.src_embed, src), mask)

    def decode(
        self, memory: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor
    ) -> torch.Tensor:
        """Logits ``(batch, T, tgt_vocab)``; the decoder applies the causal mask itself
        (``causal=True``, its default)."""
        check_token_ids(tgt_in, "tgt_in", "(batch, length)", self.tgt_embed.num_embeddings)
        check_features(memory, "memory", self.d_model, like=self)
        x = self.decoder(
            self._embed(self.tgt_embed, tgt_in), memory, memory_mask=src_mask[:, None, :]
        )
        return self.out(x)

    def forward(self, src, src_mask, tgt_in):
        return self.decode(self.encode(src, src_mask), src_mask, tgt_in)
