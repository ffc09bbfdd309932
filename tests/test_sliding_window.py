"""Sliding-window attention (lecture 16): the mask against transformers' own mask function, the
ring-buffer cache (keeps only the window; cached decoding = the uncached pass), window >= context
= full causal attention exactly, and whole models with sliding layers equal to
MistralForCausalLM (every layer) and Qwen3ForCausalLM (interleaved local/global layers)."""

import pytest
import torch
from transformers import MistralConfig, MistralForCausalLM, Qwen3Config, Qwen3ForCausalLM
from transformers.masking_utils import causal_mask_function, sliding_window_overlay
from transformers.utils import logging as hf_logging

from course_lib import KVCache, ModernConfig, ModernLM, generate
from course_lib.interop import from_hf
from course_lib.nn import (
    LayerKVCache,
    MultiHeadAttention,
    SlidingWindowKVCache,
    causal_mask_from,
    rope_qk,
    sliding_window_mask,
)

hf_logging.set_verbosity_error()


@pytest.mark.parametrize(("start", "n_new", "window"), [(0, 9, 3), (5, 4, 2), (7, 1, 4), (0, 6, 1)])
def test_mask_equals_transformers_mask_function(start, n_new, window):
    ours = sliding_window_mask(start, n_new, window)
    overlay = sliding_window_overlay(window)
    theirs = torch.tensor(
        [[causal_mask_function(0, 0, i, j) and overlay(0, 0, i, j)
          for j in range(start + n_new)] for i in range(start, start + n_new)]
    )  # fmt: skip
    assert torch.equal(ours, theirs)


def test_window_at_least_the_context_is_the_causal_mask():
    for window in (10, 11, 50):
        assert torch.equal(sliding_window_mask(3, 7, window), causal_mask_from(3, 7))


def test_window_at_least_the_context_is_exactly_full_attention():
    torch.manual_seed(0)
    full = MultiHeadAttention(16, 4, 2, bias=False, qk_transform=rope_qk)
    windowed = MultiHeadAttention(16, 4, 2, bias=False, qk_transform=rope_qk, window=12)
    windowed.load_state_dict(full.state_dict())
    x = torch.randn(2, 12, 16)
    assert torch.equal(windowed(x, causal=True), full(x, causal=True))  # bit for bit
    narrow = MultiHeadAttention(16, 4, 2, bias=False, qk_transform=rope_qk, window=3)
    narrow.load_state_dict(full.state_dict())
    assert not torch.allclose(narrow(x, causal=True), full(x, causal=True))


def test_ring_buffer_keeps_only_the_window():
    cache = SlidingWindowKVCache(3)
    k = torch.arange(7.0).view(1, 1, 7, 1)  # key of position p = p
    got, _ = cache.append(k[:, :, :5], k[:, :, :5])  # a prompt longer than the window
    assert got.flatten().tolist() == [0, 1, 2, 3, 4]  # this call's queries need them all
    assert cache.keys.shape[-2] == 3 and len(cache) == 5
    # slots hold positions 3, 4, 2 (p -> p % 3): 2 is overwritten next
    assert cache.keys.flatten().tolist() == [3, 4, 2]
    got, _ = cache.append(k[:, :, 5:6], k[:, :, 5:6])
    assert got.flatten().tolist() == [2, 3, 4, 5]  # in position order, then the new one
    assert cache.keys.flatten().tolist() == [3, 4, 5] and len(cache) == 6


@pytest.mark.parametrize("window", [1, 2, 5, 40])
def test_cached_decoding_equals_the_uncached_pass(window):
    torch.manual_seed(1)
    attn = MultiHeadAttention(16, 4, 2, bias=False, qk_transform=rope_qk, window=window).eval()
    x = torch.randn(2, 17, 16)
    cache = attn.new_cache()
    assert isinstance(cache, SlidingWindowKVCache)
    with torch.no_grad():
        parts = [attn(x[:, :6], causal=True, cache=cache)]
        parts += [attn(x[:, t : t + 1], causal=True, cache=cache) for t in range(6, 13)]
        parts += [attn(x[:, 13:], causal=True, cache=cache)]  # a block of 4 after decoding
        torch.testing.assert_close(torch.cat(parts, 1), attn(x, causal=True), rtol=0, atol=1e-6)
    assert cache.keys.shape[-2] == window  # memory: the window, not the 17 positions


def test_model_cache_with_sliding_layers_stays_small():
    config = ModernConfig(40, 16, 2, 1, 2, 24, sliding_window=4,
                          layer_types=("sliding_attention", "full_attention"))  # fmt: skip
    model = ModernLM(config).eval()
    cache = KVCache()
    with torch.no_grad():
        model(torch.randint(0, 40, (1, 30)), cache)
    assert isinstance(cache.layers[0], SlidingWindowKVCache)
    assert type(cache.layers[1]) is LayerKVCache
    assert cache.layers[0].keys.shape[-2] == 4 and cache.layers[1].keys.shape[-2] == 30
    assert len(cache) == 30


COMMON = dict(vocab_size=97, max_position_embeddings=64, bos_token_id=None, eos_token_id=None,
              pad_token_id=None)  # fmt: skip


def _jiggle(model):
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():  # norm gains away from 1, so a mix-up of norms cannot hide
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn(p.shape, generator=g))
    return model.eval()


def _same_model(hf, n=24):
    ours = from_hf(hf)
    ids = torch.randint(0, 97, (2, n), generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        diff = (ours(ids) - hf(ids).logits).abs().max().item()
    assert diff < 1e-4, diff
    assert sum(p.numel() for p in ours.parameters()) == hf.num_parameters()
    prompt = ids[:, :4]
    theirs = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=16,
                         min_new_tokens=16, do_sample=False, pad_token_id=0)  # fmt: skip
    cached = generate(ours, prompt, 16, temperature=0)
    assert torch.equal(cached, generate(ours, prompt, 16, temperature=0, use_cache=False))
    assert torch.equal(cached, theirs)
    return ours


def test_mistral_every_layer_slides():
    torch.manual_seed(2)
    hf = _jiggle(MistralForCausalLM(MistralConfig(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
        intermediate_size=48, sliding_window=5, **COMMON)))  # fmt: skip
    ours = _same_model(hf)
    assert [b.attn.window for b in ours.blocks] == [5, 5]


def test_qwen3_interleaved_local_and_global_layers():
    torch.manual_seed(3)
    types = ["sliding_attention", "sliding_attention", "full_attention"]
    hf = _jiggle(Qwen3ForCausalLM(Qwen3Config(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        num_hidden_layers=3, intermediate_size=48, use_sliding_window=True, sliding_window=4,
        layer_types=types, **COMMON)))  # fmt: skip
    ours = _same_model(hf)
    assert [b.attn.window for b in ours.blocks] == [4, 4, None]


def test_window_errors():
    with pytest.raises(ValueError, match="window must be >= 1, got 0"):
        MultiHeadAttention(8, 2, window=0)
    with pytest.raises(ValueError, match="sliding_window must be >= 1, got 0"):
        ModernConfig(10, 8, 2, 1, 1, 8, sliding_window=0)
    with pytest.raises(ValueError, match="window=3 needs causal=True"):
        MultiHeadAttention(8, 2, window=3)(torch.zeros(1, 2, 8))
