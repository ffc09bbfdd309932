"""Grouped-query helpers against transformers (repeat_kv, parameter counts, its own KV cache)."""

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaAttention
from transformers.models.llama.modeling_llama import repeat_kv as hf_repeat_kv

from course_lib import (
    attention_parameter_count,
    causal_mask,
    count_parameters,
    kv_cache_bytes,
    repeat_kv,
    scaled_dot_product_attention,
)


@pytest.mark.parametrize("kv_heads,heads", [(1, 4), (2, 4), (4, 4), (3, 12)])
def test_repeat_kv_equals_transformers(kv_heads, heads):
    kv = torch.randn(2, kv_heads, 5, 3)
    ref = hf_repeat_kv(kv, heads // kv_heads)
    assert np.array_equal(repeat_kv(kv.numpy(), heads // kv_heads), ref.numpy())
    # the attention module's repeat (inside MultiHeadAttention.forward) is the same
    assert torch.equal(kv.repeat_interleave(heads // kv_heads, dim=1), ref)


def test_repeat_kv_groups_are_contiguous():
    kv = np.arange(2)[None, :, None, None] * np.ones((1, 2, 1, 1))  # head j holds the value j
    assert repeat_kv(kv, 2)[0, :, 0, 0].tolist() == [0, 0, 1, 1]


def test_grouped_attention_with_all_heads_is_multi_head():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(4, 6, 8)) for _ in range(3))
    plain, _ = scaled_dot_product_attention(q, k, v, causal_mask(6))
    grouped, _ = scaled_dot_product_attention(q, repeat_kv(k, 1), repeat_kv(v, 1), causal_mask(6))
    assert np.array_equal(plain, grouped)
    # One K/V head shared by four query heads: the same as giving each head the same K/V.
    shared, _ = scaled_dot_product_attention(q, repeat_kv(k[:1], 4), repeat_kv(v[:1], 4))
    for h in range(4):
        alone, _ = scaled_dot_product_attention(q[h], k[0], v[0])
        assert np.allclose(shared[h], alone)


@pytest.mark.parametrize("heads,kv_heads,head_dim,bias", [(4, 4, None, False), (4, 2, None, True),
                                                          (8, 1, 16, False), (6, 3, 6, True)])  # fmt: skip
def test_attention_parameter_count_equals_llama_attention(heads, kv_heads, head_dim, bias):
    cfg = LlamaConfig(hidden_size=48, num_attention_heads=heads, num_key_value_heads=kv_heads,
                      head_dim=head_dim, attention_bias=bias)  # fmt: skip
    with torch.device("meta"):
        ref = LlamaAttention(cfg, layer_idx=0)
    assert attention_parameter_count(48, heads, kv_heads, head_dim, bias) == count_parameters(ref)
    assert attention_parameter_count(48, 4, 4, bias=True) == 4 * 48 * 48 + 4 * 48  # lecture 03


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_kv_cache_bytes_equals_transformers_cache(kv_heads):
    cfg = LlamaConfig(vocab_size=30, hidden_size=32, intermediate_size=40, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=kv_heads)  # fmt: skip
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        out = model(torch.randint(0, 30, (2, 11)), use_cache=True)
    cache = out.past_key_values
    measured = sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))
    assert measured == kv_cache_bytes(3, kv_heads, 8, 11, batch=2, bytes_per_value=4)


def test_errors():
    with pytest.raises(
        ValueError, match=r"kv must have shape \(\.\.\., num_kv_heads, n, head_dim\)"
    ):
        repeat_kv(np.ones((2, 3)), 2)
    with pytest.raises(ValueError, match="groups must be >= 1"):
        repeat_kv(np.ones((4, 2, 3)), 0)
    with pytest.raises(ValueError, match="must divide"):
        attention_parameter_count(32, 4, 3)
    with pytest.raises(ValueError, match="seq_len must be >= 1"):
        kv_cache_bytes(2, 2, 8, 0)


def test_kv_cache_bytes_is_exact_for_large_models():
    # Python integers: a 2**64-sized product stays exact instead of wrapping to a negative number
    big = kv_cache_bytes(2**20, 2**10, 2**10, 2**20, batch=2**10, bytes_per_value=2**4)
    assert big == 2 * 2**74 and big > 0
