"""Lecture 03 checks: right answers pass, each usual mistake fails with the hint naming it."""

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
    check_two_relations,
)

SEEDS = (0, 1, 2024)


def _ids(table):
    return [row[0] for row in table]


# --- right answers: numpy (the solution's way) and torch ---------------------------------------


def split_heads_np(x, num_heads):
    *lead, n, d = x.shape
    return np.swapaxes(x.reshape(*lead, n, num_heads, d // num_heads), -3, -2)


def split_heads(x, num_heads):
    t = torch.as_tensor(x)
    *lead, n, d = t.shape
    return t.reshape(*lead, n, num_heads, d // num_heads).transpose(-3, -2).numpy()


def merge_heads_np(x):
    *lead, h, n, dh = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, n, h * dh)


def merge_heads(x):
    t = torch.as_tensor(x)
    *lead, h, n, dh = t.shape
    return t.transpose(-3, -2).reshape(*lead, n, h * dh).numpy()


def mhsa_torch(x, w_q, w_k, w_v, w_o, num_heads):
    t = [torch.as_tensor(a) for a in (x, w_q, w_k, w_v)]
    q, k, v = (torch.as_tensor(split_heads((t[0] @ w).numpy(), num_heads)) for w in t[1:])
    heads = F.scaled_dot_product_attention(q, k, v)  # scales by sqrt(d_head) itself
    return merge_heads(heads.numpy()) @ w_o


def mhsa_loop(x, w_q, w_k, w_v, w_o, num_heads):  # one head at a time, concatenated
    d_head = x.shape[-1] // num_heads
    outs = []
    for i in range(num_heads):
        cols = slice(i * d_head, (i + 1) * d_head)
        q, k, v = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]
        s = q @ k.T / np.sqrt(d_head)
        a = np.exp(s - s.max(-1, keepdims=True))
        outs.append(a / a.sum(-1, keepdims=True) @ v)
    return np.concatenate(outs, axis=-1) @ w_o


# --- 3.1 / 3.2 ---------------------------------------------------------------------------------

WRONG_3_1 = [
    ("direct reshape", lambda x, h: x.reshape(*x.shape[:-2], h, x.shape[-2], -1), "mixes up the tokens"),
    ("interleaved features", lambda x, h: np.moveaxis(x.reshape(*x.shape[:-1], -1, h), -1, -3),
     "CONTIGUOUS features"),
    ("no batch axes", lambda x, h: x.reshape(x.shape[0], h, -1).transpose(1, 0, 2), "keep every leading axis"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip

WRONG_3_2 = [
    ("reshape without swap", lambda x: x.reshape(*x.shape[:-3], x.shape[-2], -1), "plain reshape"),
    ("heads axis moved last", lambda x: np.moveaxis(x, -3, -1).reshape(*x.shape[:-3], x.shape[-2], -1),
     "not move the heads axis"),
    ("no batch axes", lambda x: x.transpose(1, 0, 2).reshape(x.shape[1], -1), "keep every leading axis"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [split_heads, split_heads_np])
def test_split_heads_passes_right_answers(answer, seed, capsys):
    check_split_heads(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 3.1 passed: split into heads\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_3_1, ids=_ids(WRONG_3_1))
def test_split_heads_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_split_heads(answer, seed=1)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [merge_heads, merge_heads_np])
def test_merge_heads_passes_right_answers(answer, seed, capsys):
    check_merge_heads(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 3.2 passed: merge the heads\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_3_2, ids=_ids(WRONG_3_2))
def test_merge_heads_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_merge_heads(answer, seed=1)


# --- 3.3 ---------------------------------------------------------------------------------------


def _by_d_model(x, w_q, w_k, w_v, w_o, h):
    q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1])
    a = np.exp(s - s.max(-1, keepdims=True))
    return merge_heads(a / a.sum(-1, keepdims=True) @ v) @ w_o


WRONG_3_3 = [
    ("scales by sqrt(d_model)", _by_d_model, r"not sqrt\(d_model\)"),
    ("forgets W_O", lambda x, wq, wk, wv, wo, h: mhsa_torch(x, wq, wk, wv, np.eye(len(wo)), h),
     "multiply the merged heads by W_O"),
    ("ignores num_heads", lambda x, wq, wk, wv, wo, h: mhsa_torch(x, wq, wk, wv, wo, 1), "use num_heads"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [mhsa_torch, mhsa_loop])
def test_mhsa_passes_right_answers(answer, seed, capsys):
    check_multi_head_self_attention(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 3.3 passed: multi-head self-attention\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_3_3, ids=_ids(WRONG_3_3))
def test_mhsa_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_multi_head_self_attention(answer, seed=2)


# --- 3.4 ---------------------------------------------------------------------------------------


def count_by_torch(d, h, d_head, bias):
    with torch.device("meta"):
        maps = [torch.nn.Linear(d, h * d_head, bias=bias) for _ in range(3)]
        maps.append(torch.nn.Linear(h * d_head, d, bias=bias))
    return sum(p.numel() for m in maps for p in m.parameters())


def count_formula(d, h, d_head, bias):
    inner = h * d_head
    return 4 * d * inner + (3 * inner + d if bias else 0)


WRONG_3_4 = [
    ("assumes d_head = d_model / heads", lambda d, h, dh, b: 4 * d * d + (4 * d if b else 0),
     "the lecture's case"),
    ("W_O bias of width heads * d_head", lambda d, h, dh, b: 4 * d * h * dh + (4 * h * dh if b else 0),
     "its bias has d_model entries"),
    ("forgets W_O", lambda d, h, dh, b: 3 * d * h * dh + (3 * h * dh if b else 0), "output projection"),
    ("forgets the biases", lambda d, h, dh, b: 4 * d * h * dh, "also has a bias"),
    ("a float", lambda d, h, dh, b: float(count_formula(d, h, dh, b)), "expected an integer"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("answer", [count_by_torch, count_formula])
def test_parameter_count_passes_right_answers(answer, capsys):
    check_mha_parameter_count(answer)
    assert "✅ Exercise 3.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_3_4, ids=_ids(WRONG_3_4))
def test_parameter_count_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_mha_parameter_count(answer)


# --- 3.5 (construct) ---------------------------------------------------------------------------


def _longer(v, share):
    s = v @ v / np.sqrt(2)
    return (np.log(share / (1 - share)) + np.log1p(np.exp(s)) + 1.0) / s * v


def _relations(x0, share):  # the solution: each head's half as in 2.4
    z = np.zeros(2)
    return np.array([x0, np.r_[_longer(x0[:2], share), z], np.r_[z, _longer(x0[2:], share)]])


@pytest.mark.parametrize("seed", [0, 1, 7, 123])
def test_two_relations_accepts_every_right_answer(seed, capsys):
    check_two_relations(_relations, seed=seed)
    check_two_relations(lambda x0, s: _relations(x0, s).astype(np.float32), seed=seed)
    assert capsys.readouterr().out.count("✅ Exercise 3.5 passed") == 2


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (
            lambda x0, s: np.array([x0, np.r_[_longer(x0[:2], s), 0, 0], np.zeros(4)]),
            "head 0 works",
        ),
        (
            lambda x0, s: np.array([x0, np.zeros(4), np.r_[0, 0, _longer(x0[2:], s)]]),
            "head 1 works",
        ),
        (lambda x0, s: np.array([x0, 6 * x0, 6 * x0]), "head 0 compares features 0-1 only"),
        (lambda x0, s: np.array([[1, 0, 1, 0], [6, 0, 0, 0], [0, 0, 6, 0]]) * 0 + 1, "row 0 of X"),
        (lambda x0, s: np.array([x0]), r"expected a \(3, 4\) array"),
    ],
)
def test_two_relations_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_two_relations(fn)


def test_two_relations_a_fixed_x_fails_on_hidden_inputs():
    fixed = lambda x0, s: np.array([[1, 0, 1, 0], [6, 0, 0, 0], [0, 0, 6, 0]], float)  # noqa: E731
    with pytest.raises(ExerciseError, match="row 0 of X"):
        check_two_relations(fixed, seed=3)
