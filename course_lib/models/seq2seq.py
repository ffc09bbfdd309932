"""Recurrent encoder–decoders for translation: with a fixed context vector, and with attention.

Both models share the encoder, a bidirectional GRU that reads the source into states
``h_1 … h_S`` (each the concatenation of a forward and a backward state). They differ in
what the decoder may see of them:

* :class:`Seq2SeqGRU` (Cho et al., 2014; Sutskever et al., 2014) squeezes the source into
  **one** vector ``c`` — the final forward and backward states — and gives the decoder only
  that: the bottleneck. Long sentences do not fit.
* :class:`AttentionSeq2SeqGRU` (Bahdanau et al., 2015) computes a new context
  ``c_i = Σ_j α_ij h_j`` for every output word ``i``, with additive attention of the previous
  decoder state over all encoder states.

Every translation model in :mod:`course_lib.models` has the same interface, which
:func:`~course_lib.models.greedy_decode` relies on:

* ``encode(src, src_mask) -> memory``,
* ``decode(memory, src_mask, tgt_in) -> logits (batch, T, tgt_vocab)`` — position ``t``
  depends only on ``tgt_in[:, :t + 1]``,
* ``forward(src, src_mask, tgt_in) = decode(encode(src, src_mask), src_mask, tgt_in)``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_positive_int,
    check_shape,
    check_src_mask,
    check_token_ids,
    check_translation_sizes,
)

__all__ = [
    "AdditiveAttention",
    "Seq2SeqGRU",
    "AttentionSeq2SeqGRU",
    "translation_loss",
]


class AdditiveAttention(nn.Module):
    """Bahdanau's score ``e_j = v · tanh(W_s s + W_h h_j)``, softmax over ``j``, context.

    ``forward(query, keys, mask=None, keys_projected=None) -> (context, weights)`` with query
    ``(batch, d_query)``, keys ``(batch, n, d_key)``, mask ``(batch, n)`` (True = may attend):
    context ``(batch, d_key)``, weights ``(batch, n)``. ``W_h h_j`` does not depend on the
    decoder step, so a decoder computes it once (:meth:`project_keys`) and passes it in.
    Matches :func:`course_lib.additive_attention` (the numpy version) with
    ``w_query = self.w_query.weight.T``, ``w_key = self.w_key.weight.T``, ``v = self.v.weight[0]``.
    """

    def __init__(self, d_query: int, d_key: int, d_att: int):
        super().__init__()
        for name, value in (("d_query", d_query), ("d_key", d_key), ("d_att", d_att)):
            check_positive_int(value, name)
        self.w_query = nn.Linear(d_query, d_att, bias=False)
        self.w_key = nn.Linear(d_key, d_att, bias=False)
        self.v = nn.Linear(d_att, 1, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return self.w_key(self._check(None, keys, None))

    def _check(self, query, keys, mask) -> torch.Tensor:
        """``keys`` if query ``(batch, d_query)``, keys ``(batch, n, d_key)`` and the boolean
        mask ``(batch, n)`` fit (no row of all False: its weights would be nan); else raise."""
        d_query, d_key = self.w_query.in_features, self.w_key.in_features
        batch = None
        if query is not None:
            layout = f"(batch, d_query={d_query})"
            batch = check_shape(query, "query", layout, (None, d_query)).shape[0]
        check_shape(keys, "keys", f"(batch, n, d_key={d_key})", (batch, None, d_key))
        if mask is not None:
            check_shape(mask, "mask", "(batch, n)", keys.shape[:2])
            if mask.dtype != torch.bool:
                raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
            if not mask.any(-1).all():  # (batch, n) only
                raise ValueError("mask hides every key from some query; each row needs a True")
        return keys

    def forward(self, query, keys, mask=None, keys_projected=None):
        self._check(query, keys, mask)  # shapes, dtype, a key for every query
        if keys_projected is None:
            keys_projected = self.project_keys(keys)
        scores = self.v(torch.tanh(self.w_query(query)[:, None, :] + keys_projected))[..., 0]
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        context = torch.bmm(weights[:, None, :], keys)[:, 0]
        return context, weights


class _GRUEncoder(nn.Module):
    """Bidirectional GRU: ids ``(B, S)`` -> states ``(B, S, 2H)`` and final states ``(B, 2H)``."""

    def __init__(self, vocab_size: int, emb: int, hidden: int, pad_id: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, emb, padding_idx=pad_id)
        self.rnn = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor):
        lengths = src_mask.sum(1).cpu()
        # Packing makes the backward direction start at each sentence's last real word
        # instead of at its padding, and the final states belong to the real words.
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embed(src), lengths, batch_first=True, enforce_sorted=False
        )
        out, last = self.rnn(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(
            out, batch_first=True, total_length=src.shape[1]
        )
        return states, torch.cat([last[0], last[1]], dim=-1)


class Seq2SeqGRU(nn.Module):
    """Encoder–decoder with a fixed context vector (no attention).

    The decoder GRU starts from ``tanh(W c)`` and receives ``c`` again at every step next to
    the previous word (as in Cho et al., 2014), so it never lacks access to ``c`` — only to
    the individual source words, which ``c`` must summarise.

    Args:
        src_vocab, tgt_vocab: vocabulary sizes.
        emb: embedding width; hidden: GRU width (the encoder states are ``2 * hidden``).
        pad_id: id of ``<pad>`` in both vocabularies.
    """

    def __init__(
        self, src_vocab: int, tgt_vocab: int, emb: int = 64, hidden: int = 128, pad_id: int = 0
    ):
        super().__init__()
        check_translation_sizes(src_vocab, tgt_vocab, pad_id, emb=emb, hidden=hidden)
        self.encoder = _GRUEncoder(src_vocab, emb, hidden, pad_id)
        self.init = nn.Linear(2 * hidden, hidden)
        self.embed = nn.Embedding(tgt_vocab, emb, padding_idx=pad_id)
        self.rnn = nn.GRU(emb + 2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden + 2 * hidden + emb, tgt_vocab)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """The context vector ``c`` ``(batch, 2 * hidden)``: all the decoder will see."""
        check_token_ids(src, "src", "(batch, length)", self.encoder.embed.num_embeddings)
        _, context = self.encoder(src, check_src_mask(src, src_mask))
        return context

    def decode(
        self, memory: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor
    ) -> torch.Tensor:
        """Logits ``(batch, T, tgt_vocab)`` for decoder input ``tgt_in`` ``(batch, T)``."""
        check_token_ids(tgt_in, "tgt_in", "(batch, length)", self.embed.num_embeddings)
        e = self.embed(tgt_in)
        c = memory[:, None, :].expand(-1, tgt_in.shape[1], -1)
        states, _ = self.rnn(torch.cat([e, c], dim=-1), torch.tanh(self.init(memory))[None])
        return self.out(torch.cat([states, c, e], dim=-1))

    def forward(self, src, src_mask, tgt_in):
        return self.decode(self.encode(src, src_mask), src_mask, tgt_in)


class AttentionSeq2SeqGRU(nn.Module):
    """Encoder–decoder with additive attention (Bahdanau et al., 2015).

    For each output position ``i``: weights ``α_i = softmax_j(v · tanh(W_s s_{i-1} + W_h h_j))``
    over the real source words, context ``c_i = Σ_j α_ij h_j``, new state
    ``s_i = GRU([emb(y_{i-1}); c_i], s_{i-1})``, logits from ``[s_i; c_i; emb(y_{i-1})]``.
    After :meth:`decode`, ``self.attention_weights`` holds the weights ``(batch, T, S)``: the
    alignment matrix.
    """

    def __init__(
        self, src_vocab: int, tgt_vocab: int, emb: int = 64, hidden: int = 128, att: int = 128,
        pad_id: int = 0,
    ):  # fmt: skip
        super().__init__()
        check_translation_sizes(src_vocab, tgt_vocab, pad_id, emb=emb, hidden=hidden, att=att)
        self.encoder = _GRUEncoder(src_vocab, emb, hidden, pad_id)
        self.init = nn.Linear(2 * hidden, hidden)
        self.attn = AdditiveAttention(hidden, 2 * hidden, att)
        self.embed = nn.Embedding(tgt_vocab, emb, padding_idx=pad_id)
        self.cell = nn.GRUCell(emb + 2 * hidden, hidden)
        self.out = nn.Linear(hidden + 2 * hidden + emb, tgt_vocab)
        self.attention_weights: torch.Tensor | None = None

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor):
        """``(states (B, S, 2H), final (B, 2H))``: all encoder states are kept."""
        check_token_ids(src, "src", "(batch, length)", self.encoder.embed.num_embeddings)
        return self.encoder(src, check_src_mask(src, src_mask))

    def decode(self, memory, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, T, tgt_vocab)``; one GRU step per target position."""
        check_token_ids(tgt_in, "tgt_in", "(batch, length)", self.embed.num_embeddings)
        states, final = memory
        keys = self.attn.project_keys(states)  # W_h h_j: the same at every step
        s = torch.tanh(self.init(final))
        e = self.embed(tgt_in)
        outputs, weights = [], []
        for i in range(tgt_in.shape[1]):
            context, alpha = self.attn(s, states, src_mask, keys)
            s = self.cell(torch.cat([e[:, i], context], dim=-1), s)
            outputs.append(torch.cat([s, context, e[:, i]], dim=-1))
            weights.append(alpha)
        self.attention_weights = torch.stack(weights, dim=1).detach()
        return self.out(torch.stack(outputs, dim=1))

    def forward(self, src, src_mask, tgt_in):
        return self.decode(self.encode(src, src_mask), src_mask, tgt_in)


def translation_loss(model: nn.Module, batch) -> torch.Tensor:
    """Mean cross-entropy of the next target word over the real (non-padding) positions.

    ``batch`` is a :class:`course_lib.data.Batch` (teacher forcing: the decoder reads
    ``tgt_in`` = ``<bos> y_1 … y_n`` and must predict ``tgt_out`` = ``y_1 … y_n <eos>``).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not hasattr(batch, "tgt_mask"):
        raise TypeError(f"batch must be a course_lib.data.Batch, got {type(batch).__name__}")
    if not batch.tgt_mask.any():
        raise ValueError(
            "batch.tgt_mask has no True position: there is no target word to predict, and "
            "the mean cross-entropy over nothing would be nan"
        )
    logits = model(batch.src, batch.src_mask, batch.tgt_in)
    return F.cross_entropy(logits[batch.tgt_mask], batch.tgt_out[batch.tgt_mask])
