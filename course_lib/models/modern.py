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

Lecture 16's models are the same class with other blocks, chosen by the config: ``qk_norm``
(Qwen3), ``sliding_window`` and ``layer_types`` (Mistral; Gemma/Qwen3 local and global layers,
each sliding layer with a ring-buffer cache), ``moe=MoEConfig(...)`` (Mixtral, Qwen3-MoE,
DeepSeek-V3's experts) and ``mla=MLAConfig(...)`` (DeepSeek-V3's latent attention).
``from_hf`` copies ``Mistral``, ``Mixtral``, ``Qwen3``, ``Qwen3Moe`` and ``DeepseekV3``
``ForCausalLM`` models; the tests hold them to 1e-4 and to ``generate`` token for token.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

from .._validation import check_positive_int, check_type, inner_checks_off
from ..configs import ModernConfig
from ..nn import (
    KVCache,
    LayerKVCache,
    MixtureOfExperts,
    MultiHeadAttention,
    MultiHeadLatentAttention,
    RMSNorm,
    SwiGLUFeedForward,
)
from ..nn.rope import rope_qk_unchecked
from .gpt import check_lm_input

__all__ = ["ModernLM", "router_logits", "modern_parameter_count", "kv_cache_bytes_for"]


def _attention(c: ModernConfig, layer: int) -> nn.Module:
    """Layer ``layer``'s attention: GQA with RoPE (+ QK-norm, + a sliding window), or MLA."""
    if c.mla is not None:
        m = c.mla
        return MultiHeadLatentAttention(
            c.d_model, c.num_heads, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim,
            m.v_head_dim, q_lora_rank=m.q_lora_rank, rope_theta=c.rope_theta,
        )  # fmt: skip
    window = c.sliding_window if c.layer_type(layer) == "sliding_attention" else None
    return MultiHeadAttention(
        c.d_model, c.num_heads, c.num_kv_heads, bias=False,
        qk_transform=functools.partial(rope_qk_unchecked, theta=c.rope_theta), d_head=c.d_head,
        qk_norm=c.qk_norm, norm_eps=c.rms_eps, window=window,
    )  # fmt: skip


def _feed_forward(c: ModernConfig, layer: int) -> nn.Module:
    """Layer ``layer``'s feed-forward: SwiGLU, or a mixture of SwiGLU experts."""
    m = c.moe
    if m is None or layer < m.first_dense_layers:
        return SwiGLUFeedForward(c.d_model, c.d_ff)
    return MixtureOfExperts(
        c.d_model, m.d_ff, m.num_experts, m.top_k, scoring=m.scoring, normalize=m.normalize,
        scaling=m.scaling, num_groups=m.num_groups, top_groups=m.top_groups,
        shared_d_ff=m.shared_d_ff,
    )  # fmt: skip


class ModernBlock(nn.Module):
    """One pre-norm block, as lecture 11's ``GPTBlock`` with RMSNorm, RoPE, GQA and SwiGLU;
    lecture 16's variants swap the attention (QK-norm, sliding window, MLA) or the
    feed-forward (mixture of experts) by config, and the block reads the same."""

    def __init__(self, config: ModernConfig, layer: int = 0):
        super().__init__()
        d = config.d_model
        self.norm1 = RMSNorm(d, config.rms_eps)
        self.attn = _attention(config, layer)
        self.norm2 = RMSNorm(d, config.rms_eps)
        self.ffn = _feed_forward(config, layer)

    def forward(self, x: torch.Tensor, cache: LayerKVCache | None = None) -> torch.Tensor:
        if isinstance(self.attn, MultiHeadLatentAttention):
            x = x + self.attn(self.norm1(x), cache=cache)  # causal, latent cache
        else:
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
        self.blocks = nn.ModuleList(ModernBlock(c, i) for i in range(c.num_layers))
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
            ffns = [block.ffn] if isinstance(block.ffn, SwiGLUFeedForward) else [
                *block.ffn.experts, *([block.ffn.shared_expert] if block.ffn.shared_expert else [])
            ]  # fmt: skip
            for lin in (block.attn.w_o, *(f.down for f in ffns)):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * c.num_layers))
        inner_checks_off(self)

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits ``(batch, n, vocab)`` for ids ``(batch, n)`` (long)."""
        # RoPE has no length limit: context_length bounds only what generate() shows the model
        c = self.config
        # a latent-attention cache holds one "head" of kv_lora_rank features per position
        kv_heads, d_head = (1, c.mla.kv_lora_rank) if c.mla else (c.num_kv_heads, c.head_width)
        check_lm_input(self, ids, cache, kv_heads, positions_bounded=False, d_head=d_head)
        x = self.token_embedding(ids)  # (B, n, d): no positions added
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache.layer(i, block.attn.new_cache))
        return self.lm_head(self.norm(x))  # (B, n, vocab)


def router_logits(model: ModernLM) -> list[torch.Tensor]:
    """The router logits ``(T, E)`` of every mixture-of-experts layer of ``model``'s latest
    forward pass (with their gradient): what :func:`~course_lib.nn.load_balancing_loss` takes."""
    check_type(model, "model", ModernLM)
    logits = [b.ffn.router.logits for b in model.blocks if isinstance(b.ffn, MixtureOfExperts)]
    if not logits or any(x is None for x in logits):
        raise ValueError(
            "model has no router logits: it needs mixture-of-experts layers (config.moe) and "
            "you must run the model on a batch first"
        )
    return logits


def modern_parameter_count(config: ModernConfig) -> dict[str, int]:
    """Parameters of ``ModernLM(config)`` in closed form, without building it: ``{"total": ...,
    "active": ...}``, where *active* counts what one token uses (the router, ``top_k`` routed
    experts and the shared expert of each MoE layer; every other weight). A tied head is
    counted once. ``tests/test_modern_variants.py`` holds it to ``count_parameters`` and to
    ``transformers``' ``num_parameters()``."""
    c = check_type(config, "config", ModernConfig)
    d, h = c.d_model, c.num_heads
    total = c.vocab_size * d * (1 if c.tie_weights else 2) + d  # embedding, head, final norm
    idle = 0
    for layer in range(c.num_layers):
        total += 2 * d  # the two RMSNorms of the block
        if c.mla is not None:
            m = c.mla
            d_qk = m.qk_nope_head_dim + m.qk_rope_head_dim
            total += (d * h * d_qk if m.q_lora_rank is None
                      else d * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * h * d_qk)  # fmt: skip
            total += d * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank  # down + norm
            total += m.kv_lora_rank * h * (m.qk_nope_head_dim + m.v_head_dim)  # up
            total += h * m.v_head_dim * d  # W_o
        else:
            dh = c.head_width
            total += 2 * d * h * dh + 2 * d * c.num_kv_heads * dh + (2 * dh if c.qk_norm else 0)
        e = c.moe
        if e is None or layer < e.first_dense_layers:
            total += 3 * d * c.d_ff
            continue
        expert = 3 * d * e.d_ff
        total += d * e.num_experts + e.num_experts * expert
        total += 0 if e.shared_d_ff is None else 3 * d * e.shared_d_ff
        idle += (e.num_experts - e.top_k) * expert
    return {"total": total, "active": total - idle}


def kv_cache_bytes_for(
    config: ModernConfig, seq_len: int, batch: int = 1, bytes_per_value: int = 2
) -> int:
    """Bytes the cache of ``ModernLM(config)`` holds after ``seq_len`` positions.

    Per layer and position: ``2 * kv_heads * d_head`` numbers (keys and values) for attention,
    ``kv_lora_rank + qk_rope_head_dim`` for latent attention; a sliding-window layer keeps
    ``min(seq_len, sliding_window)`` positions. ``bytes_per_value``: 2 for bf16/fp16, 4 for
    float32. (lecture 13's :func:`~course_lib.kv_cache_bytes` is the plain GQA case.)
    """
    c = check_type(config, "config", ModernConfig)
    seq_len = check_positive_int(seq_len, "seq_len")
    batch = check_positive_int(batch, "batch")
    bytes_per_value = check_positive_int(bytes_per_value, "bytes_per_value")
    numbers = 0
    for layer in range(c.num_layers):
        if c.mla is not None:
            numbers += seq_len * (c.mla.kv_lora_rank + c.mla.qk_rope_head_dim)
            continue
        kept = seq_len
        if c.layer_type(layer) == "sliding_attention":
            kept = min(seq_len, c.sliding_window)
        numbers += 2 * kept * c.num_kv_heads * c.head_width
    return numbers * batch * bytes_per_value
