"""BERT's encoder, built from the course's own layers, that runs real BERT weights.

As the notes and the paper describe it (Devlin et al., 2019)::

    input_ids, token_type_ids                                   (batch, n)
      -> word embedding + position embedding + segment embedding (batch, n, H)
      -> LayerNorm (eps from the config), dropout                = hidden_states[0]
      -> L post-LN encoder layers (course_lib.EncoderLayer, GELU feed-forward):
           x = LayerNorm(x + SelfAttention(x));  x = LayerNorm(x + FFN(x))
                                                                 = hidden_states[1..L]
      -> pooler: tanh(dense(hidden[:, 0]))  (the [CLS] vector)   (batch, H)

Padding: ``attention_mask`` (1 = real token, 0 = padding) hides padded *keys* from every query;
padded positions still get (meaningless) vectors, exactly as in ``transformers``.

:func:`course_lib.interop.from_hf` copies a ``transformers.BertModel`` (any ``BertConfig`` with
absolute positions and a GELU or ReLU activation): the same numbers as ``transformers`` to ~1e-6
(``tests/test_bert_encoder.py`` checks hidden states and attention weights on padded batches of
sentence pairs, on MiniLM's real weights and on random configurations).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._validation import check_token_ids, check_type, inner_checks_off
from ..configs import BertEncoderConfig
from ..nn import Encoder
from ..nn.attention import check_mask

__all__ = ["BertEncoder", "BertEncoderOutput", "without_heads"]


@dataclass
class BertEncoderOutput:
    """What :meth:`BertEncoder.forward` returns (field names as in ``transformers``).

    last_hidden_state: ``(batch, n, H)``; hidden_states: L + 1 tensors ``(batch, n, H)`` (the
    embeddings first, then each layer's output); attentions: L tensors ``(batch, heads, n, n)``;
    pooler_output: ``(batch, H)`` (tanh(dense([CLS] vector)), None if the model has no pooler).
    """

    last_hidden_state: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...]
    attentions: tuple[torch.Tensor, ...]
    pooler_output: torch.Tensor | None = None


class BertEncoder(nn.Module):
    """``forward(input_ids, token_type_ids=None, attention_mask=None) -> BertEncoderOutput``.

    Args:
        config: a :class:`BertEncoderConfig`.
        add_pooler: build BERT's pooler (dense + tanh on [CLS]).

    Shapes: ``input_ids``, ``token_type_ids``, ``attention_mask`` ``(batch, n)``; ``n`` at most
    ``max_position_embeddings``.
    """

    def __init__(self, config: BertEncoderConfig, add_pooler: bool = True):
        super().__init__()
        self.config = c = check_type(config, "config", BertEncoderConfig)
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.embedding_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)
        self.encoder = Encoder(
            c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size,
            c.hidden_dropout_prob, layer_norm_eps=c.layer_norm_eps, activation=c.hidden_act,
        )  # fmt: skip
        self.pooler = nn.Linear(c.hidden_size, c.hidden_size) if add_pooler else None
        inner_checks_off(self)

    def embed(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None):
        """``hidden_states[0]``: LayerNorm(word + position + segment embeddings), ``(batch, n, H)``."""
        n = self._check(input_ids, "input_ids", None).shape[1]
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        positions = torch.arange(n, device=input_ids.device)
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)[None]  # (1, n, H): the same for every sequence
            + self.token_type_embeddings(token_type_ids)
        )
        return self.dropout(self.embedding_norm(x))

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> BertEncoderOutput:
        ids = self._check(input_ids, "input_ids", None)
        if token_type_ids is not None:
            check_token_ids(token_type_ids, "token_type_ids", "(batch, n)",
                            self.config.type_vocab_size, "type_vocab_size")  # fmt: skip
            self._check(token_type_ids, "token_type_ids", ids.shape)
        if attention_mask is None:
            attention_mask = torch.ones_like(ids)
        self._check(attention_mask, "attention_mask", ids.shape)
        keys = attention_mask.bool()[:, None, :]  # (batch, 1, n): every query sees the real keys
        check_mask(keys, ids.shape[0], self.config.num_attention_heads, ids.shape[1], ids.shape[1],
                   "attention_mask")  # fmt: skip
        hidden = [self.embed(ids, token_type_ids)]
        attentions = []
        for layer in self.encoder.layers:
            hidden.append(layer(hidden[-1], keys))
            attentions.append(layer.attention_weights)
        last = hidden[-1]
        pooled = torch.tanh(self.pooler(last[:, 0])) if self.pooler is not None else None
        return BertEncoderOutput(last, tuple(hidden), tuple(attentions), pooled)

    def _check(self, t, name, shape):
        if name == "input_ids":
            check_token_ids(t, name, "(batch, n)", self.config.vocab_size)
        elif not isinstance(t, torch.Tensor) or t.ndim != 2:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a (batch, n) tensor, got {got}")
        if shape is not None and t.shape != shape:
            raise ValueError(
                f"{name} must have the shape of input_ids {tuple(shape)}, got {tuple(t.shape)}"
            )
        if shape is None and t.shape[1] > self.config.max_position_embeddings:
            raise ValueError(
                f"input_ids has n={t.shape[1]} positions, more than max_position_embeddings="
                f"{self.config.max_position_embeddings}"
            )
        return t


def without_heads(encoder: BertEncoder, heads) -> BertEncoder:
    """A copy of ``encoder`` with the given heads removed (ablated): ``heads`` is a list of
    ``(layer, head)`` pairs, both counted from 0.

    A layer's attention output is ``W_O [head_0; ...; head_h]``; removing head ``h`` zeroes its
    columns of ``W_O``, so that head adds nothing (its attention weights are still computed and
    reported). The original encoder is left unchanged.
    """
    import copy

    if not isinstance(encoder, BertEncoder):
        raise TypeError(f"encoder must be a BertEncoder, got {type(encoder).__name__}")
    if isinstance(heads, tuple) or not all(
        isinstance(p, (tuple, list)) and len(p) == 2 for p in heads
    ):
        raise TypeError(f"heads must be a list of (layer, head) pairs, got {heads!r:.60}")
    cfg = encoder.config
    d_head = cfg.hidden_size // cfg.num_attention_heads
    new = copy.deepcopy(encoder)
    for layer, head in heads:
        if not (0 <= layer < cfg.num_hidden_layers and 0 <= head < cfg.num_attention_heads):
            raise ValueError(
                f"(layer, head) must be within ({cfg.num_hidden_layers}, "
                f"{cfg.num_attention_heads}) counted from 0, got ({layer}, {head})"
            )
        w_o = new.encoder.layers[layer].self_attn.w_o.weight  # (H, H): columns = heads' outputs
        with torch.no_grad():
            w_o[:, head * d_head : (head + 1) * d_head] = 0.0
    return new
