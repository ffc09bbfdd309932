"""Multi-head latent attention (MLA; DeepSeek-V2, V3): cache a small latent, not the keys and values.

Grouped-query attention shrinks the cache by sharing keys and values between heads; MLA instead
**compresses** them. Each token writes one latent vector ``c`` of ``kv_lora_rank`` numbers; every
head's key and value are linear maps of it. RoPE cannot pass through that map (a rotation that
depends on the position would have to sit between ``c`` and the keys), so a small **decoupled
RoPE key**, shared by all heads, carries the positions::

    c       = RMSNorm(W_dkv x)[:r],   k_rope = RoPE(W_dkv x)[r:]         per token: r + d_rope numbers
    k_h     = [W_uk,h c ; k_rope],    v_h = W_uv,h c                     per head, recomputed
    q_h     = [W_q,h x  ; RoPE(W_qr,h x)]   (or through a query latent, q_lora_rank)
    out     = concat_h softmax(q_h k_h^T / sqrt(d_nope + d_rope)) v_h,  then W_o

The cache stores ``c`` and ``k_rope`` only: ``r + d_rope`` numbers per token and layer, against
``2 * heads * d_head`` for multi-head attention (DeepSeek-V3: 512 + 64 = 576 against 32,768).
``tests/test_latent_attention.py`` holds it to ``transformers``' ``DeepseekV3Attention``.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_eps, check_features, check_positive_int, check_positive_number
from .attention import attend, causal_mask_from
from .cache import LayerKVCache
from .norms import RMSNorm
from .rope import rotate

__all__ = ["MultiHeadLatentAttention", "check_latent_sizes"]


def check_latent_sizes(
    num_heads: int | None, kv_lora_rank: int, qk_nope_head_dim: int, qk_rope_head_dim: int,
    v_head_dim: int, q_lora_rank: int | None = None,
) -> None:  # fmt: skip
    """The sizes of :class:`MultiHeadLatentAttention`: positive, an even RoPE width, and a
    latent smaller than the keys and values it stands for (``heads * (d_nope + d_v)``; not
    checked when ``num_heads`` is None)."""
    for name, value in (("num_heads", 1 if num_heads is None else num_heads),
                        ("kv_lora_rank", kv_lora_rank),
                        ("qk_nope_head_dim", qk_nope_head_dim),
                        ("qk_rope_head_dim", qk_rope_head_dim), ("v_head_dim", v_head_dim)):  # fmt: skip
        check_positive_int(value, name)
    if q_lora_rank is not None:
        check_positive_int(q_lora_rank, "q_lora_rank")
    if qk_rope_head_dim % 2:
        raise ValueError(
            f"qk_rope_head_dim={qk_rope_head_dim} must be even: RoPE rotates coordinates in pairs"
        )
    full = None if num_heads is None else num_heads * (qk_nope_head_dim + v_head_dim)
    if full is not None and kv_lora_rank >= full:
        raise ValueError(
            f"kv_lora_rank={kv_lora_rank} does not fit: the latent must be smaller than the "
            f"num_heads * (qk_nope_head_dim + v_head_dim) = {full} key and value features it "
            "is expanded to, or it compresses nothing"
        )


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V3's attention (see the module docstring), causal self-attention, batch first.

    Args:
        d_model: token width.
        num_heads: heads.
        kv_lora_rank: ``r``, the width of the cached latent ``c``.
        qk_nope_head_dim: per-head key/query features computed from the latent (no position).
        qk_rope_head_dim: the decoupled RoPE part of each query and of the shared key (even).
        v_head_dim: per-head value width.
        q_lora_rank: queries through a latent of this width (DeepSeek-V3: 1536); ``None``: one
            linear map.
        rope_theta: RoPE base.
        norm_eps: epsilon of the two latent RMSNorms (``transformers`` uses 1e-6 here).

    ``forward(x (B, n, d_model), cache=None) -> (B, n, d_model)``; ``cache`` (a
    :class:`~course_lib.nn.LayerKVCache`) holds the latents as its ``keys`` ``(B, 1, n, r)``
    and the RoPE keys as its ``values`` ``(B, 1, n, d_rope)``.
    """

    def __init__(
        self, d_model: int, num_heads: int, kv_lora_rank: int, qk_nope_head_dim: int,
        qk_rope_head_dim: int, v_head_dim: int, *, q_lora_rank: int | None = None,
        rope_theta: float = 10000.0, norm_eps: float = 1e-6,
    ):  # fmt: skip
        super().__init__()
        check_positive_int(d_model, "d_model")
        check_positive_int(num_heads, "num_heads")
        check_latent_sizes(num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                           v_head_dim, q_lora_rank)  # fmt: skip
        h, r = num_heads, kv_lora_rank
        self.d_model, self.num_heads, self.kv_lora_rank = d_model, h, r
        self.d_nope, self.d_rope, self.d_v = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = check_positive_number(rope_theta, "rope_theta")
        d_qk = qk_nope_head_dim + qk_rope_head_dim
        norm_eps = check_eps(norm_eps, "norm_eps")
        if q_lora_rank is None:
            self.w_q = nn.Linear(d_model, h * d_qk, bias=False)
        else:  # queries through their own latent (not cached: it only saves parameters)
            self.w_dq = nn.Linear(d_model, q_lora_rank, bias=False)
            self.q_norm = RMSNorm(q_lora_rank, norm_eps)
            self.w_uq = nn.Linear(q_lora_rank, h * d_qk, bias=False)
        self.q_lora_rank = q_lora_rank
        self.w_dkv = nn.Linear(d_model, r + qk_rope_head_dim, bias=False)  # down: latent + RoPE key
        self.kv_norm = RMSNorm(r, norm_eps)
        self.w_ukv = nn.Linear(r, h * (qk_nope_head_dim + v_head_dim), bias=False)  # up: k, v
        self.w_o = nn.Linear(h * v_head_dim, d_model, bias=False)
        self.attention_weights: torch.Tensor | None = None
        self.checks = True  # off inside a model whose forward has checked its input

    def new_cache(self) -> LayerKVCache:
        """An empty cache: it will hold the latents and the RoPE keys."""
        return LayerKVCache()

    def forward(self, x: torch.Tensor, cache: LayerKVCache | None = None) -> torch.Tensor:
        if self.checks:
            check_features(x, "x", self.d_model, like=self)
            if cache is not None:
                if not isinstance(cache, LayerKVCache):
                    raise TypeError(
                        f"cache must be a LayerKVCache or None, got {type(cache).__name__} "
                        "(a model passes cache.layer(i, attn.new_cache) of its KVCache)"
                    )
                cache.check_fits(x.shape[0], 1, self.kv_lora_rank)
        b, n, _ = x.shape
        h, r = self.num_heads, self.kv_lora_rank
        start = 0 if cache is None else len(cache)
        positions = torch.arange(start, start + n, device=x.device)
        q = self.w_q(x) if self.q_lora_rank is None else self.w_uq(self.q_norm(self.w_dq(x)))
        q = q.view(b, n, h, self.d_nope + self.d_rope).transpose(1, 2)  # (B, h, n, d_qk)
        q_nope, q_rope = q.split([self.d_nope, self.d_rope], dim=-1)
        c, k_rope = self.w_dkv(x).split([r, self.d_rope], dim=-1)  # (B, n, r), (B, n, d_rope)
        c = self.kv_norm(c)[:, None]  # (B, 1, n, r): one latent per token, for every head
        k_rope = rotate(k_rope[:, None], positions, self.rope_theta)  # (B, 1, n, d_rope): shared
        q_rope = rotate(q_rope, positions, self.rope_theta)  # (B, h, n, d_rope)
        if cache is not None:
            c, k_rope = cache.append(c, k_rope)  # only these are cached: (B, 1, n_seen, r + d_rope)
        n_seen = c.shape[-2]
        kv = self.w_ukv(c[:, 0]).view(b, n_seen, h, self.d_nope + self.d_v).transpose(1, 2)
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)  # (B, h, n_seen, d_nope), (.., d_v)
        k = torch.cat([k_nope, k_rope.expand(-1, h, -1, -1)], dim=-1)  # (B, h, n_seen, d_qk)
        q = torch.cat([q_nope, q_rope], dim=-1)  # (B, h, n, d_qk)
        out, weights = attend(q, k, v, causal_mask_from(start, n, x.device))  # (B, h, n, d_v)
        self.attention_weights = weights.detach()
        return self.w_o(out.transpose(1, 2).reshape(b, n, h * self.d_v))  # (B, n, d_model)
