"""GPT: a decoder-only language model with GPT-2's architecture, built from course layers.

Architecture (Radford et al., 2019; nanoGPT's layout)::

    ids (batch, n)
      -> token embedding + learned position embedding -> dropout
      -> num_layers pre-LN blocks:
             x = x + dropout(attn(LN(x)))      CausalSelfAttention (with a KV cache)
             x = x + dropout(ffn(LN(x)))       d -> 4d -> d with GELU ("gelu_new" = tanh form)
      -> final LayerNorm
      -> LM head: scores against the token embedding matrix (tied weights) -> (batch, n, vocab)

It is trained to predict token ``t + 1`` from tokens ``0..t`` (:func:`lm_loss`: the targets are
the inputs shifted by one). :func:`course_lib.interop.from_hf` copies the weights of a
``transformers.GPT2LMHeadModel``; the tests hold the copy to its logits to 1e-5.

``forward(ids, cache=None)`` always returns the logits; a :class:`~course_lib.KVCache` passed in
is extended in place, and the ids are then placed after the positions it already holds.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_checkpoint,
    check_context,
    check_dropout,
    check_features,
    check_flag,
    check_heads,
    check_module,
    check_positive_int,
    check_token_ids,
    check_type,
    checkpoint_path,
    inner_checks_off,
    read_checkpoint,
)
from ..configs import GPTConfig, current_names
from ..nn import FeedForward, KVCache, LayerKVCache, attend, causal_mask_from

__all__ = [
    "GPT",
    "CausalSelfAttention",
    "lm_loss",
    "gpt_parameter_count",
    "load_tiny_gpt",
]


class CausalSelfAttention(nn.Module):
    """GPT-2's masked multi-head self-attention with a KV cache (nanoGPT's ``CausalSelfAttention``).

    The weights are :class:`~course_lib.nn.MultiHeadAttention`'s (``w_q``, ``w_k``, ``w_v``,
    ``w_o``, same names and order), and ``forward(x, cache)`` computes what
    ``MultiHeadAttention.forward(x, causal=True, cache=cache)`` computes, written for this one
    case so that it reads like the board (the tests hold the two equal, and GPT to GPT-2).

    ``forward(x (B, T, d_model), cache=None) -> (B, T, d_model)``; ``cache``: a
    :class:`~course_lib.nn.LayerKVCache` extended in place (``x`` then holds the positions after
    the ones it already has).
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        check_heads(d_model, num_heads)
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(check_dropout(dropout))  # on the attention weights
        self.checks = True  # off inside GPT, whose forward has checked its input

    def forward(self, x: torch.Tensor, cache: LayerKVCache | None = None) -> torch.Tensor:
        if self.checks:
            self._check_inputs(x, cache)
        B, T, C = x.shape  # batch, new positions, d_model
        nh, hs = self.num_heads, self.d_head  # heads, d_head = C / nh
        q = self.w_q(x).view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.w_k(x).view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = self.w_v(x).view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        start = 0 if cache is None else len(cache)  # positions already in the cache
        if cache is not None:
            k, v = cache.append(k, v)  # (B, nh, start + T, hs): the past keys and values too
        mask = causal_mask_from(start, T, x.device)  # (T, start + T): i sees keys <= start + i
        y, _ = attend(q, k, v, mask, self.dropout)  # softmax(q k^T / sqrt(hs)) v: (B, nh, T, hs)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C): the heads side by side again
        return self.w_o(y)

    def _check_inputs(self, x, cache) -> None:
        check_features(x, "x", self.d_model, like=self)
        if x.shape[1] == 0:
            raise ValueError(f"x needs at least one position, got shape {tuple(x.shape)}")
        if cache is not None:
            if not isinstance(cache, LayerKVCache):
                raise TypeError(
                    f"cache must be a LayerKVCache or None, got {type(cache).__name__} "
                    "(a model passes cache.layer(i) of its KVCache)"
                )
            cache.check_fits(x.shape[0], self.num_heads, self.d_head)


class GPTBlock(nn.Module):
    """One pre-LN decoder block without cross-attention, as nanoGPT's ``Block``."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        d = config.d_model
        self.norm1 = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.attn = CausalSelfAttention(d, config.num_heads, dropout=config.dropout)
        self.norm2 = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.ffn = FeedForward(d, config.d_ff or 4 * d, activation=config.activation)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, cache: LayerKVCache | None = None) -> torch.Tensor:
        x = x + self.dropout(self.attn(self.norm1(x), cache))  # the positions read each other
        x = x + self.dropout(self.ffn(self.norm2(x)))  # each position alone: d -> 4d -> d
        return x  # (B, T, d)


class GPT(nn.Module):
    """A GPT-2-style causal language model, built from a :class:`~course_lib.GPTConfig`.

    Shapes: ``forward(ids (batch, n), cache=None) -> logits (batch, n, vocab)``.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = c = check_type(config, "config", GPTConfig)
        self.context_length = c.context_length
        self.token_embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.position_embedding = nn.Embedding(c.context_length, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(GPTBlock(c) for _ in range(c.num_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_weights:
            self.lm_head.weight = self.token_embedding.weight
        self._init_weights(c.num_layers)
        inner_checks_off(self)

    def _init_weights(self, num_layers: int) -> None:
        # GPT-2's initialisation: N(0, 0.02), zero biases, and the two projections that feed
        # the residual stream scaled by 1/sqrt(2 * layers) (so its variance does not grow).
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for block in self.blocks:
            for lin in (block.attn.w_o, block.ffn.linear2):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * num_layers))

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits ``(batch, n, vocab)`` for ids ``(batch, n)``.

        Position ``t`` of the output scores the token that follows ``ids[:, t]``. With a
        :class:`KVCache` holding ``s`` positions, ``ids`` are positions ``s .. s + n - 1`` and
        the cache is extended in place.
        """
        start = check_lm_input(self, ids, cache, self.config.num_heads)  # = len(cache)
        B, T = ids.shape
        pos = torch.arange(start, start + T, device=ids.device)  # (T,): absolute positions
        x = self.dropout(self.token_embedding(ids) + self.position_embedding(pos))  # (B, T, d)
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache.layer(i))  # (B, T, d)
        x = self.norm(x)  # the final LayerNorm
        return self.lm_head(x)  # (B, T, vocab)


def check_lm_input(
    model: nn.Module, ids, cache, num_kv_heads: int, positions_bounded: bool = True,
    d_head: int | None = None,
) -> int:  # fmt: skip
    """The door of a causal LM's ``forward``: ids in the vocabulary, a cache that belongs to this
    model and batch, and (``positions_bounded``: learned position embeddings) positions within
    the context. Returns the first position (``len(cache)``)."""
    c = model.config
    check_token_ids(ids, "ids", "(batch, n)", c.vocab_size)
    if cache is None:
        start = 0
    else:
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        d_head = c.d_model // c.num_heads if d_head is None else d_head
        cache.check_fits(c.num_layers, ids.shape[0], num_kv_heads, d_head)
        start = len(cache)
    if positions_bounded and start + ids.shape[1] > c.context_length:
        raise ValueError(
            f"ids: positions {start}..{start + ids.shape[1] - 1} do not fit the context "
            f"context_length={c.context_length} (the model sees at most {c.context_length} positions)"
        )
    return start


def lm_loss(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The causal language-modelling loss: mean cross-entropy (nats/token) of predicting
    ``ids[:, t + 1]`` from ``ids[:, :t + 1]``.

    The model reads ``ids[:, :-1]``; the targets are ``ids[:, 1:]``, the inputs shifted by one.
    ``ids``: ``(batch, n + 1)`` long.
    """
    check_module(model)
    check_context(model)  # a language model (GPT, ModernLM), not an encoder's hidden states
    if check_token_ids(ids, "ids", "(batch, n + 1)").shape[1] < 2:
        raise ValueError(f"ids must be (batch, n + 1) with n >= 1, got {tuple(ids.shape)}")
    logits = model(ids[:, :-1])  # (B, n, vocab)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def gpt_parameter_count(
    vocab_size: int = 50257,
    context_length: int = 1024,
    d_model: int = 768,
    num_layers: int = 12,
    d_ff: int | None = None,
    tie_weights: bool = True,
) -> int:
    """Parameters of :class:`GPT` (and of ``GPT2LMHeadModel``), by formula.

    With V, P the vocabulary and context sizes, D = d_model, F = d_ff (default 4D), L layers:
    embeddings ``(V + P) D``; each block: attention ``4 D^2 + 4 D``, FFN ``2 D F + F + D``, two
    LayerNorms ``4 D``; final LayerNorm ``2 D``; an untied head adds ``V D``. GPT-2 small gives
    124,439,808 ("124M").
    """
    v = check_positive_int(vocab_size, "vocab_size")
    p = check_positive_int(context_length, "context_length")
    d = check_positive_int(d_model, "d_model")
    n_layers = check_positive_int(num_layers, "num_layers")
    f = 4 * d if d_ff is None else check_positive_int(d_ff, "d_ff")
    block = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d
    untied_head = 0 if check_flag(tie_weights, "tie_weights") else v * d
    return (v + p) * d + n_layers * block + 2 * d + untied_head


GPT_CHECKPOINT = Path(__file__).resolve().parents[1] / "data" / "tiny_gpt.pt"


def load_tiny_gpt(path: str | Path | None = None) -> tuple[GPT, dict]:
    """The tiny GPT shipped with the course (``course_lib/data/tiny_gpt.pt``, float16 weights).

    Loaded with ``weights_only=True`` (plain tensors and numbers, no pickled code) into a float32
    model in eval mode. Returns the model and the checkpoint's metadata (config, training
    settings, validation history). Reproduce it with ``python -m tools.training.train_gpt``.
    """
    path = checkpoint_path(path, GPT_CHECKPOINT)
    ckpt = current_names(read_checkpoint(path, "GPT"))
    check_checkpoint(ckpt, ("config", "state_dict"), path, "GPT", GPTConfig.__dataclass_fields__)
    model = GPT(GPTConfig(**ckpt["config"]))
    state = {k: v.float() for k, v in ckpt["state_dict"].items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or missing not in ([], ["lm_head.weight"]):
        raise ValueError(f"checkpoint does not fit GPT: missing {missing}, unexpected {unexpected}")
    model.eval()
    return model, {k: v for k, v in ckpt.items() if k != "state_dict"}
