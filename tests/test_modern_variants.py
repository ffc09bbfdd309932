"""Lecture 16's whole models through course_lib.interop.from_hf, on random tiny configs built
offline: Qwen3 (QK-norm, head_dim set apart), Qwen3-MoE, DeepSeek-V3 (MLA + sigmoid-routed
experts with a shared one, dense first layer, group routing) and Mixtral; logits to 1e-4, the
parameter count, cached greedy generation token for token against transformers' generate, and
the load-balancing loss against the aux_loss transformers' model returns."""

import dataclasses

import pytest
import torch
from transformers import (
    DeepseekV3Config,
    DeepseekV3ForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
)
from transformers.utils import logging as hf_logging

from course_lib import (
    KVCache,
    ModernLM,
    generate,
    kv_cache_bytes_for,
    modern_parameter_count,
    router_logits,
)
from course_lib.configs import MLAConfig, ModernConfig, MoEConfig
from course_lib.interop import from_hf
from course_lib.nn import MixtureOfExperts, MultiHeadLatentAttention, load_balancing_loss

hf_logging.set_verbosity_error()

COMMON = dict(vocab_size=97, max_position_embeddings=64, bos_token_id=None, eos_token_id=None,
              pad_token_id=None)  # fmt: skip


def qwen3(**kw):
    return Qwen3ForCausalLM(Qwen3Config(**(dict(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=12,
        num_hidden_layers=2, intermediate_size=48) | COMMON | kw)))  # fmt: skip


def qwen3_moe(**kw):
    return Qwen3MoeForCausalLM(Qwen3MoeConfig(**(dict(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        num_hidden_layers=2, intermediate_size=48, moe_intermediate_size=16, num_experts=6,
        num_experts_per_tok=2, norm_topk_prob=True) | COMMON | kw)))  # fmt: skip


def deepseek_v3(**kw):
    return DeepseekV3ForCausalLM(DeepseekV3Config(**(dict(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=3,
        intermediate_size=48, moe_intermediate_size=16, n_routed_experts=8,
        num_experts_per_tok=2, n_group=2, topk_group=1, first_k_dense_replace=1,
        kv_lora_rank=12, q_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6,
        n_shared_experts=1) | COMMON | kw)))  # fmt: skip


def mixtral(**kw):
    return MixtralForCausalLM(MixtralConfig(**(dict(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
        intermediate_size=24, num_local_experts=4, num_experts_per_tok=2) | COMMON | kw)))  # fmt: skip


MODELS = {"Qwen3": qwen3, "Qwen3-MoE": qwen3_moe, "Qwen3-MoE no renorm":
          lambda: qwen3_moe(norm_topk_prob=False), "DeepSeek-V3": deepseek_v3,
          "Mixtral": mixtral}  # fmt: skip


def _random(build, seed=0):
    torch.manual_seed(seed)
    model = build().eval()
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():  # norm gains away from 1; a selection bias that matters
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn(p.shape, generator=g))
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.1 * torch.randn(b.shape, generator=g))
    return model


@pytest.mark.parametrize("name", MODELS)
def test_from_hf_reproduces_logits_and_greedy_generation(name):
    hf = _random(MODELS[name])
    ours = from_hf(hf)
    assert isinstance(ours, ModernLM)
    ids = torch.randint(0, 97, (3, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        diff = (ours(ids) - hf(ids).logits).abs().max().item()
    assert diff < 1e-4, diff
    assert sum(p.numel() for p in ours.parameters()) == hf.num_parameters()
    prompt = ids[:2, :5]
    theirs = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12,
                         min_new_tokens=12, do_sample=False, pad_token_id=0)  # fmt: skip
    cached = generate(ours, prompt, 12, temperature=0)
    assert torch.equal(cached, generate(ours, prompt, 12, temperature=0, use_cache=False))
    assert torch.equal(cached, theirs)


def test_what_each_copy_is_made_of():
    q = from_hf(_random(qwen3))
    assert q.config.qk_norm and q.config.d_head == 12 and q.config.moe is None
    d = from_hf(_random(deepseek_v3))
    assert all(isinstance(b.attn, MultiHeadLatentAttention) for b in d.blocks)
    assert [type(b.ffn).__name__ for b in d.blocks] == [
        "SwiGLUFeedForward", "MixtureOfExperts", "MixtureOfExperts"]  # fmt: skip
    assert d.blocks[1].ffn.shared_expert is not None and d.blocks[1].ffn.router.scaling == 2.5


def test_qk_norm_matters():
    # the copy is right only with the norms' gains permuted with the rows of W_Q and W_K
    hf = _random(qwen3)
    ours = from_hf(hf)
    ids = torch.randint(0, 97, (1, 12))
    with torch.no_grad():
        for block, layer in zip(ours.blocks, hf.model.layers, strict=True):
            block.attn.q_norm.weight.copy_(layer.self_attn.q_norm.weight)  # unpermuted
        assert (ours(ids) - hf(ids).logits).abs().max().item() > 1e-3


@pytest.mark.parametrize("name", ["Qwen3-MoE", "Mixtral"])
def test_load_balancing_loss_equals_the_models_aux_loss(name):
    hf = _random(MODELS[name])
    ours = from_hf(hf)
    ids = torch.randint(0, 97, (2, 15), generator=torch.Generator().manual_seed(2))
    theirs = hf(ids, output_router_logits=True).aux_loss
    ours(ids)
    k = ours.config.moe.top_k
    torch.testing.assert_close(load_balancing_loss(router_logits(ours), k), theirs,
                               rtol=0, atol=1e-6)  # fmt: skip


def test_aux_loss_has_a_gradient_for_the_router():
    model = ModernLM(ModernConfig(30, 16, 2, 1, 2, 24, moe=MoEConfig(4, 2, 8)))
    with pytest.raises(ValueError, match="run the model on a batch first"):
        router_logits(model)
    model(torch.randint(0, 30, (2, 9)))
    load_balancing_loss(router_logits(model), 2).backward()
    grads = [b.ffn.router.linear.weight.grad for b in model.blocks]
    assert all(g is not None and g.abs().sum() > 0 for g in grads)


def test_parameters_total_and_active():
    moe = MoEConfig(8, 2, 16, shared_d_ff=16)
    config = ModernConfig(50, 32, 4, 2, 2, 48, moe=moe)
    model = ModernLM(config)
    block = model.blocks[0].ffn
    assert isinstance(block, MixtureOfExperts)
    expert = 3 * 32 * 16
    assert sum(p.numel() for p in block.parameters()) == 8 * expert + expert + 8 * 32
    # a dense-first MLA model builds too
    mla = dataclasses.replace(config, mla=MLAConfig(8, 8, 4, 8), num_kv_heads=4,
                              moe=dataclasses.replace(moe, first_dense_layers=1))  # fmt: skip
    m = ModernLM(mla).eval()
    cache = KVCache()
    with torch.no_grad():
        m(torch.randint(0, 50, (1, 7)), cache)
    assert cache.layers[0].keys.shape == (1, 1, 7, 8)


def test_unsupported_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="config.decoder_sparse_step=2"):
        from_hf(qwen3_moe(decoder_sparse_step=2))
    with pytest.raises(ValueError, match="config.rope_interleave=False is not supported"):
        from_hf(deepseek_v3(rope_interleave=False))
    with pytest.raises(TypeError, match="got Qwen3Config \\(a config: build the model first"):
        from_hf(Qwen3Config(**COMMON))
    with pytest.raises(ValueError, match="top_k=9 is more than num_experts=8"):
        MoEConfig(8, 9, 16)
    with pytest.raises(ValueError, match="kv_lora_rank=96 does not fit"):
        ModernConfig(50, 32, 4, 4, 1, 48, mla=MLAConfig(96, 8, 4, 8))


@pytest.mark.parametrize("name", MODELS)
def test_parameter_count_in_closed_form(name):
    hf = _random(MODELS[name])
    ours = from_hf(hf)
    counts = modern_parameter_count(ours.config)
    assert counts["total"] == hf.num_parameters() == sum(p.numel() for p in ours.parameters())
    moe = ours.config.moe
    if moe is None:
        assert counts["active"] == counts["total"]
    else:  # one token skips (E - k) experts in every MoE layer
        per_expert = sum(p.numel() for p in ours.blocks[-1].ffn.experts[0].parameters())
        moe_layers = ours.config.num_layers - moe.first_dense_layers
        skipped = moe_layers * (moe.num_experts - moe.top_k) * per_expert
        assert counts["total"] - counts["active"] == skipped


def test_published_totals_and_active_parameters():
    # the configs' numbers as in their config.json; totals as their model cards state them
    deepseek = ModernConfig(129280, 7168, 128, 128, 61, 18432,
                            mla=MLAConfig(512, 128, 64, 128, 1536),
                            moe=MoEConfig(256, 8, 2048, scoring="sigmoid", scaling=2.5,
                                          num_groups=8, top_groups=4, shared_d_ff=2048,
                                          first_dense_layers=3))  # fmt: skip
    qwen = ModernConfig(151936, 2048, 32, 4, 48, 6144, d_head=128, qk_norm=True,
                        moe=MoEConfig(128, 8, 768))  # fmt: skip
    mixtral = ModernConfig(32000, 4096, 32, 8, 32, 14336, moe=MoEConfig(8, 2, 14336))
    for config, total, active in ((deepseek, 671e9, 37e9), (qwen, 30.5e9, 3.3e9),
                                  (mixtral, 46.7e9, 12.9e9)):  # fmt: skip
        counts = modern_parameter_count(config)
        assert abs(counts["total"] / total - 1) < 0.005, counts
        assert abs(counts["active"] / active - 1) < 0.02, counts


@pytest.mark.parametrize("kind", ["gqa", "sliding", "mla"])
def test_cache_bytes_formula_equals_the_cache_filled(kind):
    extra = {"gqa": {}, "sliding": dict(sliding_window=5, layer_types=(
        "sliding_attention", "full_attention", "sliding_attention")),
             "mla": dict(mla=MLAConfig(8, 8, 4, 8))}[kind]  # fmt: skip
    model = ModernLM(ModernConfig(50, 32, 4, 4 if kind == "mla" else 2, 3, 48, **extra)).eval()
    cache = KVCache()
    with torch.no_grad():
        model(torch.randint(0, 50, (2, 9)), cache)
        model(torch.randint(0, 50, (2, 1)), cache)
    assert kv_cache_bytes_for(model.config, 10, batch=2, bytes_per_value=4) == cache.numel() * 4
