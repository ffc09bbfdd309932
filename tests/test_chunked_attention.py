"""Chunked attention (lecture 10) against course_lib's naive attention and torch's SDPA."""

import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from course_lib import (
    attention_block_update,
    attention_cost,
    causal_mask,
    chunked_attention,
    chunked_attention_with_logsumexp,
    online_softmax_start,
    padding_mask,
    scaled_dot_product_attention,
)


def torch_sdpa(q, k, v, mask=None, is_causal=False):
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
    batch = torch.broadcast_shapes(t[0].shape[:-2], t[1].shape[:-2], t[2].shape[:-2])
    t = [a.expand(*batch, *a.shape[-2:]) for a in t]  # torch SDPA does not broadcast q/k/v
    if mask is not None and mask.ndim < 2:  # torch wants the (n_q, n_k) axes spelled out
        mask = np.broadcast_to(mask, (q.shape[-2], mask.shape[-1]))
    m = None if mask is None else torch.from_numpy(np.array(mask))
    return F.scaled_dot_product_attention(*t, attn_mask=m, is_causal=is_causal).numpy()


def random_case(rng):
    """Random shapes (0-2 broadcasting batch dims), sizes 1..40, and one of five mask kinds."""
    n_batch = int(rng.integers(0, 3))
    batch = tuple(int(b) for b in rng.integers(1, 4, size=n_batch))

    def some_batch():  # each of q, k, v may drop leading dims or use 1 to broadcast
        dims = [b if rng.random() < 0.7 else 1 for b in batch]
        return tuple(dims[int(rng.integers(0, n_batch + 1)) :])

    kind = rng.choice(["none", "random", "padding", "causal", "key_row"])
    n_q, n_k = (int(n) for n in rng.integers(1, 41, size=2))
    if kind == "causal":
        n_q = n_k
    d_k, d_v = (int(d) for d in rng.integers(1, 17, size=2))
    q = rng.normal(size=(*some_batch(), n_q, d_k)) * 3
    k = rng.normal(size=(*some_batch(), n_k, d_k)) * 3
    v = rng.normal(size=(*some_batch(), n_k, d_v))
    score_batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])  # a mask may not enlarge it
    if kind == "none":
        mask = None
    elif kind == "random":
        mask = rng.random((*score_batch, n_q, n_k)) < 0.5
        mask[..., np.arange(n_q), rng.integers(0, n_k, size=n_q)] = True  # >= 1 key per query
    elif kind == "padding":
        lengths = rng.integers(1, n_k + 1, size=score_batch[0] if score_batch else 1)
        mask = padding_mask(lengths, n_k)  # (b, 1, n_k)
        if not score_batch:
            mask = mask[0]
        elif len(score_batch) == 2:
            mask = mask[:, None]
    elif kind == "causal":
        mask = causal_mask(n_k)
    else:  # one (n_k,) row shared by every query
        mask = rng.random(n_k) < 0.6
        mask[int(rng.integers(0, n_k))] = True
    return q, k, v, mask


@pytest.mark.parametrize("seed", range(40))
def test_equals_naive_and_torch_on_random_shapes_masks_and_blocks(seed):
    rng = np.random.default_rng(seed)
    q, k, v, mask = random_case(rng)
    expected, _ = scaled_dot_product_attention(q, k, v, mask)
    reference = torch_sdpa(q, k, v, mask)
    np.testing.assert_allclose(expected, reference, atol=1e-10)  # the two references agree
    n = max(q.shape[-2], k.shape[-2])
    for block_size in sorted({1, 3, int(rng.integers(1, n + 1)), n, n + 5}):
        got = chunked_attention(q, k, v, mask, block_size=block_size)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
        np.testing.assert_allclose(got, reference, rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", range(40, 50))
def test_float32_on_random_shapes_and_masks(seed):
    rng = np.random.default_rng(seed)
    q, k, v, mask = (None if a is None else a.astype(np.float32) if a.dtype != bool else a
                     for a in random_case(rng))  # fmt: skip
    reference = torch_sdpa(q, k, v, mask)
    for block_size in (1, 7, 64):
        got = chunked_attention(q, k, v, mask, block_size=block_size)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("n_q", "n_k"), [(1, 1), (13, 13), (7, 20), (20, 7), (64, 64)])
@pytest.mark.parametrize("block_size", [1, 4, 5, 16, 100])
def test_causal_flag_matches_torch_is_causal(n_q, n_k, block_size):
    rng = np.random.default_rng(n_q * 100 + n_k)
    q, k, v = (
        rng.normal(size=(2, n_q, 8)),
        rng.normal(size=(2, n_k, 8)),
        rng.normal(size=(2, n_k, 3)),
    )
    got = chunked_attention(q, k, v, block_size=block_size, causal=True)
    np.testing.assert_allclose(got, torch_sdpa(q, k, v, is_causal=True), atol=1e-10)
    if n_q == n_k:  # and the library's mask says the same
        expected, _ = scaled_dot_product_attention(q, k, v, causal_mask(n_q))
        np.testing.assert_allclose(got, expected, atol=1e-10)


def test_causal_flag_combined_with_padding_mask():
    rng = np.random.default_rng(5)
    q, k, v = (rng.normal(size=(3, 2, 23, 8)) for _ in range(3))
    pad = padding_mask(np.array([23, 9, 1]), 23)[:, None]  # (3, 1, 1, 23)
    got = chunked_attention(q, k, v, pad, block_size=6, causal=True)
    expected, _ = scaled_dot_product_attention(q, k, v, pad & causal_mask(23))
    np.testing.assert_allclose(got, expected, atol=1e-10)


def test_float32_in_float32_out_and_close_to_torch():
    rng = np.random.default_rng(6)
    q, k, v = (rng.normal(size=(2, 100, 16)).astype(np.float32) for _ in range(3))
    got = chunked_attention(q, k, v, block_size=33, causal=True)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, torch_sdpa(q, k, v, is_causal=True), rtol=1e-5, atol=1e-5)
    # a float32 query with float64 keys is promoted exactly as the naive version does
    assert chunked_attention(q, k.astype(np.float64), v).dtype == np.float64


def test_single_position():
    q, k, v = np.array([[2.0]]), np.array([[-1.0]]), np.array([[3.0, 4.0]])
    assert chunked_attention(q, k, v, block_size=8).tolist() == [[3.0, 4.0]]


def test_logsumexp_matches_torch():
    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(19, 4)), rng.normal(size=(31, 4)), rng.normal(size=(31, 2))
    mask = rng.random((19, 31)) < 0.7
    mask[:, 0] = True
    out, lse = chunked_attention_with_logsumexp(q, k, v, mask, block_size=8)
    np.testing.assert_allclose(out, chunked_attention(q, k, v, mask, block_size=8), atol=0)
    scores = torch.from_numpy(q @ k.T / 2.0).masked_fill(~torch.from_numpy(mask), -torch.inf)
    np.testing.assert_allclose(lse, torch.logsumexp(scores, dim=-1).numpy(), atol=1e-12)


def test_never_allocates_the_score_matrix():
    n, d = 2048, 16
    rng = np.random.default_rng(8)
    q, k, v = (rng.normal(size=(n, d)) for _ in range(3))
    tracemalloc.start()
    try:
        chunked_attention(q, k, v, block_size=128, causal=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    score_matrix = n * n * 8  # 32 MiB in float64
    assert peak < score_matrix / 8, f"peak {peak} bytes"


def test_block_update_folds_blocks_into_the_full_result():
    rng = np.random.default_rng(9)
    q, k, v = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 11, 4)), rng.normal(size=(2, 11, 3))
    mask = rng.random((2, 5, 11)) < 0.6
    mask[..., 0] = True
    state, acc = online_softmax_start((2, 5)), np.zeros((2, 5, 3))
    for ks in (0, 4, 8):
        state, acc = attention_block_update(
            state, acc, q, k[:, ks : ks + 4], v[:, ks : ks + 4], mask[..., ks : ks + 4]
        )
    got = acc / state.running_sum[..., None]
    np.testing.assert_allclose(got, torch_sdpa(q, k, v, mask), atol=1e-12)


def test_block_update_errors():
    q, k, v = np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2))
    with pytest.raises(ValueError, match=r"acc has shape \(3, 3\), expected \(\.\.\., b_q, d_v\)"):
        attention_block_update(online_softmax_start(3), np.zeros((3, 3)), q, k, v)
    with pytest.raises(ValueError, match=r"mask_block of shape \(2,\) does not broadcast"):
        attention_block_update(online_softmax_start(3), np.zeros((3, 2)), q, k, v, np.ones(2, bool))
    with pytest.raises(ValueError, match=r"state.running_max has shape \(4,\)"):
        attention_block_update(online_softmax_start(4), np.zeros((3, 2)), q, k, v)


def _error(fn, *args, **kwargs):
    with pytest.raises((ValueError, TypeError)) as info:
        fn(*args, **kwargs)
    return info.type, str(info.value)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.ones((3, 4)), np.ones((5, 3)), np.ones((5, 2))), "same feature size d_k"),
        ((np.ones((3, 4)), np.ones((5, 4)), np.ones((6, 2))), "same number of positions n_k"),
        ((np.ones((2, 3, 4)), np.ones((3, 5, 4)), np.ones((5, 2))), "shapes do not broadcast"),
        ((np.ones(4), np.ones((5, 4)), np.ones((5, 2))), "q must have at least 2 dimension"),
        ((np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), np.ones((3, 5))), "must be boolean"),
        ((np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), np.ones((3, 4), bool)), "broadcast"),
        ((np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), np.ones((2, 3, 5), bool)), "enlarge"),
        (
            (np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), np.zeros((3, 5), bool)),
            "hides every",
        ),
        ((np.array([["a"]]), np.ones((5, 1)), np.ones((5, 2))), "real numbers"),
    ],
)
def test_same_errors_as_the_naive_version(args, match):
    naive = _error(scaled_dot_product_attention, *args)
    assert naive == _error(chunked_attention, *args)
    assert match in naive[1]


def test_own_errors():
    q = np.ones((3, 4))
    with pytest.raises(ValueError, match="block_size must be >= 1, got 0"):
        chunked_attention(q, q, q, block_size=0)
    with pytest.raises(TypeError, match="block_size must be an integer"):
        chunked_attention(q, q, q, block_size=2.0)
    mask = np.ones((3, 3), bool)
    mask[1] = [False, False, True]  # fine alone, but causal hides key 2 from query 1
    assert chunked_attention(q, q, q, mask).shape == (3, 4)
    with pytest.raises(ValueError, match=r"hides every key from some query .*causal=True"):
        chunked_attention(q, q, q, mask, causal=True)


def test_attention_cost_by_hand_and_against_torch_flop_counter():
    cost = attention_cost(3, 5, 4, 2, itemsize=8)
    assert cost.matmul_flops == 2 * 3 * 5 * 4 + 2 * 3 * 5 * 2  # 180
    assert cost.softmax_elements == 15
    assert cost.score_bytes == 120
    assert cost.io_bytes == (12 + 20 + 10 + 6) * 8
    n, d = 128, 64
    q, k, v = (torch.randn(n, d) for _ in range(3))
    with FlopCounterMode(display=False) as counter:
        torch.softmax(q @ k.T / d**0.5, dim=-1) @ v
    assert attention_cost(n, n, d).matmul_flops == counter.get_total_flops()
    assert attention_cost(n, n, d).score_bytes == (q @ k.T).nbytes
    with pytest.raises(ValueError, match="n_q must be >= 1"):
        attention_cost(0, 3, 4)
