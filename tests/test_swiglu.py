"""SwiGLU feed-forward against transformers' LlamaMLP and hand-worked values."""

import math

import pytest
import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaMLP

from course_lib import SwiGLUFeedForward, count_parameters, swiglu_hidden_size


@pytest.mark.parametrize("bias", [False, True])
def test_equals_llama_mlp(bias):
    cfg = LlamaConfig(hidden_size=12, intermediate_size=20, num_attention_heads=4, mlp_bias=bias)
    ref = LlamaMLP(cfg).double()
    ours = SwiGLUFeedForward(12, 20, bias=bias).double()
    with torch.no_grad():
        for mine, theirs in ((ours.gate, ref.gate_proj), (ours.up, ref.up_proj),
                             (ours.down, ref.down_proj)):  # fmt: skip
            mine.weight.copy_(theirs.weight)
            if bias:
                mine.bias.copy_(theirs.bias)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    assert (ours(x) - ref(x)).abs().max() < 1e-12
    assert count_parameters(ours) == count_parameters(ref)


def test_hand_worked_one_unit():
    ffn = SwiGLUFeedForward(1, 1)
    with torch.no_grad():
        for lin in (ffn.gate, ffn.up, ffn.down):
            lin.weight.fill_(1.0)
    x = 2.0  # silu(2) * 2 = 2 / (1 + e^-2) * 2
    assert ffn(torch.tensor([[x]])).item() == pytest.approx(x / (1 + math.exp(-x)) * x, rel=1e-6)


def test_hidden_size_matches_published_llama():
    # LLaMA-7B: d_model 4096 -> intermediate_size 11008 (LlamaConfig's default, the paper's 7B).
    assert swiglu_hidden_size(4096, 256) == LlamaConfig().intermediate_size == 11008
    assert swiglu_hidden_size(6, 1) == 16  # 2/3 * 24
    # Equal parameter count with the ReLU FFN up to the rounding: 3 * d * (8d/3) = 8 d^2.
    assert count_parameters(SwiGLUFeedForward(48, swiglu_hidden_size(48))) == 8 * 48 * 48


def test_errors():
    with pytest.raises(ValueError, match="d_ff must be >= 1"):
        SwiGLUFeedForward(4, 0)
    with pytest.raises(TypeError, match="multiple_of must be an integer"):
        swiglu_hidden_size(4, 2.5)
