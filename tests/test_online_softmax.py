"""Online softmax (lecture 10) against torch.softmax / torch.logsumexp and hand-worked values."""

import math

import numpy as np
import pytest
import torch

from course_lib import (
    OnlineSoftmaxState,
    online_softmax,
    online_softmax_start,
    online_softmax_step,
    online_softmax_update,
)


def torch_softmax(x, axis=-1):
    return torch.softmax(torch.from_numpy(np.ascontiguousarray(x)), dim=axis).numpy()


@pytest.mark.parametrize("seed", range(12))
def test_online_softmax_matches_torch_on_random_shapes_and_blocks(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(rng.integers(1, 6, size=rng.integers(1, 4)))
    x = rng.normal(scale=rng.choice([0.1, 3.0, 300.0]), size=shape)
    axis = int(rng.integers(-len(shape), len(shape)))
    n = shape[axis]
    for block_size in sorted({1, 2, 3, max(1, n - 1), n, n + 4}):
        got = online_softmax(x, block_size, axis=axis)
        np.testing.assert_allclose(got, torch_softmax(x, axis), rtol=0, atol=1e-12)


def test_block_sizes_that_do_not_divide_the_row_and_huge_logits():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 37)) * 50 + 1000.0  # exp(1000) overflows; the online version must not
    for block_size in (1, 5, 7, 36, 37, 100):
        np.testing.assert_allclose(online_softmax(x, block_size), torch_softmax(x), atol=1e-12)


def test_masked_entries_including_whole_leading_blocks():
    x = np.array(
        [[-np.inf, -np.inf, -np.inf, 1.0, 2.0, -np.inf, 0.5], [3.0, -np.inf, 1, 2, 2, 2, 2]]
    )
    for block_size in (1, 2, 3, 4, 7):
        got = online_softmax(x, block_size)
        np.testing.assert_allclose(got, torch_softmax(x), atol=1e-12)
        assert got[0, :3].tolist() == [0.0, 0.0, 0.0]  # masked: exactly 0, never nan


def test_float32_stays_float32():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 50)).astype(np.float32)
    got = online_softmax(x, 8)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, torch_softmax(x), rtol=1e-5, atol=1e-7)


def test_one_element_row():
    assert online_softmax(np.array([[5.0]]), 3).tolist() == [[1.0]]


def test_update_by_hand():
    # blocks [1, 2] then [3]: m = 2, s = e^-1 + 1; then m = 3, s = (e^-1 + 1) e^-1 + 1
    state = online_softmax_update(online_softmax_start(), [1.0, 2.0])
    assert float(state.running_max) == 2.0
    assert math.isclose(float(state.running_sum), math.exp(-1) + 1)
    state = online_softmax_update(state, [3.0])
    assert float(state.running_max) == 3.0
    assert math.isclose(float(state.running_sum), (math.exp(-1) + 1) * math.exp(-1) + 1)
    assert math.isclose(float(state.logsumexp), math.log(math.exp(1) + math.exp(2) + math.exp(3)))


def test_step_returns_rescale_and_block_terms_by_hand():
    state = OnlineSoftmaxState(np.array(2.0), np.array(1.5))
    new, rescale, p = online_softmax_step(state, np.array([3.0, 0.0]))
    assert math.isclose(float(rescale), math.exp(-1))  # exp(old max - new max)
    np.testing.assert_allclose(p, [1.0, math.exp(-3)])
    assert math.isclose(float(new.running_sum), 1.5 * math.exp(-1) + 1 + math.exp(-3))
    # a block below the running maximum: nothing to rescale
    new2, rescale2, _ = online_softmax_step(new, np.array([-1.0]))
    assert float(rescale2) == 1.0 and float(new2.running_max) == 3.0


def test_streamed_logsumexp_matches_torch_for_a_batch_of_rows():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 29)) * 20
    state = online_softmax_start((2, 3))
    for start in range(0, 29, 6):
        state = online_softmax_update(state, x[..., start : start + 6])
    np.testing.assert_allclose(
        state.logsumexp, torch.logsumexp(torch.from_numpy(x), dim=-1).numpy(), atol=1e-12
    )


def test_start_state():
    s = online_softmax_start((2, 3), dtype=np.float32)
    assert s.running_max.shape == (2, 3) and np.isneginf(s.running_max).all()
    assert s.running_sum.dtype == np.float32 and (s.running_sum == 0).all()
    assert online_softmax_start(4).running_max.shape == (4,)


@pytest.mark.parametrize(
    ("x", "block_size", "err", "match"),
    [
        (np.array([1.0, np.nan]), 2, ValueError, "nan"),
        (np.array([1.0, np.inf]), 2, ValueError, r"\+inf"),
        (np.array([[0.0, 1.0], [-np.inf, -np.inf]]), 1, ValueError, "all -inf"),
        (np.array([1.0, 2.0]), 0, ValueError, "block_size must be >= 1, got 0"),
        (np.array([1.0, 2.0]), 2.5, TypeError, "block_size must be an integer"),
        (np.array([]), 2, ValueError, "x is empty"),
        (np.array(["a"]), 2, TypeError, "x must contain real numbers"),
    ],
)
def test_online_softmax_errors(x, block_size, err, match):
    with pytest.raises(err, match=match):
        online_softmax(x, block_size)


def test_online_softmax_bad_axis():
    with pytest.raises(ValueError, match=r"axis=2 is out of range for x of shape \(3,\)"):
        online_softmax(np.ones(3), 2, axis=2)


def test_update_errors():
    with pytest.raises(ValueError, match=r"state.running_max has shape \(3,\) but the block has"):
        online_softmax_update(online_softmax_start(3), np.ones((2, 4)))
    with pytest.raises(TypeError, match="state must be an OnlineSoftmaxState"):
        online_softmax_update(1.0, np.ones(4))
    with pytest.raises(ValueError, match="block contains nan"):
        online_softmax_update(online_softmax_start(), np.array([np.nan]))
