"""Lecture 03 checks: each passes a right answer, and fails wrong answers and stubs loudly."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture03 import (
    check_merge_heads,
    check_mha_parameter_count,
    check_multi_head_self_attention,
    check_split_heads,
)

# --- reference answers written independently (torch where it is natural) -------------------


def split_heads(x, num_heads):
    t = torch.as_tensor(x)
    *lead, n, d = t.shape
    return t.reshape(*lead, n, num_heads, d // num_heads).transpose(-3, -2).numpy()


def merge_heads(x):
    t = torch.as_tensor(x)
    *lead, h, n, dh = t.shape
    return t.transpose(-3, -2).reshape(*lead, n, h * dh).numpy()


def mhsa_torch(x, w_q, w_k, w_v, w_o, num_heads):
    t = [torch.as_tensor(a) for a in (x, w_q, w_k, w_v)]
    q, k, v = (torch.as_tensor(split_heads((t[0] @ w).numpy(), num_heads)) for w in t[1:])
    heads = F.scaled_dot_product_attention(q, k, v)  # scales by sqrt(d_head) itself
    return merge_heads(heads.numpy()) @ w_o


# --- 3.1 ---------------------------------------------------------------------------------


def test_split_heads_passes_reference(capsys):
    check_split_heads(split_heads)
    assert capsys.readouterr().out == "✅ Exercise 3.1 passed: split into heads\n"


def test_split_heads_fails_direct_reshape():
    def direct(x, h):  # reshapes to (heads, n, d_head) without the transpose: mixes tokens
        *lead, n, d = x.shape
        return x.reshape(*lead, h, n, d // h)

    with pytest.raises(ExerciseError, match=r"split_heads for one sentence") as err:
        check_split_heads(direct)
    text = str(err.value)
    assert "expected" in text and "got" in text and "swap" in text


def test_split_heads_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_split_heads(_stub)


# --- 3.2 ---------------------------------------------------------------------------------


def test_merge_heads_passes_reference(capsys):
    check_merge_heads(merge_heads)
    assert capsys.readouterr().out == "✅ Exercise 3.2 passed: merge the heads\n"


def test_merge_heads_fails_reshape_without_transpose():
    def no_transpose(x):
        *lead, h, n, dh = x.shape
        return x.reshape(*lead, n, h * dh)

    with pytest.raises(
        ExerciseError, match=r"(?s)merge_heads of an array.*\n  expected .*\n  got "
    ):
        check_merge_heads(no_transpose)


def test_merge_heads_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_merge_heads(_stub)


# --- 3.3 ---------------------------------------------------------------------------------


def test_mhsa_passes_torch_reference(capsys):
    check_multi_head_self_attention(mhsa_torch)
    assert capsys.readouterr().out == "✅ Exercise 3.3 passed: multi-head self-attention\n"


def test_mhsa_fails_scaling_by_d_model():
    def by_d_model(x, w_q, w_k, w_v, w_o, h):
        q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1])
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        return merge_heads(a @ v) @ w_o

    with pytest.raises(ExerciseError, match=r"multi-head self-attention, n=4") as err:
        check_multi_head_self_attention(by_d_model)
    text = str(err.value)
    assert "expected" in text and "got" in text and "sqrt(d_head)" in text


def test_mhsa_fails_forgetting_w_o():
    def no_w_o(x, w_q, w_k, w_v, w_o, h):
        return mhsa_torch(x, w_q, w_k, w_v, np.eye(x.shape[-1]), h)

    with pytest.raises(ExerciseError, match=r"(?s)expected .*got "):
        check_multi_head_self_attention(no_w_o)


def test_mhsa_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_multi_head_self_attention(_stub)


# --- 3.4 ---------------------------------------------------------------------------------


def test_parameter_count_passes_torch_count(capsys):
    def by_torch(d, h, bias):
        with torch.device("meta"):
            m = torch.nn.MultiheadAttention(d, h, bias=bias)
        return sum(p.numel() for p in m.parameters())

    check_mha_parameter_count(by_torch)
    assert (
        capsys.readouterr().out
        == "✅ Exercise 3.4 passed: parameter count of multi-head attention\n"
    )


def test_parameter_count_fails_per_head_matrices():
    def per_head(d, h, bias):  # thinks each head has its own d x d matrices
        return h * 3 * d * d + d * d + (4 * d if bias else 0)

    with pytest.raises(ExerciseError, match=r"d_model=512, num_heads=8") as err:
        check_mha_parameter_count(per_head)
    assert "expected 1050624" in str(err.value)
    assert f"got      {per_head(512, 8, True)}" in str(err.value)


def test_parameter_count_fails_non_integer_and_stub():
    with pytest.raises(ExerciseError, match=r"expected an integer, got float"):
        check_mha_parameter_count(lambda d, h, b: 4.0 * d * d)
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_mha_parameter_count(_stub)
