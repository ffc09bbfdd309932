"""Scaled dot-product attention, its masks and the Q/K/V projections, against torch and by hand."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_lib import (
    attention_scores,
    causal_mask,
    padding_mask,
    project_qkv,
    project_qkv_columns,
    scaled_dot_product_attention,
    scaled_dot_product_attention_inplace,
)


def _t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(x))  # a writable copy (broadcast views are read-only)


def _torch_weights(q, k, mask=None) -> np.ndarray:
    """softmax(q k^T / sqrt(d_k)) written out in torch, masked entries set to -inf first."""
    scores = _t(q) @ _t(k).transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~_t(mask), float("-inf"))
    return torch.softmax(scores, dim=-1).numpy()


def _torch_sdpa(q, k, v, mask=None) -> np.ndarray:
    m = None if mask is None else _t(mask)
    return F.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=m).numpy()


def _random_mask(rng, shape) -> np.ndarray:
    """A random boolean mask with at least one True in every row (every query sees a key)."""
    mask = rng.random(shape) < 0.5
    rows = np.indices(shape[:-1])
    mask[(*rows, rng.integers(shape[-1], size=shape[:-1]))] = True
    return mask


# --- against torch -------------------------------------------------------------------------

SHAPES = [
    # (q batch, k batch, v batch, n_q, n_k, d_k, d_v)
    ((), (), (), 1, 1, 1, 1),
    ((), (), (), 4, 6, 3, 5),
    ((2,), (2,), (2,), 5, 5, 8, 8),
    ((2, 3), (2, 3), (2, 3), 4, 7, 16, 2),
    ((2, 3), (1, 3), (2, 1), 3, 5, 4, 6),  # leading dims that broadcast
]


@pytest.mark.parametrize(("bq", "bk", "bv", "n_q", "n_k", "d_k", "d_v"), SHAPES)
def test_matches_torch_sdpa_without_mask(bq, bk, bv, n_q, n_k, d_k, d_v):
    rng = np.random.default_rng(10)
    q = rng.normal(size=(*bq, n_q, d_k))
    k = rng.normal(size=(*bk, n_k, d_k))
    v = rng.normal(size=(*bv, n_k, d_v))
    out, w = scaled_dot_product_attention(q, k, v)
    batch = np.broadcast_shapes(bq, bk, bv)
    assert out.shape == (*batch, n_q, d_v) and out.dtype == np.float64
    k_full = np.broadcast_to(k, (*batch, n_k, d_k))
    v_full = np.broadcast_to(v, (*batch, n_k, d_v))
    q_full = np.broadcast_to(q, (*batch, n_q, d_k))
    np.testing.assert_allclose(out, _torch_sdpa(q_full, k_full, v_full), rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        np.broadcast_to(w, (*batch, n_q, n_k)), _torch_weights(q_full, k_full), rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["causal", "padding", "random"])
@pytest.mark.parametrize(("batch", "n_q", "n_k"), [((), 5, 5), ((2,), 4, 4), ((2, 3), 6, 6)])
def test_matches_torch_sdpa_with_boolean_masks(kind, batch, n_q, n_k):
    rng = np.random.default_rng(11)
    d_k, d_v = 4, 3
    q = rng.normal(size=(*batch, n_q, d_k))
    k = rng.normal(size=(*batch, n_k, d_k))
    v = rng.normal(size=(*batch, n_k, d_v))
    if kind == "causal":
        mask = causal_mask(n_q)  # (n, n), broadcasts over every leading dim
    elif kind == "padding":
        b = batch[0] if batch else 1
        mask = padding_mask(rng.integers(1, n_k + 1, size=b), n_k)  # (b, 1, n_k)
        if len(batch) == 2:
            mask = mask[:, None]  # (b, 1, 1, n_k) against (b, heads, n_q, n_k)
        elif not batch:
            mask = mask[0]  # (1, n_k)
    else:
        mask = _random_mask(rng, (*batch, n_q, n_k))
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    full = np.broadcast_to(mask, (*batch, n_q, n_k))
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, full), rtol=0, atol=1e-10)
    np.testing.assert_allclose(w, _torch_weights(q, k, full), rtol=0, atol=1e-12)
    assert np.all(w[~full] == 0.0)  # masked keys get exactly zero weight
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=0, atol=1e-12)


def test_float32_stays_float32_and_matches_torch():
    rng = np.random.default_rng(12)
    q, k, v = (rng.normal(size=(2, 4, 8)).astype(np.float32) for _ in range(3))
    mask = causal_mask(4)
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    assert out.dtype == np.float32 and w.dtype == np.float32
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, mask), rtol=1e-5, atol=1e-6)


def test_integer_inputs_are_accepted_as_float64():
    q = [[1, 0], [0, 1]]
    out, w = scaled_dot_product_attention(q, q, q)
    assert out.dtype == np.float64
    x = np.array(q, dtype=np.float64)
    np.testing.assert_allclose(out, _torch_sdpa(x, x, x), atol=1e-12)


@pytest.mark.parametrize(("bq", "bk", "bv", "n_q", "n_k", "d_k", "d_v"), SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_inplace_version_equals_the_literal_one(bq, bk, bv, n_q, n_k, d_k, d_v, dtype):
    rng = np.random.default_rng(n_q * 100 + n_k)
    q = rng.normal(size=(*bq, n_q, d_k)).astype(dtype)
    k = rng.normal(size=(*bk, n_k, d_k)).astype(dtype)
    v = rng.normal(size=(*bv, n_k, d_v)).astype(dtype)
    mask = _random_mask(rng, (*np.broadcast_shapes(bq, bk), n_q, n_k))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for m in (None, mask):
        out, w = scaled_dot_product_attention(q, k, v, mask=m)
        out_ip, w_ip = scaled_dot_product_attention_inplace(q, k, v, mask=m)
        assert out_ip.dtype == out.dtype == dtype
        np.testing.assert_allclose(out_ip, out, rtol=tol, atol=tol)
        np.testing.assert_allclose(w_ip, w, rtol=tol, atol=tol)
        if m is not None:
            assert np.all(w[..., ~np.broadcast_to(m, w.shape)] == 0)


@pytest.mark.parametrize(
    "attention", [scaled_dot_product_attention, scaled_dot_product_attention_inplace]
)
def test_large_float32_scores_stay_finite(attention):
    # Scores near 90: exp(90) overflows float32 (max ~3.4e38 = e^88.7). Without the softmax's
    # max-subtraction the weights would be inf/inf = nan; torch subtracts the max too.
    q = np.full((3, 4), 6.0, dtype=np.float32)  # 6 * 7.5 * 4 / sqrt(4) = 90
    k = np.array([[7.5, 7.5, 7.5, 7.5], [7.0, 7.0, 7.0, 7.0], [1.0, 1.0, 1.0, 1.0]], np.float32)
    v = np.eye(3, dtype=np.float32)
    assert attention_scores(q, k).max() == pytest.approx(90.0)
    out, w = attention(q, k, v)
    assert np.isfinite(w).all() and np.isfinite(out).all()
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v), rtol=1e-5, atol=1e-6)


# --- worked by hand ------------------------------------------------------------------------


def test_two_tokens_d_k_1_by_hand():
    # d_k = 1, so sqrt(d_k) = 1. Keys 0 and ln 3; values 4 and 8.
    #   query 1: scores (0, ln 3)   -> e^s = (1, 3) -> weights (1/4, 3/4)  -> 4/4 + 3*8/4 = 7
    #   query 2: scores (0, 2 ln 3) -> e^s = (1, 9) -> weights (1/10, 9/10) -> 0.4 + 7.2 = 7.6
    q = np.array([[1.0], [2.0]])
    k = np.array([[0.0], [math.log(3.0)]])
    v = np.array([[4.0], [8.0]])
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w, [[0.25, 0.75], [0.1, 0.9]], rtol=1e-14)
    np.testing.assert_allclose(out, [[7.0], [7.6]], rtol=1e-14)
    # with a causal mask query 1 sees only key 1: weight (1, 0), output 4; query 2 unchanged
    out, w = scaled_dot_product_attention(q, k, v, mask=causal_mask(2))
    np.testing.assert_array_equal(w[0], [1.0, 0.0])
    np.testing.assert_allclose(out, [[4.0], [7.6]], rtol=1e-14)


def test_notes_scores_112_and_96_with_d_k_64():
    # q . k1 = 64 * 1.75 = 112 and q . k2 = 64 * 1.5 = 96; divided by sqrt(64) = 8: 14 and 12.
    q = np.ones((1, 64))
    k = np.stack([np.full(64, 1.75), np.full(64, 1.5)])
    v = np.array([[1.0, 0.0], [0.0, 1.0]])  # one-hot values: the output equals the weights
    np.testing.assert_array_equal(attention_scores(q, k), [[14.0, 12.0]])
    out, w = scaled_dot_product_attention(q, k, v)
    e14, e12 = math.exp(14.0), math.exp(12.0)
    np.testing.assert_allclose(w, [[e14 / (e14 + e12), e12 / (e14 + e12)]], rtol=1e-14)
    np.testing.assert_allclose(out, w, rtol=1e-15)
    assert np.round(w, 2).tolist() == [[0.88, 0.12]]


def test_attention_scores_matches_torch():
    rng = np.random.default_rng(13)
    q, k = rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(2, 3, 6, 4))
    expected = (_t(q) @ _t(k).transpose(-1, -2) / 2.0).numpy()
    np.testing.assert_allclose(attention_scores(q, k), expected, rtol=1e-14, atol=1e-14)
    with pytest.raises(ValueError, match=r"q \(5, 4\) and k \(6, 3\) must share .* d_k"):
        attention_scores(np.zeros((5, 4)), np.zeros((6, 3)))
    with pytest.raises(TypeError, match=r"k must contain real numbers"):
        attention_scores(np.zeros((2, 2)), [["a", "b"]])


# --- bad input -----------------------------------------------------------------------------


def test_mismatched_d_k_names_both_shapes():
    with pytest.raises(
        ValueError, match=r"q and k .* d_k: q has shape \(3, 4\).* k has shape \(5, 2\)"
    ):
        scaled_dot_product_attention(np.zeros((3, 4)), np.zeros((5, 2)), np.zeros((5, 6)))


def test_keys_and_values_of_different_lengths():
    with pytest.raises(
        ValueError, match=r"k and v .* n_k: k has shape \(5, 4\).* v has shape \(6, 4\)"
    ):
        scaled_dot_product_attention(np.zeros((3, 4)), np.zeros((5, 4)), np.zeros((6, 4)))


def test_leading_dims_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"shapes do not broadcast: q\[..., :-2\] \(2,\)"):
        scaled_dot_product_attention(np.zeros((2, 3, 4)), np.zeros((3, 5, 4)), np.zeros((3, 5, 4)))


def test_bad_mask_shape():
    q, k, v = np.zeros((3, 4)), np.zeros((5, 4)), np.zeros((5, 2))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast .* \(3, 5\)"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((3, 3), dtype=bool))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 3, 5\) would enlarge .* \(3, 5\)"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((2, 3, 5), dtype=bool))


def test_non_boolean_mask():
    q, k, v = np.zeros((3, 4)), np.zeros((3, 4)), np.zeros((3, 2))
    with pytest.raises(TypeError, match=r"mask must be boolean .* got dtype int64"):
        scaled_dot_product_attention(q, k, v, mask=np.tril(np.ones((3, 3), dtype=np.int64)))
    with pytest.raises(TypeError, match=r"mask must be boolean .* got dtype float64"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((3, 3)))


def test_mask_hiding_every_key_of_a_query():
    q, k, v = np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.zeros((2, 3, 2))
    mask = np.ones((2, 3, 3), dtype=bool)
    mask[1, 2] = False  # query 2 of batch 1 sees nothing
    with pytest.raises(ValueError, match=r"mask hides every key .* index \(1, 2\)"):
        scaled_dot_product_attention(q, k, v, mask=mask)


@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_non_numeric_input_names_the_argument(which):
    args = {"q": np.zeros((2, 3)), "k": np.zeros((2, 3)), "v": np.zeros((2, 3))}
    args[which] = [["a", "b", "c"], ["d", "e", "f"]]
    with pytest.raises(TypeError, match=rf"{which} must contain real numbers, got dtype <U1"):
        scaled_dot_product_attention(**args)
    args[which] = np.zeros(3)  # one token without the position axis
    with pytest.raises(ValueError, match=rf"{which} must have at least 2 dimension\(s\)"):
        scaled_dot_product_attention(**args)


# --- masks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_causal_mask_is_torch_tril(n):
    got = causal_mask(n)
    assert got.dtype == np.bool_ and got.shape == (n, n)
    np.testing.assert_array_equal(got, torch.tril(torch.ones(n, n, dtype=torch.bool)).numpy())


def test_causal_mask_by_hand_and_errors():
    np.testing.assert_array_equal(causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    with pytest.raises(ValueError, match=r"n must be >= 1, got 0"):
        causal_mask(0)
    with pytest.raises(TypeError, match=r"n must be an integer, got float 2.5"):
        causal_mask(2.5)
    with pytest.raises(TypeError, match=r"n must be an integer, got bool"):
        causal_mask(True)


def test_padding_mask_matches_explicit_construction():
    lengths, n = [2, 4, 1], 4
    got = padding_mask(lengths, n)
    expected = np.zeros((3, 1, 4), dtype=bool)
    for b, length in enumerate(lengths):
        expected[b, 0, :length] = True
    assert got.dtype == np.bool_ and got.shape == (3, 1, 4)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(padding_mask(np.array([3], dtype=np.int32), 3), [[[1, 1, 1]]])


def test_padding_mask_agrees_with_torch_key_padding():
    # nn.MultiheadAttention's key_padding_mask uses the opposite convention: True = padding.
    rng = np.random.default_rng(14)
    lengths, n, d = np.array([3, 5]), 5, 4
    x = rng.normal(size=(2, n, d))
    out, _ = scaled_dot_product_attention(x, x, x, mask=padding_mask(lengths, n))
    key_padding = torch.arange(n)[None, :] >= torch.from_numpy(lengths)[:, None]
    expected = F.scaled_dot_product_attention(
        _t(x), _t(x), _t(x), attn_mask=~key_padding[:, None, :]
    ).numpy()
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-10)


def test_padding_mask_errors():
    with pytest.raises(ValueError, match=r"every length must be between 1 and n=4, got \[0, 2\]"):
        padding_mask([0, 2], 4)
    with pytest.raises(ValueError, match=r"every length must be between 1 and n=4, got \[5\]"):
        padding_mask([5], 4)
    with pytest.raises(ValueError, match=r"lengths must be a non-empty 1-D array of integers"):
        padding_mask([[1, 2]], 4)
    with pytest.raises(ValueError, match=r"lengths must be a non-empty 1-D array of integers"):
        padding_mask([], 4)
    with pytest.raises(ValueError, match=r"lengths must be a non-empty 1-D array of integers"):
        padding_mask([1.5, 2.0], 4)
    with pytest.raises(TypeError, match=r"n must be an integer"):
        padding_mask([1], 4.0)


# --- Q/K/V projections ---------------------------------------------------------------------


def test_project_qkv_matches_torch_linear():
    rng = np.random.default_rng(15)
    x = rng.normal(size=(2, 5, 6))
    ws = [rng.normal(size=(6, d)) for d in (4, 4, 3)]
    bs = [rng.normal(size=d) for d in (4, 4, 3)]
    got = project_qkv(x, *ws, *bs)
    for y, w, b in zip(got, ws, bs, strict=True):
        # torch stores a Linear weight as (out, in) and computes x @ weight.T + bias
        expected = F.linear(_t(x), _t(w.T), _t(b)).numpy()
        np.testing.assert_allclose(y, expected, rtol=1e-13, atol=1e-13)
    no_bias = project_qkv(x, *ws)
    for y, w in zip(no_bias, ws, strict=True):
        np.testing.assert_allclose(y, F.linear(_t(x), _t(w.T)).numpy(), rtol=1e-13, atol=1e-13)


def test_project_qkv_matches_multihead_in_proj():
    # nn.MultiheadAttention stacks [W_q; W_k; W_v] in in_proj_weight (rows = outputs)
    mha = torch.nn.MultiheadAttention(4, 1, dtype=torch.float64)
    x = np.random.default_rng(16).normal(size=(3, 4))
    w_q, w_k, w_v = (w.detach().numpy().T for w in mha.in_proj_weight.chunk(3))
    b_q, b_k, b_v = (b.detach().numpy() for b in mha.in_proj_bias.chunk(3))
    got = project_qkv(x, w_q, w_k, w_v, b_q, b_k, b_v)
    expected = F.linear(_t(x), mha.in_proj_weight, mha.in_proj_bias).detach().numpy()
    np.testing.assert_allclose(np.concatenate(got, axis=-1), expected, rtol=1e-13, atol=1e-13)


def test_project_qkv_errors():
    x = np.zeros((5, 6))
    w = np.zeros((6, 4))
    with pytest.raises(
        ValueError, match=r"w_k must have shape \(d_model=6, d_out\) .* got \(4, 6\)"
    ):
        project_qkv(x, w, w.T, w)
    with pytest.raises(ValueError, match=r"w_v must have at least 2 dimension"):
        project_qkv(x, w, w, np.zeros(6))
    with pytest.raises(ValueError, match=r"b_q must have shape \(4,\), got \(3,\)"):
        project_qkv(x, w, w, w, np.zeros(3))
    with pytest.raises(ValueError, match=r"x must have at least 2 dimension"):
        project_qkv(np.zeros(6), w, w, w)
    with pytest.raises(TypeError, match=r"x must contain real numbers"):
        project_qkv([["a"] * 6], w, w, w)


def test_column_form_with_biases_equals_row_form():
    rng = np.random.default_rng(17)
    d_model, n = 5, 4
    x_cols = rng.normal(size=(d_model, n))  # one token per column, as in the notes
    omegas = [rng.normal(size=(d, d_model)) for d in (3, 3, 2)]
    betas = [rng.normal(size=d) for d in (3, 3, 2)]
    got = project_qkv_columns(x_cols, omegas[0], betas[0], omegas[1], betas[1], omegas[2], betas[2])
    row_form = project_qkv(x_cols.T, *(o.T for o in omegas), *betas)
    for col, row, omega, beta in zip(got, row_form, omegas, betas, strict=True):
        # q_n = beta + Omega x_n for every column x_n, computed in torch
        expected = (_t(omega) @ _t(x_cols) + _t(beta)[:, None]).numpy()
        np.testing.assert_allclose(col, expected, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(col, row.T, rtol=1e-13, atol=1e-13)


def test_column_form_errors_name_the_argument():
    omega, beta = np.zeros((3, 5)), np.zeros(3)
    with pytest.raises(ValueError, match=r"x_cols must be \(d_model, n\), got shape \(2, 5, 4\)"):
        project_qkv_columns(np.zeros((2, 5, 4)), omega, beta, omega, beta, omega, beta)
    with pytest.raises(
        ValueError, match=r"omega_k must have shape \(d, d_model=5\) .* got \(5, 3\)"
    ):
        project_qkv_columns(np.zeros((5, 4)), omega, beta, omega.T, beta, omega, beta)
    with pytest.raises(ValueError, match=r"beta_v must have shape \(3,\), got \(2,\)"):
        project_qkv_columns(np.zeros((5, 4)), omega, beta, omega, beta, omega, np.zeros(2))
