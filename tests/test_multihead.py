"""Numpy multi-head attention against torch.nn.MultiheadAttention and a per-head loop."""

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import (
    causal_mask,
    merge_heads,
    multi_head_attention,
    padding_mask,
    scaled_dot_product_attention,
    seed_everything,
    split_heads,
)


def test_split_heads_matches_torch_view_transpose():
    x = np.arange(2 * 3 * 8, dtype=float).reshape(2, 3, 8)
    ref = torch.as_tensor(x).view(2, 3, 4, 2).transpose(1, 2).numpy()
    got = split_heads(x, 4)
    assert got.shape == (2, 4, 3, 2)
    np.testing.assert_array_equal(got, ref)
    # Head 1 of token 0 holds features 2 and 3.
    np.testing.assert_array_equal(got[0, 1, 0], [2.0, 3.0])


def test_merge_heads_inverts_split_heads():
    x = np.random.default_rng(0).normal(size=(2, 5, 12))
    np.testing.assert_array_equal(merge_heads(split_heads(x, 3)), x)
    assert merge_heads(np.zeros((4, 2, 5, 3))).shape == (4, 5, 6)  # (batch, heads, n, d_head)


def test_split_heads_errors():
    with pytest.raises(ValueError, match=r"d_model=6 .*shape \(2, 6\).*num_heads=4"):
        split_heads(np.zeros((2, 6)), 4)
    with pytest.raises(ValueError, match="num_heads must be >= 1"):
        split_heads(np.zeros((2, 6)), 0)
    with pytest.raises(ValueError, match="at least 2 dimension"):
        split_heads(np.zeros(6), 2)
    with pytest.raises(ValueError, match="at least 3 dimension"):
        merge_heads(np.zeros((2, 6)))


def _torch_mha(d, h, bias=True):
    seed_everything(0, threads=1)
    m = nn.MultiheadAttention(d, h, bias=bias, batch_first=True).double()
    with torch.no_grad():  # non-zero biases so that a bias bug cannot hide
        if bias:
            m.in_proj_bias.normal_()
            m.out_proj.bias.normal_()
    return m


def _weights(m, d):
    w = m.in_proj_weight.detach().numpy()
    ws = {"w_q": w[:d].T, "w_k": w[d : 2 * d].T, "w_v": w[2 * d :].T,
          "w_o": m.out_proj.weight.detach().numpy().T}  # fmt: skip
    if m.in_proj_bias is not None:
        b = m.in_proj_bias.detach().numpy()
        ws.update(b_q=b[:d], b_k=b[d : 2 * d], b_v=b[2 * d :], b_o=m.out_proj.bias.detach().numpy())
    return ws


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("cross", [False, True])
def test_matches_torch_multihead_attention(bias, cross):
    d, h = 12, 3
    m = _torch_mha(d, h, bias)
    rng = np.random.default_rng(1)
    x_q = rng.normal(size=(2, 5, d))
    x_kv = rng.normal(size=(2, 7, d)) if cross else x_q
    out, w = multi_head_attention(x_q, x_kv, num_heads=h, **_weights(m, d))
    t_q, t_kv = torch.as_tensor(x_q), torch.as_tensor(x_kv)
    ref_out, ref_w = m(t_q, t_kv, t_kv, need_weights=True, average_attn_weights=False)
    assert out.shape == (2, 5, d)
    assert w.shape == (2, h, 5, x_kv.shape[1])
    np.testing.assert_allclose(out, ref_out.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), atol=1e-12)


def test_padding_and_causal_masks_match_torch():
    d, h = 8, 2
    m = _torch_mha(d, h)
    x = np.random.default_rng(2).normal(size=(3, 4, d))
    t = torch.as_tensor(x)
    pad = padding_mask(np.array([4, 2, 3]), 4)  # (batch, 1, n), True = real token
    out, w = multi_head_attention(x, x, num_heads=h, mask=pad, **_weights(m, d))
    ref_out, ref_w = m(t, t, t, key_padding_mask=torch.as_tensor(~pad[:, 0]),
                       average_attn_weights=False)  # fmt: skip
    np.testing.assert_allclose(out, ref_out.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), atol=1e-12)
    assert np.all(w[1, :, :, 2:] == 0.0)

    causal = causal_mask(4)
    out, w = multi_head_attention(x, x, num_heads=h, mask=causal, **_weights(m, d))
    ref_out, ref_w = m(t, t, t, attn_mask=torch.as_tensor(~causal), average_attn_weights=False)
    np.testing.assert_allclose(out, ref_out.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), atol=1e-12)


def test_per_head_mask_is_used_as_given():
    rng = np.random.default_rng(3)
    d, h = 4, 2
    x = rng.normal(size=(1, 3, d))
    eye = np.eye(d)
    mask = np.ones((1, h, 3, 3), dtype=bool)
    mask[0, 1] = np.eye(3, dtype=bool)  # head 1 may only look at itself
    _, w = multi_head_attention(x, x, eye, eye, eye, eye, h, mask=mask)
    np.testing.assert_array_equal(w[0, 1], np.eye(3))
    assert np.all(w[0, 0] > 0)


def test_equals_concat_of_heads_times_w_o():
    # The notes' formula, head by head with slices of the weight matrices.
    rng = np.random.default_rng(4)
    d, h, dh = 6, 3, 2
    x = rng.normal(size=(5, d))
    w_q, w_k, w_v, w_o = (rng.normal(size=(d, d)) for _ in range(4))
    heads = []
    for i in range(h):
        cols = slice(i * dh, (i + 1) * dh)
        head, _ = scaled_dot_product_attention(x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols])
        heads.append(head)
    expected = np.concatenate(heads, axis=-1) @ w_o
    out, w = multi_head_attention(x, x, w_q, w_k, w_v, w_o, h)
    np.testing.assert_allclose(out, expected, atol=1e-12)
    assert w.shape == (h, 5, 5)


def test_errors_name_the_shapes():
    x = np.zeros((2, 3, 6))
    w = np.eye(6)
    with pytest.raises(ValueError, match="not divisible by num_heads=4"):
        multi_head_attention(x, x, w, w, w, w, 4)
    with pytest.raises(ValueError, match=r"w_k must have shape \(d_model=6, d_out\).*got \(5, 6\)"):
        multi_head_attention(x, x, w, np.zeros((5, 6)), w, w, 2)
    with pytest.raises(ValueError, match=r"x_q has shape \(2, 3, 6\), x_kv has shape \(2, 3, 4\)"):
        multi_head_attention(x, np.zeros((2, 3, 4)), w, w, w, w, 2)
    with pytest.raises(ValueError, match=r"mask of shape .* does not broadcast"):
        multi_head_attention(x, x, w, w, w, w, 2, mask=np.ones((2, 3, 5), dtype=bool))
    with pytest.raises(TypeError, match="mask must be boolean"):
        multi_head_attention(x, x, w, w, w, w, 2, mask=np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"w_o must have shape \(h \* d_v=6, d_out\)"):
        multi_head_attention(x, x, w, w, w, np.eye(4), 2)
