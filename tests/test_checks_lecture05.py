"""Lecture 05 checks: each passes a right answer, and fails wrong answers and stubs loudly."""

import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub
from torch import nn

from course_lib.checks import ExerciseError
from course_lib.checks.lecture05 import (
    check_layer_norm,
    check_layer_parameter_count,
    check_post_ln_layer,
    check_pre_ln_layer,
)


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def post_ln(x, layer, mask=None):
    out, _ = layer.self_attn(x, x, x, mask)
    x = layer.norm1(x + out)
    return layer.norm2(x + layer.ffn(x))


def pre_ln(x, layer, mask=None):
    y = layer.norm1(x)
    x = x + layer.self_attn(y, y, y, mask)[0]
    return x + layer.ffn(layer.norm2(x))


# --- 5.1 ---------------------------------------------------------------------------------


def test_layer_norm_passes_reference(capsys):
    check_layer_norm(layer_norm)
    check_layer_norm(lambda x, g, b: nn.functional.layer_norm(x, x.shape[-1:], g, b))
    assert capsys.readouterr().out == "✅ Exercise 5.1 passed: LayerNorm by hand\n" * 2


def test_layer_norm_fails_unbiased_variance():
    def unbiased(x, g, b, eps=1e-5):
        return g * (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) + b

    with pytest.raises(ExerciseError, match=r"LayerNorm of 2 tokens of 4 features") as err:
        check_layer_norm(unbiased)
    text = str(err.value)
    assert "expected" in text and "got" in text and "unbiased=False" in text


def test_layer_norm_fails_without_eps():
    def no_eps(x, g, b):
        mu = x.mean(-1, keepdim=True)
        return g * (x - mu) / ((x - mu) ** 2).mean(-1, keepdim=True).sqrt() + b

    with pytest.raises(ExerciseError, match=r"(?s)LayerNorm of 2 tokens.*largest difference"):
        check_layer_norm(no_eps)


def test_layer_norm_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_layer_norm(_stub)


# --- 5.2 / 5.3 ---------------------------------------------------------------------------


def test_post_and_pre_ln_pass_references(capsys):
    check_post_ln_layer(post_ln)
    check_pre_ln_layer(pre_ln)
    out = capsys.readouterr().out
    assert (
        out
        == "✅ Exercise 5.2 passed: post-LN encoder layer\n✅ Exercise 5.3 passed: pre-LN encoder layer\n"
    )


def test_post_ln_fails_pre_ln_answer_and_calling_the_layer():
    with pytest.raises(ExerciseError, match=r"post-LN encoder layer output") as err:
        check_post_ln_layer(pre_ln)
    assert "expected" in str(err.value) and "got" in str(err.value)
    with pytest.raises(ExerciseError, match=r"do not call layer\(x\)"):
        check_post_ln_layer(lambda x, layer, mask=None: layer(x, mask))


def test_pre_ln_fails_post_ln_answer_and_calling_the_layer():
    with pytest.raises(ExerciseError, match=r"pre-LN encoder layer output"):
        check_pre_ln_layer(post_ln)
    with pytest.raises(ExerciseError, match=r"Do not call layer\(x\)"):
        check_pre_ln_layer(lambda x, layer, mask=None: layer(x, mask))


def test_layer_checks_fail_ignoring_the_mask_returning_a_tuple_and_stubs():
    with pytest.raises(ExerciseError, match=r"with a padding mask"):
        check_post_ln_layer(lambda x, layer, mask=None: post_ln(x, layer))
    with pytest.raises(ExerciseError, match=r"expected one tensor, got a tuple"):
        check_post_ln_layer(lambda x, layer, mask=None: (post_ln(x, layer, mask), None))
    for check in (check_post_ln_layer, check_pre_ln_layer):
        with pytest.raises(ExerciseError, match=STUB_MESSAGE):
            check(_stub)


# --- 5.4 ---------------------------------------------------------------------------------


def test_layer_parameter_count_passes_torch_count(capsys):
    def by_torch(d, f):
        with torch.device("meta"):
            layer = nn.TransformerEncoderLayer(d, 1, f)
        return sum(p.numel() for p in layer.parameters())

    check_layer_parameter_count(by_torch)
    assert (
        capsys.readouterr().out == "✅ Exercise 5.4 passed: parameter count of an encoder layer\n"
    )


def test_layer_parameter_count_fails_forgetting_layer_norms_and_stub():
    def no_norms(d, f):
        return 4 * d * d + 4 * d + 2 * d * f + f + d

    with pytest.raises(ExerciseError, match=r"d_model=512, d_ff=2048") as err:
        check_layer_parameter_count(no_norms)
    assert "expected 3152384" in str(err.value) and "got      3150336" in str(err.value)
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_layer_parameter_count(_stub)
