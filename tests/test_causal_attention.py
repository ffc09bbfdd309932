"""Causal self-attention against torch's scaled_dot_product_attention: MultiHeadAttention as
ModernLM uses it (grouped KV heads, the qk_transform hook, the KV cache) and GPT's
CausalSelfAttention (the same computation written for one case, with its KV cache)."""

import pytest
import torch
import torch.nn.functional as F

from course_lib import (
    CausalSelfAttention,
    KVCache,
    LayerKVCache,
    MultiHeadAttention,
    causal_mask_from,
    repeat_kv,
)


def _reference(attn: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """torch's fused attention (is_causal, enable_gqa) with the module's own projections."""
    b, n, _ = x.shape
    hs = attn.d_head
    q = attn.w_q(x).view(b, n, attn.num_heads, hs).transpose(1, 2)
    k = attn.w_k(x).view(b, n, attn.num_kv_heads, hs).transpose(1, 2)
    v = attn.w_v(x).view(b, n, attn.num_kv_heads, hs).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return attn.w_o(out.transpose(1, 2).reshape(b, n, -1))


@pytest.mark.parametrize(("heads", "kv_heads", "bias"), [(4, 4, True), (4, 2, False), (6, 1, True)])
def test_matches_torch_sdpa_including_gqa(heads, kv_heads, bias):
    torch.manual_seed(0)
    attn = MultiHeadAttention(24, heads, kv_heads, bias=bias).eval()
    x = torch.randn(3, 9, 24)
    torch.testing.assert_close(attn(x, causal=True), _reference(attn, x), rtol=0, atol=1e-6)
    assert attn.w_k.out_features == kv_heads * 24 // heads


def test_future_tokens_do_not_change_the_past():
    torch.manual_seed(1)
    attn = MultiHeadAttention(16, 2).eval()
    x = torch.randn(1, 8, 16)
    y = x.clone()
    y[:, 5:] = torch.randn(1, 3, 16)
    torch.testing.assert_close(
        attn(x, causal=True)[:, :5], attn(y, causal=True)[:, :5], rtol=0, atol=0
    )
    assert not torch.allclose(attn(x, causal=True)[:, 5:], attn(y, causal=True)[:, 5:])


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_cache_token_by_token_equals_full_sequence(kv_heads):
    torch.manual_seed(2)
    attn = MultiHeadAttention(32, 4, kv_heads).eval()
    x = torch.randn(2, 10, 32)
    full = attn(x, causal=True)
    cache = LayerKVCache()
    parts = [attn(x[:, :4], causal=True, cache=cache)]  # a prompt of 4, then one token at a time
    for t in range(4, 10):
        parts.append(attn(x[:, t : t + 1], causal=True, cache=cache))
    torch.testing.assert_close(torch.cat(parts, dim=1), full, rtol=0, atol=1e-6)
    # the cache keeps kv_heads heads (GQA's memory saving), not num_heads
    assert cache.keys.shape == (2, kv_heads, 10, 8) and len(cache) == 10


def test_qk_transform_gets_absolute_positions_with_and_without_cache():
    seen = []

    def rotate_by_position(q, k, positions):
        seen.append(positions.tolist())
        angle = positions.to(q.dtype)[:, None] * 0.1  # (n, 1): a position-dependent change
        return q * torch.cos(angle) + 0.5, k * torch.sin(angle + 1.0)

    torch.manual_seed(3)
    attn = MultiHeadAttention(16, 4, 2, qk_transform=rotate_by_position).eval()
    x = torch.randn(1, 7, 16)
    full = attn(x, causal=True)
    cache = LayerKVCache()
    step = torch.cat(
        [
            attn(x[:, :3], causal=True, cache=cache),
            attn(x[:, 3:5], causal=True, cache=cache),
            attn(x[:, 5:], causal=True, cache=cache),
        ],
        1,
    )
    torch.testing.assert_close(step, full, rtol=0, atol=1e-6)
    assert seen == [list(range(7)), [0, 1, 2], [3, 4], [5, 6]]
    no_hook = MultiHeadAttention(16, 4, 2).eval()
    no_hook.load_state_dict(attn.state_dict())
    assert not torch.allclose(no_hook(x, causal=True), full)


def test_causal_mask_from_and_repeat_kv():
    expected = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_mask_from(2, 2), expected)
    assert torch.equal(causal_mask_from(0, 3), torch.ones(3, 3, dtype=torch.bool).tril())
    x = torch.arange(2 * 3).reshape(1, 2, 3, 1)  # numpy's repeat_kv == the attention's repeat
    assert repeat_kv(x.numpy(), 2)[0, :, :, 0].tolist() == [
        [0, 1, 2],
        [0, 1, 2],
        [3, 4, 5],
        [3, 4, 5],
    ]
    assert torch.equal(
        x.repeat_interleave(2, dim=1), torch.as_tensor(repeat_kv(x.numpy(), 2)).long()
    )


def test_kv_cache_layers_length_and_numel():
    cache = KVCache()
    assert len(cache) == 0 and cache.numel() == 0
    cache.layer(0).append(torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4))
    cache.layer(1).append(torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4))
    assert len(cache) == 5 and cache.numel() == 2 * 2 * 5 * 2 * 4
    with pytest.raises(ValueError, match="cache holds 2 layers but the model has 3"):
        cache.check_fits(3, 1, 2, 4)
    with pytest.raises(ValueError, match="this call needs batch=2"):
        cache.check_fits(2, 2, 2, 4)
    cache.check_fits(2, 1, 2, 4)  # the model that filled it


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d_model": 10, "num_heads": 3}, ValueError, "not divisible"),
        ({"d_model": 12, "num_heads": 4, "num_kv_heads": 3}, ValueError, "must divide"),
        ({"d_model": 12, "num_heads": 4, "dropout": 1.0}, ValueError, "dropout"),
        ({"d_model": 12, "num_heads": 4, "qk_transform": 3}, TypeError, "qk_transform"),
        ({"d_model": 12, "num_heads": 0}, ValueError, "num_heads"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        MultiHeadAttention(**kwargs)


def test_bad_input_shape():
    with pytest.raises(ValueError, match=r"query must have shape \(batch, n, d_model=8\)"):
        MultiHeadAttention(8, 2)(torch.zeros(2, 3, 6), causal=True)


def _gpt_attention(seed: int, d: int = 32, heads: int = 4) -> CausalSelfAttention:
    torch.manual_seed(seed)
    attn = CausalSelfAttention(d, heads).eval()
    with torch.no_grad():  # non-zero biases, so a mix-up of the four maps cannot hide
        for lin in (attn.w_q, attn.w_k, attn.w_v, attn.w_o):
            lin.bias.normal_()
    return attn


@pytest.mark.parametrize("heads", [1, 4, 8])
def test_gpt_causal_self_attention_matches_torch_sdpa_and_multi_head_attention(heads):
    attn = _gpt_attention(4, heads=heads)
    general = MultiHeadAttention(32, heads).eval()
    general.load_state_dict(attn.state_dict())  # the same weights, under the same names
    x = torch.randn(3, 9, 32)
    torch.testing.assert_close(attn(x), _reference(general, x), rtol=0, atol=1e-6)
    torch.testing.assert_close(attn(x), general(x, causal=True), rtol=0, atol=1e-6)


def test_gpt_causal_self_attention_cache_equals_torch_sdpa_on_the_full_sequence():
    attn = _gpt_attention(5)
    general = MultiHeadAttention(32, 4).eval()
    general.load_state_dict(attn.state_dict())
    x = torch.randn(2, 10, 32)
    cache = LayerKVCache()
    parts = [attn(x[:, :4], cache), attn(x[:, 4:6], cache)]  # a prompt, then two tokens at once
    parts += [attn(x[:, t : t + 1], cache) for t in range(6, 10)]  # then one at a time
    torch.testing.assert_close(torch.cat(parts, 1), _reference(general, x), rtol=0, atol=1e-6)
    assert cache.keys.shape == (2, 4, 10, 8)


def test_gpt_causal_self_attention_bad_inputs():
    attn = CausalSelfAttention(8, 2)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, n, d_model=8\)"):
        attn(torch.zeros(2, 3, 6))
    with pytest.raises(TypeError, match="cache must be a LayerKVCache or None, got KVCache"):
        attn(torch.zeros(1, 3, 8), KVCache())
    with pytest.raises(ValueError, match="this call needs batch=2"):
        cache = LayerKVCache()
        attn(torch.zeros(1, 3, 8), cache)
        attn(torch.zeros(2, 1, 8), cache)
    with pytest.raises(ValueError, match="not divisible"):
        CausalSelfAttention(10, 3)
