"""Lecture 15's library held to its references: gguf's block formats byte for byte, bitsandbytes'
int8 (vector-wise) and NF4 bit for bit, transformers' assisted generation and its
``_speculative_sampling`` on the same draws, and hand-worked values for the KV cache's memory.

torchao (the issue's first reference for int8) is not installed: with it present, building any
transformers model prints warnings on stderr that break nbval (coordinator's notice, 07:40).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch

import course_lib as C
from course_lib.interop import from_hf

gguf = pytest.importorskip("gguf")
from gguf.quants import dequantize as gguf_dequantize  # noqa: E402
from gguf.quants import quantize as gguf_quantize  # noqa: E402

FORMATS = ("Q8_0", "Q4_0", "Q4_1")


def _bnb():
    os.environ.setdefault("BITSANDBYTES_NOWELCOME", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip("bitsandbytes.functional")


def _matrices(seed: int):
    """Weights of several scales, with the cases a block quantiser can get wrong: an all-zero
    block, exact halves (rounding), a block whose largest weight is negative, an outlier."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((6, 128)).astype(np.float32) * rng.choice([1e-4, 0.02, 1.0, 300.0])
    x[0, :32] = 0
    x[1, :64] = np.round(x[1, :64] * 4) / 4  # quarters and halves: ties in every rounding
    x[2, 32:64] = -np.abs(x[2, 32:64])
    x[3, 5] = 40 * np.abs(x).max() + 1  # an outlier
    x[4, :32] = 7.0  # a constant block: max == min for Q4_1
    return x.astype(np.float32)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("seed", range(6))
def test_block_formats_equal_gguf_byte_for_byte(fmt, seed):
    x = _matrices(seed)
    qtype = gguf.GGMLQuantizationType[fmt]
    ours, theirs = C.quantize(x, fmt), gguf_quantize(x, qtype)
    assert ours.dtype == np.uint8 and ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)
    back = C.dequantize(ours, fmt, x.shape)
    assert back.dtype == np.float32 and back.shape == x.shape
    assert np.array_equal(back.view(np.uint32), gguf_dequantize(theirs, qtype).view(np.uint32))


@pytest.mark.parametrize("fmt", FORMATS)
def test_block_formats_take_leading_axes_and_other_float_dtypes(fmt):
    x = np.random.default_rng(1).standard_normal((2, 3, 64))
    qtype = gguf.GGMLQuantizationType[fmt]
    assert np.array_equal(C.quantize(x, fmt), gguf_quantize(x, qtype))  # float64 in
    assert C.quantize(x, fmt).shape == (2, 3, 2 * C.BLOCK_BYTES[fmt])
    assert np.array_equal(C.quantize(x.astype(np.float16), fmt), gguf_quantize(x.astype(np.float16), qtype))  # fmt: skip


def test_round_half_away_from_zero_where_float32_addition_would_round_up():
    # 0.49999997 * 127 / 0.49999997... : a Q8_0 block whose value / d is 0.49999997 must give 0
    x = np.zeros(32, dtype=np.float32)
    x[0] = 127.0
    x[1] = np.float32(0.49999997)
    assert np.array_equal(C.quantize(x, "Q8_0"), gguf_quantize(x, gguf.GGMLQuantizationType.Q8_0))
    assert C.quantize(x, "Q8_0")[3] == 0


def test_bits_per_weight_by_hand():
    # Q8_0: 2 + 32 bytes per 32 weights; Q4_0: 2 + 16; Q4_1: 2 + 2 + 16
    assert [C.bits_per_weight(f) for f in FORMATS] == [8.5, 4.5, 5.0]
    assert {f: gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[f]] for f in FORMATS} == {
        f: (32, C.BLOCK_BYTES[f]) for f in FORMATS
    }


def test_q4_0_block_worked_by_hand():
    # largest |x| is -4 -> d = -4 / -8 = 0.5; q = trunc(x / 0.5 + 8.5): -4 -> 0, 1 -> 10, 0.3 -> 9
    x = np.zeros(32, dtype=np.float32)
    x[0], x[1], x[17] = -4.0, 1.0, 0.3
    b = C.quantize(x, "Q4_0")
    assert b[:2].view(np.float16)[0] == 0.5
    assert b[2] == (0 | (8 << 4))  # byte 0: weight 0 (q 0) low, weight 16 (0.0 -> q 8) high
    q = np.concatenate([b[2:] & 15, b[2:] >> 4])
    assert q[0] == 0 and q[1] == 10 and q[17] == 9 and q[16] == 8
    assert np.allclose(C.dequantize(b, "Q4_0", (32,))[[0, 1, 17]], [-4.0, 1.0, 0.5])


@pytest.mark.parametrize("seed", range(5))
def test_int8_per_channel_equals_bitsandbytes_vectorwise(seed):
    F = _bnb()
    w = torch.from_numpy(_matrices(seed)[:, :96].copy())
    q, stats, _ = F.int8_vectorwise_quant(w.clone())
    ours, scale = C.int8_quantize(w.numpy(), per_channel=True)
    assert ours.dtype == np.int8 and np.array_equal(ours, q.numpy())
    assert np.array_equal(scale[:, 0] * 127, stats.numpy()) or np.allclose(scale[:, 0] * 127, stats.numpy(), rtol=1e-7, atol=0)  # fmt: skip
    theirs = F.int8_vectorwise_dequant(q, stats).numpy()
    assert np.allclose(C.int8_dequantize(ours, scale), theirs, rtol=1e-6, atol=1e-30)


def test_int8_per_tensor_is_per_channel_on_one_row_and_by_hand():
    F = _bnb()
    w = np.array([[0.5, -1.0], [2.54, 0.01]], dtype=np.float32)
    q, scale = C.int8_quantize(w, per_channel=False)
    # one absmax 2.54: q = round(w * 127 / 2.54) = round(w * 50)
    assert q.tolist() == [[25, -50], [127, 0]] and scale.shape == (1, 1)
    assert np.isclose(scale[0, 0], 2.54 / 127)
    row, _, _ = F.int8_vectorwise_quant(torch.from_numpy(w.reshape(1, -1)).clone())
    assert np.array_equal(q.reshape(1, -1), row.numpy())
    qc, sc = C.int8_quantize(w, per_channel=True)  # rows 1.0 and 2.54
    assert qc.tolist() == [[64, -127], [127, 0]] and np.allclose(sc[:, 0], [1 / 127, 2.54 / 127])


def test_int8_linear_computes_with_the_dequantised_weight():
    torch.manual_seed(0)
    lin = torch.nn.Linear(96, 40)
    q, scale = C.int8_quantize(lin.weight.detach().numpy())
    ref = torch.nn.functional.linear(
        x := torch.randn(5, 96), torch.from_numpy(C.int8_dequantize(q, scale)), lin.bias
    )
    assert torch.allclose(C.Int8Linear.from_linear(lin)(x), ref, rtol=0, atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_nf4_equals_bitsandbytes_bit_for_bit(seed):
    F = _bnb()
    w = torch.from_numpy(_matrices(seed))
    packed, state = F.quantize_4bit(w, quant_type="nf4", blocksize=64)
    ours, absmax = C.nf4_quantize(w.numpy(), block_size=64)
    assert ours.shape == tuple(packed.shape) and np.array_equal(ours, packed.numpy())
    assert np.array_equal(absmax, state.absmax.numpy())
    assert np.array_equal(C.NF4_CODE, state.code.numpy())
    theirs = F.dequantize_4bit(packed, state).numpy()
    assert np.array_equal(C.nf4_dequantize(ours, absmax, w.shape), theirs)


def test_nf4_levels_are_normal_quantiles_and_ties_go_down():
    assert np.allclose(C.nf4_levels(), C.NF4_CODE, atol=2e-7)
    mid = (C.NF4_CODE[8] + C.NF4_CODE[9]) / np.float32(2)  # exactly between levels 8 and 9
    w = np.zeros(64, dtype=np.float32)
    w[0], w[1] = 1.0, mid
    packed, _ = C.nf4_quantize(w)
    assert packed[0, 0] == (15 << 4) | 8


def test_roundtrip_and_sizes_by_hand():
    w = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    errors = {f: np.abs(C.roundtrip(w, f) - w).max() for f in C.FORMATS}
    assert errors["fp32"] == 0
    assert errors["int8"] < errors["Q4_1"] and errors["Q8_0"] < errors["Q4_0"]
    model = torch.nn.Sequential(torch.nn.Embedding(32, 64), torch.nn.Linear(64, 128))
    # 32*64 + 64*128 = 10,240 weights; 128 biases stay float32 (512 bytes)
    assert C.weight_bytes(model, "fp32") == 4 * 10_240 + 512
    assert C.weight_bytes(model, "Q8_0") == 10_240 // 32 * 34 + 512
    assert C.weight_bytes(model, "NF4") == 10_240 // 2 + 4 * 10_240 // 64 + 512
    assert C.weight_bytes(model, "int8") == 10_240 + 4 * (32 + 128) + 512
    assert C.weight_bytes(model, "Q4_1", embeddings=False) == 4 * 2048 + 8192 // 32 * 20 + 512
    q = C.quantize_weights(model, "Q4_0")
    assert torch.equal(q[1].weight, torch.from_numpy(C.roundtrip(model[1].weight.detach().numpy(), "Q4_0")))  # fmt: skip
    assert torch.equal(q[1].bias, model[1].bias) and not torch.equal(q[1].weight, model[1].weight)


def test_quantize_weights_keeps_tied_weights_tied():
    model, _ = C.load_tiny_gpt()
    q = C.quantize_weights(model, "Q8_0")
    assert q.lm_head.weight is q.token_embedding.weight
    assert model.lm_head.weight is model.token_embedding.weight
    assert not torch.equal(q.token_embedding.weight, model.token_embedding.weight)


# ---- the KV cache's memory -------------------------------------------------------------------


def test_kv_cache_bytes_per_token_by_hand():
    P = C.PUBLISHED_CONFIGS
    # MHA: 2 (K and V) * 32 layers * 32 heads * 128 * 2 bytes = 524,288 (512 KiB)
    assert C.kv_cache_bytes_per_token(P["Llama 2 7B"]) == 524_288
    assert C.kv_cache_bytes_per_token(P["Llama 3 8B"]) == 2 * 32 * 8 * 128 * 2 == 131_072
    assert C.kv_cache_bytes_per_token(P["Qwen3 8B"]) == 2 * 36 * 8 * 128 * 2
    assert C.kv_cache_bytes_per_token(P["Gemma 3 27B"]) == 2 * 62 * 16 * 128 * 2
    # MLA: 61 layers * (512 latent + 64 rotated key) * 2 bytes = 70,272
    assert C.kv_cache_bytes_per_token(P["DeepSeek-V3"]) == 70_272
    # head_dim defaults to hidden_size // heads; MQA: one KV head
    assert C.kv_cache_bytes_per_token({"num_hidden_layers": 2, "hidden_size": 64,
                                       "num_attention_heads": 4}, bytes_per_value=4) == 2 * 2 * 4 * 16 * 4  # fmt: skip
    assert C.kv_cache_bytes_per_token(dict(num_hidden_layers=3, num_attention_heads=8,
                                           num_key_value_heads=1, head_dim=10)) == 2 * 3 * 10 * 2  # fmt: skip
    assert set(C.CONFIG_SOURCES) == set(P)


def test_published_configs_agree_with_transformers_defaults_where_they_are_that_model():
    from transformers import DeepseekV3Config, LlamaConfig

    llama, deepseek = LlamaConfig(), DeepseekV3Config()  # documented as Llama 2 7B, DeepSeek-V3
    assert C.kv_cache_bytes_per_token(llama) == C.kv_cache_bytes_per_token(C.PUBLISHED_CONFIGS["Llama 2 7B"])  # fmt: skip
    assert C.kv_cache_bytes_per_token(deepseek) == C.kv_cache_bytes_per_token(C.PUBLISHED_CONFIGS["DeepSeek-V3"])  # fmt: skip
    for key in ("num_hidden_layers", "kv_lora_rank", "qk_rope_head_dim", "hidden_size"):
        assert getattr(deepseek, key) == C.PUBLISHED_CONFIGS["DeepSeek-V3"][key]


def test_kv_cache_bytes_per_token_matches_a_filled_cache():
    config = C.ModernConfig(vocab_size=50, d_model=32, num_heads=4, num_kv_heads=2, num_layers=3,
                            d_ff=48, context_length=32)  # fmt: skip
    model = C.ModernLM(config).eval()
    cache = C.KVCache()
    with torch.no_grad():
        model(torch.zeros(1, 7, dtype=torch.long), cache)
    per_token = C.kv_cache_bytes_per_token(
        dict(num_hidden_layers=3, hidden_size=32, num_attention_heads=4, num_key_value_heads=2),
        bytes_per_value=4,
    )
    assert cache.numel() * 4 == 7 * per_token


# ---- speculative decoding --------------------------------------------------------------------


def _llama(layers: int, seed: int, vocab: int = 97):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=96,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=128, tie_word_embeddings=False)  # fmt: skip
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def pair():
    target, draft = _llama(3, 1), _llama(1, 2)
    return target, draft, from_hf(target), from_hf(draft)


@pytest.mark.parametrize("k", [1, 2, 4, 6])
def test_speculative_greedy_equals_plain_greedy_and_transformers_assisted(pair, k):
    hf_target, hf_draft, target, draft = pair
    for seed in range(3):
        ids = torch.randint(0, 97, (1, 3 + 2 * seed), generator=torch.Generator().manual_seed(seed))
        ours = C.speculative_generate(target, draft, ids, 25, num_draft_tokens=k)
        assert torch.equal(ours, C.generate(target, ids, 25, temperature=0))
        theirs = hf_target.generate(
            ids, assistant_model=hf_draft, max_new_tokens=25, do_sample=False,
            num_assistant_tokens=k, num_assistant_tokens_schedule="constant",
            pad_token_id=0, eos_token_id=None,
        )  # fmt: skip
        assert torch.equal(ours, theirs)


def test_speculative_greedy_with_an_early_exit_draft_and_the_stats(pair):
    target = pair[2]
    ids = torch.tensor([[5, 7, 11]])
    draft = C.early_exit_draft(target, 1)
    assert draft.config.num_layers == 1
    assert torch.equal(draft.token_embedding.weight, target.token_embedding.weight)
    out, stats = C.speculative_generate(target, draft, ids, 20, num_draft_tokens=3, return_stats=True)  # fmt: skip
    assert torch.equal(out, C.generate(target, ids, 20, temperature=0))
    assert stats["rounds"] + stats["accepted"] == 20  # each round: its accepted + one of its own
    assert 0 <= stats["acceptance_rate"] <= 1
    # the target as its own draft: every guess is accepted
    out, stats = C.speculative_generate(target, target, ids, 20, num_draft_tokens=4, return_stats=True)  # fmt: skip
    assert stats["acceptance_rate"] == 1.0 and stats["rounds"] == 4
    assert torch.equal(out, C.generate(target, ids, 20, temperature=0))


def test_speculative_greedy_on_the_tiny_gpt():
    gpt, _ = C.load_tiny_gpt()
    ids = torch.tensor([[1, 2, 3, 4]])
    out = C.speculative_generate(gpt, C.early_exit_draft(gpt, 1), ids, 40, num_draft_tokens=4)
    assert torch.equal(out, C.generate(gpt, ids, 40, temperature=0))
    assert out.shape == (1, 44)


@pytest.mark.parametrize("seed", range(8))
def test_acceptance_rule_equals_transformers_speculative_sampling(seed):
    from transformers.generation.utils import _speculative_sampling

    g = torch.Generator().manual_seed(1000 + seed)
    k, vocab = 1 + seed % 5, 13
    q_logits = torch.randn(1, k, vocab, generator=g)
    p_logits = torch.randn(1, k + 1, vocab, generator=g) * (0.3 if seed % 2 else 2.0)
    drafts = torch.multinomial(q_logits[0].softmax(-1), 1, generator=g)[:, 0]
    candidates = torch.cat([torch.zeros(1, 3, dtype=torch.long), drafts[None]], dim=1)
    torch.manual_seed(seed)
    theirs, n_theirs = _speculative_sampling(candidates, q_logits, k, p_logits)
    torch.manual_seed(seed)
    ours, n = C.speculative_accept(drafts, q_logits[0].softmax(-1), p_logits[0].softmax(-1))
    assert n == int(n_theirs) and torch.equal(ours, theirs[0])


def test_acceptance_rule_output_is_the_target_distribution_chi_squared():
    scipy_stats = pytest.importorskip("scipy.stats")
    g = torch.Generator().manual_seed(0)
    vocab, draws = 6, 20_000
    p = torch.tensor([0.05, 0.30, 0.10, 0.25, 0.20, 0.10]).repeat(2, 1)  # (k + 1, vocab), k = 1
    q = torch.tensor([[0.30, 0.05, 0.25, 0.10, 0.10, 0.20]])
    first = torch.zeros(vocab)
    drafts = torch.multinomial(q[0], draws, replacement=True, generator=g)
    accepted = 0
    for x in drafts:
        tokens, n = C.speculative_accept(x[None], q, p, generator=g)
        first[tokens[0]] += 1
        accepted += n
    chi2 = scipy_stats.chisquare(first.numpy(), draws * p[0].numpy())
    assert chi2.pvalue > 1e-3, chi2
    # and the acceptance rate is sum_x min(p, q) = 1 - total variation distance
    assert abs(accepted / draws - torch.minimum(p[0], q[0]).sum().item()) < 0.015


def test_speculative_sampling_is_distributed_as_the_target(pair):
    scipy_stats = pytest.importorskip("scipy.stats")
    target, draft = pair[2], pair[3]
    ids = torch.tensor([[3, 1, 4]])
    with torch.no_grad():
        p = torch.softmax(target(ids)[0, -1] / 1.5, -1)  # the target's first new token
    top = p.topk(4).indices
    g = torch.Generator().manual_seed(0)
    counts = torch.zeros(97)
    for _ in range(1500):
        out = C.speculative_generate(target, draft, ids, 1, num_draft_tokens=1, temperature=1.5, generator=g)  # fmt: skip
        counts[out[0, -1]] += 1
    observed = [*counts[top].tolist(), counts.sum().item() - counts[top].sum().item()]
    expected = [*(1500 * p[top]).tolist(), 1500 * (1 - p[top].sum().item())]
    assert scipy_stats.chisquare(observed, expected).pvalue > 1e-3
    # longer runs: the right length, tokens in the vocabulary
    out = C.speculative_generate(target, draft, ids, 30, num_draft_tokens=4, temperature=1.0, generator=g)  # fmt: skip
    assert out.shape == (1, 33) and torch.equal(out[:, :3], ids)


def test_kv_cache_crop():
    cache = C.KVCache()
    model = C.ModernLM(C.ModernConfig(vocab_size=20, d_model=16, num_heads=2, num_kv_heads=1, num_layers=2, d_ff=24, context_length=16)).eval()  # fmt: skip
    with torch.no_grad():
        model(torch.arange(6)[None], cache)
        cache.crop(4)
        assert len(cache) == 4
        full = model(torch.arange(6)[None])[:, 4:]
        assert torch.allclose(model(torch.arange(4, 6)[None], cache), full, atol=1e-6)
