"""ModernLM: a Llama-style decoder, the 2017 Transformer with today's four changes.

Same ``forward(ids, cache=None)`` and the same :func:`~course_lib.generate` (KV cache included)
as lecture 11's :class:`~course_lib.GPT`, and the same :class:`~course_lib.CausalSelfAttention`;
what differs is what the last six years changed::

    ids (batch, n)
      -> token embedding                     no position embedding: positions enter as RoPE
      -> num_layers pre-norm blocks:
             x = x + attn(RMSNorm(x))        grouped-query attention, no biases,
                                             q and k rotated by rope() (course_lib.rope)
             x = x + SwiGLU(RMSNorm(x))      down(silu(gate x) * up x), no biases
      -> final RMSNorm
      -> LM head (untied by default, as Llama 2/3)           -> logits (batch, n, vocab)

:meth:`ModernLM.from_hf` copies a ``transformers.LlamaForCausalLM`` (the tests hold the copy to
its logits to 1e-5 in float32, and its greedy ``generate`` to ours token for token).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from torch import nn

from .._optional import require
from .._validation import check_positive_int, check_positive_number, check_tensor, check_token_ids
from ..causal_attention import CausalSelfAttention, KVCache, LayerKVCache
from ..layers import residual
from ..rmsnorm import RMSNorm
from ..rope import halves_to_interleaved, rope
from ..swiglu import SwiGLUFeedForward

__all__ = ["ModernConfig", "ModernLM", "rope_qk"]


@dataclass
class ModernConfig:
    """The size and settings of a :class:`ModernLM` (field names as nanoGPT's ``GPTConfig``)."""

    vocab_size: int  # number of token ids
    d_model: int  # width of every token vector (Llama 2 7B: 4096)
    num_heads: int  # query heads per layer; must divide d_model (Llama 2 7B: 32)
    num_kv_heads: int  # key/value heads; must divide num_heads (= num_heads: MHA, 1: MQA)
    num_layers: int  # number of blocks (Llama 2 7B: 32)
    d_ff: int  # hidden width of the SwiGLU feed-forward (Llama 2 7B: 11008)
    rope_theta: float = 10000.0  # RoPE base (Llama 2: 10,000; Llama 3: 500,000)
    rms_eps: float = 1e-6  # epsilon of every RMSNorm (Llama 2: 1e-5 in its config)
    tie_weights: bool = False  # LM head = token embedding matrix (Llama: no; small models: often)
    max_len: int = 4096  # longest context generate() keeps; RoPE itself has no length limit

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "num_heads", "num_kv_heads", "num_layers", "d_ff",
                     "max_len"):  # fmt: skip
            check_positive_int(getattr(self, name), name)
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}"
            )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads}"
            )
        if (self.d_model // self.num_heads) % 2:
            raise ValueError(
                f"d_model / num_heads = {self.d_model // self.num_heads} must be even: RoPE "
                "rotates the coordinates of each head in pairs"
            )
        check_positive_number(self.rope_theta, "rope_theta")
        check_positive_number(self.rms_eps, "rms_eps")


def rope_qk(
    q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``qk_transform`` hook of :class:`~course_lib.CausalSelfAttention` for RoPE: rotate
    queries ``(B, num_heads, n, hs)`` and keys ``(B, num_kv_heads, n, hs)`` by their absolute
    ``positions (n,)``. Values are not rotated: they carry content, not positions."""
    check_tensor(q, "q", 4, "(batch, num_heads, n, d_head)")
    check_tensor(k, "k", 4, "(batch, num_kv_heads, n, d_head)")
    return rope(q, positions, theta), rope(k, positions, theta)


class ModernBlock(nn.Module):
    """One pre-norm block (the course's ``residual`` wrapper, as lecture 11's ``GPTBlock``)::

    x = x + attn(norm1(x), cache)          norm1, norm2: RMSNorm; no dropout
    x = x + ffn(norm2(x))                  ffn: SwiGLU
    """

    def __init__(self, config: ModernConfig):
        super().__init__()
        d = config.d_model
        self.norm1 = RMSNorm(d, config.rms_eps)
        self.attn = CausalSelfAttention(
            d, config.num_heads, config.num_kv_heads, bias=False,
            qk_transform=functools.partial(rope_qk, theta=config.rope_theta),
        )  # fmt: skip
        self.norm2 = RMSNorm(d, config.rms_eps)
        self.ffn = SwiGLUFeedForward(d, config.d_ff)
        self.dropout = nn.Identity()  # Llama trains without dropout

    def forward(self, x: torch.Tensor, cache: LayerKVCache | None = None) -> torch.Tensor:
        x = residual(x, lambda h: self.attn(h, cache), self.norm1, self.dropout, norm_first=True)
        return residual(x, self.ffn, self.norm2, self.dropout, norm_first=True)


class ModernLM(nn.Module):
    """A Llama-style causal language model (see the module docstring for the architecture).

    Args: the fields of :class:`ModernConfig`; ``max_len`` (keyword) only bounds what
    :func:`~course_lib.generate` keeps in view.

    Shapes: ``forward(ids (batch, n), cache=None) -> logits (batch, n, vocab)``; with a
    :class:`~course_lib.KVCache` holding ``s`` positions, ``ids`` are positions ``s .. s+n-1``.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        num_kv_heads: int,
        num_layers: int,
        d_ff: int,
        rope_theta: float = 10000.0,
        rms_eps: float = 1e-6,
        tie_weights: bool = False,
        *,
        max_len: int = 4096,
    ):
        super().__init__()
        self.config = ModernConfig(vocab_size, d_model, num_heads, num_kv_heads, num_layers,
                                   d_ff, rope_theta, rms_eps, bool(tie_weights), max_len)  # fmt: skip
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(ModernBlock(self.config) for _ in range(num_layers))
        self.norm = RMSNorm(d_model, rms_eps)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_weights:
            self.lm_head.weight = self.token_embedding.weight
        # The same initialisation as lecture 11's GPT (so a comparison is about architecture):
        # N(0, 0.02), the two maps that write into the residual stream scaled by 1/sqrt(2L).
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
        for block in self.blocks:
            for lin in (block.attn.w_o, block.ffn.down):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * num_layers))

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits ``(batch, n, vocab)`` for ids ``(batch, n)`` (long)."""
        check_token_ids(ids, "ids", "(batch, n)", self.config.vocab_size)
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        x = self.token_embedding(ids)  # (B, n, d): no positions added
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache.layer(i))
        return self.lm_head(self.norm(x))  # (B, n, vocab)

    @classmethod
    def from_hf(cls, model) -> ModernLM:
        """Copy a ``transformers.LlamaForCausalLM`` into a ModernLM.

        All maps are ``nn.Linear`` on both sides, copied as they are, except one thing:
        ``transformers`` pairs the coordinates of each head as ``(i, i + d/2)`` (``rotate_half``)
        while :func:`~course_lib.rope` pairs ``(2i, 2i + 1)``. Permuting the rows of each head's
        ``W_Q`` and ``W_K`` by :func:`~course_lib.halves_to_interleaved` makes our rotation act
        on the same pairs; scores ``q . k`` do not change under a permutation applied to both,
        and ``W_V``/``W_O`` are untouched. (This is the inverse of the permutation
        ``transformers``' ``convert_llama_weights_to_hf.py`` applies to Meta's checkpoints.)
        """
        LlamaForCausalLM = require("transformers", "ModernLM.from_hf").LlamaForCausalLM
        if not isinstance(model, LlamaForCausalLM):
            raise TypeError(f"model must be a transformers LlamaForCausalLM, got {type(model)}")
        c = model.config
        rope_params = c.rope_parameters or {}
        checks = {
            "rope_parameters['rope_type']": (rope_params.get("rope_type", "default"), "default"),
            "attention_bias": (c.attention_bias, False),
            "mlp_bias": (c.mlp_bias, False),
            "hidden_act": (c.hidden_act, "silu"),
            "head_dim": (c.head_dim, c.hidden_size // c.num_attention_heads),
        }
        for name, (got, needed) in checks.items():
            if got != needed:
                raise ValueError(f"config.{name}={got!r} is not supported (ModernLM: {needed!r})")
        body = model.model
        tied = model.lm_head.weight.data_ptr() == body.embed_tokens.weight.data_ptr()
        new = cls(c.vocab_size, c.hidden_size, c.num_attention_heads, c.num_key_value_heads,
                  c.num_hidden_layers, c.intermediate_size, float(rope_params["rope_theta"]),
                  c.rms_norm_eps, tied, max_len=c.max_position_embeddings)  # fmt: skip
        new = new.to(dtype=body.embed_tokens.weight.dtype)
        hs = c.hidden_size // c.num_attention_heads
        perm = torch.as_tensor(halves_to_interleaved(hs))

        def per_head_rows(weight: torch.Tensor) -> torch.Tensor:
            heads = weight.view(-1, hs, weight.shape[-1])  # (heads, hs, d_model)
            return heads[:, perm].reshape(weight.shape)  # halves -> interleaved pairs

        with torch.no_grad():
            new.token_embedding.weight.copy_(body.embed_tokens.weight)
            for ours, theirs in zip(new.blocks, body.layers, strict=True):
                ours.norm1.weight.copy_(theirs.input_layernorm.weight)
                ours.norm2.weight.copy_(theirs.post_attention_layernorm.weight)
                a = theirs.self_attn
                ours.attn.w_q.weight.copy_(per_head_rows(a.q_proj.weight))
                ours.attn.w_k.weight.copy_(per_head_rows(a.k_proj.weight))
                ours.attn.w_v.weight.copy_(a.v_proj.weight)
                ours.attn.w_o.weight.copy_(a.o_proj.weight)
                ours.ffn.gate.weight.copy_(theirs.mlp.gate_proj.weight)
                ours.ffn.up.weight.copy_(theirs.mlp.up_proj.weight)
                ours.ffn.down.weight.copy_(theirs.mlp.down_proj.weight)
            new.norm.weight.copy_(body.norm.weight)
            if not tied:
                new.lm_head.weight.copy_(model.lm_head.weight)
        return new.eval()
