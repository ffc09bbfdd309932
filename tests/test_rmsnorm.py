"""RMSNorm against transformers' LlamaRMSNorm and a hand-worked value."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from course_lib import RMSNorm, rms_norm


def test_hand_worked():
    # x = [3, 4]: mean square (9 + 16) / 2 = 12.5, rms = 3.5355.
    got = rms_norm(np.array([3.0, 4.0]), np.ones(2), eps=0.0)
    assert np.allclose(got, [3 / math.sqrt(12.5), 4 / math.sqrt(12.5)])
    assert np.allclose(got, [0.848528, 1.131371], atol=1e-6)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-6), (torch.float64, 1e-6)])
@pytest.mark.parametrize("eps", [1e-6, 1e-5, 0.1])
def test_equals_llama_rmsnorm(dtype, tol, eps):
    ref = LlamaRMSNorm(24, eps=eps).to(dtype)
    ours = RMSNorm(24, eps=eps).to(dtype)
    with torch.no_grad():
        ref.weight.normal_()
        ours.weight.copy_(ref.weight)
    x = torch.randn(3, 5, 24, dtype=dtype) * 4 + 1
    assert (ours(x) - ref(x)).abs().max() < tol
    assert ours(x).dtype == dtype


def _module(w: torch.Tensor, eps: float = 1e-6) -> RMSNorm:
    norm = RMSNorm(len(w), eps).to(w.dtype).requires_grad_(False)
    norm.weight.copy_(w)
    return norm


def test_numpy_equals_torch_and_zero_token():
    x = np.random.default_rng(0).normal(size=(4, 7))
    w = np.random.default_rng(1).normal(size=7)
    ours = _module(torch.as_tensor(w))(torch.as_tensor(x)).numpy()
    assert np.allclose(rms_norm(x, w), ours)
    assert np.array_equal(rms_norm(np.zeros((1, 3)), np.ones(3)), np.zeros((1, 3)))
    # an integer input is a number like any other (numpy's rule), not all zeros
    assert np.allclose(rms_norm(np.array([[3, 4]]), np.ones(2), eps=0.0), [[0.848528, 1.131371]])


def test_equals_layernorm_without_bias_on_centred_tokens():
    x = torch.randn(6, 16, dtype=torch.float64)
    x = x - x.mean(-1, keepdim=True)  # mean 0: nothing left for LayerNorm to subtract
    w = torch.randn(16, dtype=torch.float64)
    norm = _module(w, 1e-5)
    assert torch.allclose(norm(x), F.layer_norm(x, (16,), w, None, 1e-5))
    y = x + 3.0  # shifted tokens: the two differ
    assert not torch.allclose(norm(y), F.layer_norm(y, (16,), w, None, 1e-5))


def test_parameters_and_errors():
    assert sum(p.numel() for p in RMSNorm(10).parameters()) == 10  # LayerNorm: 20
    with pytest.raises(ValueError, match=r"weight must have shape \(d,\) = \(3,\)"):
        rms_norm(np.ones((2, 3)), np.ones(4))
    with pytest.raises(ValueError, match="eps"):
        RMSNorm(4, eps=-1.0)
    with pytest.raises(ValueError, match="eps must be a finite number >= 0, got inf"):
        rms_norm(np.ones((2, 3)), np.ones(3), eps=float("inf"))
