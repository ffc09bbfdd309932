"""ModernLM is Llama: weights copied from transformers' LlamaForCausalLM give the same logits and
greedy generations (random-init configs, built offline); cache on = cache off."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.utils import logging as hf_logging

from course_lib import (
    KVCache,
    ModernConfig,
    ModernLM,
    MultiHeadAttention,
    count_parameters,
    generate,
    kv_cache_bytes,
    lm_loss,
)
from course_lib.interop import from_hf

hf_logging.set_verbosity_error()

# LlamaConfig settings: multi-head, grouped-query, multi-query, and a tied head.
CONFIGS = {
    "MHA": dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                num_hidden_layers=2, intermediate_size=64),
    "GQA": dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2,
                num_hidden_layers=3, intermediate_size=96, rms_norm_eps=1e-5),
    "MQA": dict(hidden_size=48, num_attention_heads=6, num_key_value_heads=1,
                num_hidden_layers=2, intermediate_size=80, rope_theta=500000.0),
    "GQA tied": dict(hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                     num_hidden_layers=4, intermediate_size=40, tie_word_embeddings=True,
                     rope_theta=100.0),
}  # fmt: skip


def _hf(config: dict, seed: int = 0, vocab: int = 101, dtype=torch.float32) -> LlamaForCausalLM:
    config = dict(config)
    theta = config.pop("rope_theta", 10000.0)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, max_position_embeddings=64, bos_token_id=None,
                      eos_token_id=None, pad_token_id=None,
                      rope_parameters={"rope_type": "default", "rope_theta": theta}, **config)  # fmt: skip
    model = LlamaForCausalLM(cfg).to(dtype).eval()
    with torch.no_grad():  # RMSNorm gains away from 1, so a mix-up of norms cannot hide
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("name", CONFIGS)
def test_from_hf_reproduces_logits(name):
    hf = _hf(CONFIGS[name])
    ours = from_hf(hf)
    ids = torch.randint(0, 101, (3, 40))
    with torch.no_grad():
        diff = (ours(ids) - hf(ids).logits).abs().max().item()
    assert diff < 1e-5, diff
    assert count_parameters(ours) == hf.num_parameters()
    assert ours.config.tie_weights == CONFIGS[name].get("tie_word_embeddings", False)
    labels_loss = hf(ids, labels=ids).loss
    assert abs(lm_loss(ours, ids).item() - labels_loss.item()) < 1e-5


def test_from_hf_float64_is_exact_to_float32_angles():
    hf = _hf(CONFIGS["GQA"], dtype=torch.float64)
    ours = from_hf(hf)
    ids = torch.randint(0, 101, (2, 30))
    with torch.no_grad():
        # transformers computes RoPE's angles in float32 even here; ours are float64.
        assert (ours(ids) - hf(ids).logits).abs().max().item() < 1e-5
    assert next(ours.parameters()).dtype == torch.float64


def test_without_the_permutation_the_copy_is_wrong():
    # The halves/interleaved pairing matters: copy W_Q, W_K unpermuted and the logits differ.
    hf = _hf(CONFIGS["MHA"])
    ours = from_hf(hf)
    with torch.no_grad():
        for block, layer in zip(ours.blocks, hf.model.layers, strict=True):
            block.attn.w_q.weight.copy_(layer.self_attn.q_proj.weight)
            block.attn.w_k.weight.copy_(layer.self_attn.k_proj.weight)
        ids = torch.randint(0, 101, (1, 20))
        assert (ours(ids) - hf(ids).logits).abs().max().item() > 1e-3


@pytest.mark.parametrize("name", ["GQA", "MQA"])
def test_greedy_generation_equals_transformers_generate(name):
    hf = _hf(CONFIGS[name], seed=1)
    ours = from_hf(hf)
    ids = torch.randint(0, 101, (2, 5), generator=torch.Generator().manual_seed(0))
    theirs = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=20,
                         min_new_tokens=20, do_sample=False, pad_token_id=0)  # fmt: skip
    with_cache = generate(ours, ids, 20, temperature=0)
    without = generate(ours, ids, 20, temperature=0, use_cache=False)
    assert torch.equal(with_cache, without)
    assert torch.equal(with_cache, theirs)


def test_cached_forward_equals_full_forward_and_cache_size():
    ours = ModernLM(ModernConfig(50, 32, 4, 2, 3, 48)).eval()
    ids = torch.randint(0, 50, (2, 15))
    cache = KVCache()
    with torch.no_grad():
        parts = [ours(ids[:, :6], cache)] + [ours(ids[:, t : t + 1], cache) for t in range(6, 15)]
        torch.testing.assert_close(torch.cat(parts, 1), ours(ids), rtol=0, atol=1e-5)
    assert len(cache) == 15
    # 3 layers x 2 KV heads x head_dim 8 x 15 positions x batch 2, keys and values, float32.
    assert cache.numel() * 4 == kv_cache_bytes(3, 2, 8, 15, batch=2, bytes_per_value=4)


def test_equal_kv_heads_is_plain_multi_head_attention():
    # num_kv_heads == num_heads and causal=True = lecture 03's attention with a causal mask.
    gqa = MultiHeadAttention(24, 4, 4, bias=False).double()
    mha = MultiHeadAttention(24, 4, bias=False).double()
    with torch.no_grad():
        for name in ("w_q", "w_k", "w_v", "w_o"):
            getattr(mha, name).weight.copy_(getattr(gqa, name).weight)
    x = torch.randn(2, 7, 24, dtype=torch.float64)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    torch.testing.assert_close(gqa(x, causal=True), mha(x, x, x, causal), rtol=0, atol=1e-12)


def test_grouped_query_is_multi_head_with_shared_kv_weights():
    # GQA with 2 KV heads for 4 query heads = MHA whose K/V heads 0,1 and 2,3 have equal weights.
    gqa = MultiHeadAttention(16, 4, 2, bias=False).double()
    mha = MultiHeadAttention(16, 4, 4, bias=False).double()
    with torch.no_grad():
        mha.w_q.weight.copy_(gqa.w_q.weight)
        mha.w_o.weight.copy_(gqa.w_o.weight)
        for name in ("w_k", "w_v"):  # rows (kv_heads * hs, d) -> each head's rows twice
            rows = getattr(gqa, name).weight.view(2, 4, 16)
            getattr(mha, name).weight.copy_(rows.repeat_interleave(2, dim=0).reshape(16, 16))
    x = torch.randn(1, 6, 16, dtype=torch.float64)
    torch.testing.assert_close(gqa(x, causal=True), mha(x, causal=True), rtol=0, atol=1e-12)


def test_rope_hook_scores_do_not_change_when_every_position_shifts():
    # The model's qk_transform: q . k after RoPE depends on distances only.
    ours = ModernLM(ModernConfig(30, 16, 2, 1, 1, 24, rope_theta=100.0)).double().eval()
    q = ours.blocks[0].attn.qk_transform
    x = torch.randn(1, 2, 5, 8, dtype=torch.float64)
    a_q, a_k = q(x, x[:, :1], torch.arange(5))
    b_q, b_k = q(x, x[:, :1], torch.arange(5) + 1000)
    torch.testing.assert_close(a_q @ a_k.transpose(-1, -2), b_q @ b_k.transpose(-1, -2))


def test_the_models_rope_hook_is_rope_qk_without_its_check():
    """Issue 49: ModernLM checks its input once at forward; its layers call rope_qk_unchecked,
    which gives rope_qk's numbers (bit for bit) and skips the per-layer shape check."""
    from unittest import mock

    from course_lib.nn import rope

    model = ModernLM(ModernConfig(30, 16, 2, 1, 2, 24, rope_theta=100.0)).eval()
    assert model.blocks[0].attn.qk_transform.func is rope.rope_qk_unchecked
    q, k = torch.randn(1, 2, 5, 8), torch.randn(1, 1, 5, 8)
    for got, want in zip(rope.rope_qk_unchecked(q, k, torch.arange(5), 100.0),
                         rope.rope_qk(q, k, torch.arange(5), 100.0), strict=True):  # fmt: skip
        assert torch.equal(got, want)
    with mock.patch.object(rope, "_check_heads_and_positions", side_effect=AssertionError):
        with torch.no_grad():
            generate(model, torch.tensor([[1, 2, 3]]), max_new_tokens=3, temperature=0.0)


def test_tied_weights_and_errors():
    tied = ModernLM(ModernConfig(20, 16, 4, 2, 2, 24, tie_weights=True))
    assert tied.lm_head.weight is tied.token_embedding.weight
    untied = ModernLM(ModernConfig(20, 16, 4, 2, 2, 24))
    assert count_parameters(untied) - count_parameters(tied) == 20 * 16
    with pytest.raises(ValueError, match="num_kv_heads=3 must divide num_heads=4"):
        ModernConfig(20, 16, 4, 3, 2, 24)
    with pytest.raises(ValueError, match="must be even"):
        ModernConfig(20, 12, 4, 2, 1, 8)
    with pytest.raises(
        TypeError, match=r"ids must be a torch.long tensor of token ids \(batch, n\)"
    ):
        untied(torch.zeros(2, 3))
    with pytest.raises(TypeError, match=r"Qwen3MoeForCausalLM'\], got ModernLM"):
        from_hf(untied)
