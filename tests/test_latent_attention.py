"""Multi-head latent attention (lecture 16) against transformers' DeepseekV3Attention with weights
copied in (queries direct and through their latent); the cache holds only the latent and the
RoPE key, and cached decoding equals the uncached pass."""

import pytest
import torch
from transformers import DeepseekV3Config
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
    DeepseekV3Attention,
    DeepseekV3RotaryEmbedding,
)

from course_lib.nn import LayerKVCache, MultiHeadLatentAttention

D, H, R, NOPE, ROPE, V = 32, 4, 12, 8, 6, 10


def _pair(q_lora_rank, seed=0):
    cfg = DeepseekV3Config(hidden_size=D, num_attention_heads=H, num_key_value_heads=H,
                           kv_lora_rank=R, q_lora_rank=q_lora_rank, qk_nope_head_dim=NOPE,
                           qk_rope_head_dim=ROPE, v_head_dim=V,
                           rope_parameters={"rope_type": "default", "rope_theta": 500.0})  # fmt: skip
    cfg._attn_implementation = "eager"
    theirs = DeepseekV3Attention(cfg, 0).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(
                torch.randn(p.shape, generator=g) * (0.3 if p.ndim > 1 else 1.0) + (p.ndim == 1)
            )
    ours = MultiHeadLatentAttention(D, H, R, NOPE, ROPE, V, q_lora_rank=q_lora_rank,
                                    rope_theta=500.0).eval()  # fmt: skip
    names = {"w_dkv": "kv_a_proj_with_mqa", "kv_norm": "kv_a_layernorm", "w_ukv": "kv_b_proj",
             "w_o": "o_proj", "w_q": "q_proj", "w_dq": "q_a_proj", "q_norm": "q_a_layernorm",
             "w_uq": "q_b_proj"}  # fmt: skip
    with torch.no_grad():
        for ours_name, p in ours.named_parameters():
            module, leaf = ours_name.split(".")
            p.copy_(getattr(getattr(theirs, names[module]), leaf))
    return ours, theirs, cfg


def _theirs(theirs, cfg, x):
    n = x.shape[1]
    positions = torch.arange(n)[None]
    cos, sin = DeepseekV3RotaryEmbedding(cfg)(x, positions)
    mask = torch.full((n, n), float("-inf")).triu(1)[None, None]  # additive causal mask
    return theirs(x, (cos, sin), mask)[0]


@pytest.mark.parametrize("q_lora_rank", [None, 16])
def test_equals_deepseek_v3_attention(q_lora_rank):
    ours, theirs, cfg = _pair(q_lora_rank)
    x = torch.randn(2, 9, D, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), _theirs(theirs, cfg, x), rtol=0, atol=1e-5)


def test_cache_holds_only_the_latent_and_equals_the_uncached_pass():
    ours, _, _ = _pair(16, seed=2)
    x = torch.randn(2, 14, D, generator=torch.Generator().manual_seed(3))
    cache = ours.new_cache()
    with torch.no_grad():
        parts = [ours(x[:, :5], cache)] + [ours(x[:, t : t + 1], cache) for t in range(5, 14)]
        torch.testing.assert_close(torch.cat(parts, 1), ours(x), rtol=0, atol=1e-5)
    assert isinstance(cache, LayerKVCache) and len(cache) == 14
    # per token and layer: the latent (R) and the shared RoPE key (ROPE), for the whole batch
    assert cache.keys.shape == (2, 1, 14, R) and cache.values.shape == (2, 1, 14, ROPE)
    assert (cache.keys.numel() + cache.values.numel()) // (2 * 14) == R + ROPE
    assert R + ROPE < 2 * H * (NOPE + ROPE)  # what multi-head attention would keep


def test_latent_errors():
    with pytest.raises(ValueError, match="kv_lora_rank=72 does not fit"):
        MultiHeadLatentAttention(D, H, 72, NOPE, ROPE, V)
    with pytest.raises(ValueError, match="qk_rope_head_dim=5 must be even"):
        MultiHeadLatentAttention(D, H, R, NOPE, 5, V)
    with pytest.raises(ValueError, match="kv_lora_rank must be >= 1, got 0"):
        MultiHeadLatentAttention(D, H, 0, NOPE, ROPE, V)
