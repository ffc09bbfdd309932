"""ModernLM: a Llama-style decoder, the 2017 Transformer with today's four changes.

Same ``forward(ids, cache=None)`` and the same :func:`~course_lib.generate` (KV cache included)
as lecture 11's :class:`~course_lib.GPT`, and the same :class:`~course_lib.nn.MultiHeadAttention`;
what differs is what the last six years changed::

    ids (batch, n)
      -> token embedding                     no position embedding: positions enter as RoPE
      -> num_layers pre-norm blocks:
             x = x + attn(RMSNorm(x))        grouped-query attention, no biases,
                                             q and k rotated by RoPE (course_lib.nn.rope)
             x = x + SwiGLU(RMSNorm(x))      down(silu(gate x) * up x), no biases
      -> final RMSNorm
      -> LM head (untied by default, as Llama 2/3)           -> logits (batch, n, vocab)

:func:`course_lib.interop.from_hf` copies a ``transformers.LlamaForCausalLM`` (the tests hold the copy to
its logits to 1e-5 in float32, and its greedy ``generate`` to ours token for token).
"""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

from .._validation import check_type, inner_checks_off
from ..configs import ModernConfig
from ..nn import KVCache, LayerKVCache, MultiHeadAttention, RMSNorm, SwiGLUFeedForward, rope_qk
from .gpt import check_lm_input

__all__ = ["ModernLM"]


class ModernBlock(nn.Module):
    """One pre-norm block, as lecture 11's ``GPTBlock`` with RMSNorm, RoPE, GQA and SwiGLU."""

    def __init__(self, config: ModernConfig):
        super().__init__()
        d = config.d_model
        self.norm1 = RMSNorm(d, config.rms_eps)
        self.attn = MultiHeadAttention(
            d, config.num_heads, config.num_kv_heads, bias=False,
            qk_transform=functools.partial(rope_qk, theta=config.rope_theta),
        )  # fmt: skip
        self.norm2 = RMSNorm(d, config.rms_eps)
        self.ffn = SwiGLUFeedForward(d, config.d_ff)

    def forward(self, x: torch.Tensor, cache: LayerKVCache | None = None) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), causal=True, cache=cache)  # no dropout (Llama)
        x = x + self.ffn(self.norm2(x))
        return x


class ModernLM(nn.Module):
    """A Llama-style causal language model built from a :class:`~course_lib.ModernConfig` (see
    the module docstring for the architecture).

    Shapes: ``forward(ids (batch, n), cache=None) -> logits (batch, n, vocab)``; with a
    :class:`~course_lib.KVCache` holding ``s`` positions, ``ids`` are positions ``s .. s+n-1``.
    """

    def __init__(self, config: ModernConfig):
        super().__init__()
        self.config = c = check_type(config, "config", ModernConfig)
        self.context_length = c.context_length
        self.token_embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.blocks = nn.ModuleList(ModernBlock(c) for _ in range(c.num_layers))
        self.norm = RMSNorm(c.d_model, c.rms_eps)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_weights:
            self.lm_head.weight = self.token_embedding.weight
        # The same initialisation as lecture 11's GPT (so a comparison is about architecture):
        # N(0, 0.02), the two maps that write into the residual stream scaled by 1/sqrt(2L).
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
        for block in self.blocks:
            for lin in (block.attn.w_o, block.ffn.down):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * c.num_layers))
        inner_checks_off(self)

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits ``(batch, n, vocab)`` for ids ``(batch, n)`` (long)."""
        # RoPE has no length limit: context_length bounds only what generate() shows the model
        check_lm_input(self, ids, cache, self.config.num_kv_heads, positions_bounded=False)
        x = self.token_embedding(ids)  # (B, n, d): no positions added
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache.layer(i))
        return self.lm_head(self.norm(x))  # (B, n, vocab)
