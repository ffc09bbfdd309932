"""Helpers that lived in notebooks (lectures 01, 03, 10, 99) and now live in course_lib."""

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from course_lib import MultiHeadAttention, best_time, peak_mib, softmax_jacobian
from course_lib.nn import multi_head_attention_flops


@pytest.mark.parametrize("shape", [(3,), (4, 5), (2, 3, 6)])
def test_softmax_jacobian_matches_torch_autograd(shape):
    x = np.random.default_rng(0).normal(size=shape) * 3
    rows = torch.from_numpy(x.reshape(-1, shape[-1]))
    expected = torch.stack(
        [torch.autograd.functional.jacobian(lambda r: torch.softmax(r, -1), r) for r in rows]
    ).reshape(*shape, shape[-1])
    np.testing.assert_allclose(softmax_jacobian(x), expected.numpy(), atol=1e-12)


def test_softmax_jacobian_of_two_logits_by_hand():
    # p = (s, 1 - s) with s = sigmoid(x1 - x2): the Jacobian is s(1-s) [[1, -1], [-1, 1]]
    s = 1 / (1 + np.exp(-2.0))
    np.testing.assert_allclose(
        softmax_jacobian([2.0, 0.0]), s * (1 - s) * np.array([[1, -1], [-1, 1]]), atol=1e-15
    )


@pytest.mark.parametrize(("n", "d", "heads"), [(16, 64, 8), (128, 64, 4), (5, 12, 3)])
def test_mha_flops_equal_torch_flop_counter(n, d, heads):
    module = MultiHeadAttention(d, heads)
    x = torch.randn(1, n, d)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        module(x, x, x)
    assert multi_head_attention_flops(n, d) == counter.get_total_flops()


def test_timing_helpers():
    calls = []
    assert best_time(lambda: calls.append(1), repeats=3) >= 0
    assert len(calls) == 4  # one warm-up, then the repeats
    assert peak_mib(lambda: np.ones(2**20)) >= 8  # 8 MiB of float64
    with pytest.raises(TypeError, match="fn must be a function of no arguments"):
        best_time(3)
    with pytest.raises(ValueError, match="repeats must be >= 1, got 0"):
        best_time(lambda: None, repeats=0)
    with pytest.raises(TypeError, match="fn must be a function of no arguments"):
        peak_mib(None)
