"""Lecture 07 checks: right answers pass, each usual mistake fails with the hint naming it."""

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib import additive_attention
from course_lib.checks import ExerciseError
from course_lib.checks.lecture07 import (
    check_additive_attention,
    check_decoder_self_mask,
    check_greedy_counterexample,
    check_greedy_decode,
)
from course_lib.models import AdditiveAttention

SEEDS = (0, 1, 2024)


def _ids(table):
    return [row[0] for row in table]


def _softmax(e):
    with np.errstate(all="ignore"):
        w = np.exp(e - e.max())
        return w / w.sum()


# --- 7.1 ---------------------------------------------------------------------------------------


def additive_numpy(s, h, wq, wk, v, mask=None):
    e = np.tanh(s @ wq + h @ wk) @ v
    if mask is not None:
        e = np.where(mask, e, -np.inf)
    w = _softmax(e)
    return w @ h, w


def additive_torch_layer(
    s, h, wq, wk, v, mask=None
):  # the lecture's torch layer, weights copied in
    layer = AdditiveAttention(wq.shape[0], wk.shape[0], wq.shape[1]).double()
    with torch.no_grad():
        layer.w_query.weight.copy_(torch.from_numpy(wq.T))
        layer.w_key.weight.copy_(torch.from_numpy(wk.T))
        layer.v.weight.copy_(torch.from_numpy(v[None]))
    m = None if mask is None else torch.from_numpy(mask)[None]
    ctx, w = layer(torch.from_numpy(s)[None], torch.from_numpy(h)[None], m)
    return ctx[0].detach().numpy(), w[0].detach().numpy()


def _additive(variant):
    def answer(s, h, wq, wk, v, mask=None):
        e = (s @ wq + h @ wk) @ v if variant == "no tanh" else np.tanh(s @ wq + h @ wk) @ v
        if mask is not None and variant == "flipped":
            e = np.where(mask, -np.inf, e)
        elif mask is not None and variant not in ("after", "ignored"):
            e = np.where(mask, e, -np.inf)
        w = _softmax(e)
        if mask is not None and variant == "after":
            w = w * mask
        if variant == "swapped":
            return w, w @ h
        return (w @ h, w) if variant != "context from weights" else (w, w)

    return answer


WRONG_7_1 = [
    ("no tanh", _additive("no tanh"), "the tanh comes before"),
    ("opposite mask convention", _additive("flipped"), "opposite convention"),
    ("mask after the softmax", _additive("after"), "mask BEFORE the softmax"),
    ("mask ignored", _additive("ignored"), "mask was ignored"),
    ("returns (weights, context)", _additive("swapped"), "in this order"),
    ("W_s applied to h", lambda s, h, wq, wk, v, mask=None: additive_numpy(s, h, wk, wq, v, mask), "raised ValueError"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [additive_numpy, additive_torch_layer, additive_attention])
def test_additive_attention_passes_right_answers(answer, seed, capsys):
    check_additive_attention(answer, seed=seed)
    assert "✅ Exercise 7.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_7_1, ids=_ids(WRONG_7_1))
def test_additive_attention_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_additive_attention(answer, seed=1)


# --- 7.2 ---------------------------------------------------------------------------------------


def decoder_mask(lengths, n):
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return (j <= i)[None] & (j < np.asarray(lengths)[:, None, None])


def decoder_mask_torch(lengths, n):
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    keys = torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None]
    return (causal[None] & keys[:, None, :]).numpy()


def _mask(variant):
    def answer(lengths, n):
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        lengths = np.asarray(lengths)
        real = j < lengths[:, None]  # (batch, n)
        causal = (j < i) if variant == "strict" else (j <= i)
        if variant == "causal only":
            return np.broadcast_to(causal, (len(lengths), n, n))
        if variant == "padding only":
            return np.broadcast_to(real[:, None, :], (len(lengths), n, n))
        if variant == "rows":
            return causal[None] & real[:, :, None]
        if variant == "first only":
            return causal & (j < lengths[0])
        out = causal[None] & real[:, None, :]
        return {"flipped": ~out, "int": out.astype(int)}.get(variant, out)

    return answer


WRONG_7_2 = [
    ("causal only", _mask("causal only"), "padding rule is missing"),
    ("padding only", _mask("padding only"), "causal rule is missing"),
    ("padding on the query rows", _mask("rows"), "padding hides KEYS"),
    ("strict causal", _mask("strict"), "j <= i, not j < i"),
    ("opposite convention", _mask("flipped"), "opposite convention"),
    ("only the first sentence", _mask("first only"), "one \\(n, n\\) mask per sentence"),
    ("integer mask", _mask("int"), "expected a boolean array"),
    ("the stub", _stub, STUB_MESSAGE),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [decoder_mask, decoder_mask_torch])
def test_decoder_mask_passes_right_answers(answer, seed, capsys):
    check_decoder_self_mask(answer, seed=seed)
    assert "✅ Exercise 7.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_7_2, ids=_ids(WRONG_7_2))
def test_decoder_mask_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_decoder_self_mask(answer, seed=1)


# --- 7.3 ---------------------------------------------------------------------------------------


@torch.no_grad()
def greedy(model, src, src_mask, bos_id, eos_id, pad_id, max_new_tokens, variant="right"):
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        logits = model.decode(memory, src_mask, ys)
        nxt = (logits[:, 0] if variant == "first" else logits[:, -1]).argmax(-1)
        if variant != "no pad":
            nxt = nxt.masked_fill(done, pad_id)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == eos_id
        if variant == "any" and done.any():
            break
        if variant != "never stops" and done.all():
            break
    return ys if variant == "bos" else ys[:, 1:]


@torch.no_grad()
def greedy_per_sentence(model, src, src_mask, bos_id, eos_id, pad_id, max_new_tokens):
    """One sentence at a time with Python lists, padded at the end."""
    rows = []
    for b in range(src.shape[0]):
        memory = model.encode(src[b : b + 1], src_mask[b : b + 1])
        out = [bos_id]
        while len(out) <= max_new_tokens and out[-1] != eos_id:
            logits = model.decode(memory, src_mask[b : b + 1], torch.tensor([out]))
            out.append(int(logits[0, -1].argmax()))
        rows.append(out[1:])
    width = max(len(r) for r in rows)
    return torch.tensor([r + [pad_id] * (width - len(r)) for r in rows])


def _g(variant):
    return lambda *args: greedy(*args, variant=variant)


WRONG_7_3 = [
    ("keeps <bos>", _g("bos"), "WITHOUT the leading <bos>"),
    ("no padding after <eos>", _g("no pad"), "gets pad_id from then on"),
    ("argmax of the first position", _g("first"), "LAST position"),
    ("never stops early", _g("never stops"), "stop as soon as EVERY row"),
    ("stops at the first <eos>", _g("any"), "not when the first row"),
    ("returns a list", lambda *args: greedy(*args).tolist(), "expected a torch tensor"),
    ("the stub", _stub, STUB_MESSAGE),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [greedy, greedy_per_sentence])
def test_greedy_passes_right_answers(answer, seed, capsys):
    check_greedy_decode(answer, seed=seed)
    assert "✅ Exercise 7.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_7_3, ids=_ids(WRONG_7_3))
def test_greedy_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_greedy_decode(answer, seed=1)


# --- 7.4 (construct a counter-example) ---------------------------------------------------------


def _trap(p_first):  # the solution
    v = len(p_first)
    a, b = np.argsort(p_first)[::-1][:2]
    p_second = np.full((v, v), 1.0 / v)
    p_second[a, 0] += 1e-3
    p_second[a, 1] -= 1e-3
    p_second[b] = np.eye(v)[0]
    return p_second


def _trap_other(p_first):  # another: a's row decreasing, every other word certain, float32
    v = len(p_first)
    a = int(np.argmax(p_first))
    rows = np.eye(v)
    rows[a] = np.linspace(1.1, 0.9, v) / v
    rows[a] /= rows[a].sum()
    return rows.astype(np.float32).tolist()


@pytest.mark.parametrize("fn", [_trap, _trap_other])
@pytest.mark.parametrize("seed", [0, 1, 7, 123])
def test_greedy_counterexample_accepts_every_right_answer(fn, seed, capsys):
    check_greedy_counterexample(fn, seed=seed)
    assert "✅ Exercise 7.4 passed" in capsys.readouterr().out


def _fixed_runner_up(p_first):  # always word 1 as the alternative: wrong when word 1 is unlikely
    v = len(p_first)
    a = int(np.argmax(p_first))
    p = np.full((v, v), 1.0 / v)
    p[a, 0] += 1e-3
    p[a, 1] -= 1e-3
    p[1 if a != 1 else 0] = np.eye(v)[0]
    return p


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda p: np.eye(len(p)), "greedy commits"),
        (lambda p: np.full((len(p), len(p)), 0.6), "EVERY row"),
        (lambda p: np.eye(len(p)) * 2 - np.full((len(p), len(p)), 1 / len(p)), "non-negative"),
        (lambda p: np.full((len(p), len(p)), 1 / len(p)), "two second words tie"),
        (lambda p: np.eye(len(p) + 1), "shape"),
        (lambda p: "table", "array of"),
    ],
)
def test_greedy_counterexample_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_greedy_counterexample(fn)


def test_greedy_counterexample_a_fixed_alternative_fails_on_hidden_inputs():
    check_greedy_counterexample(_fixed_runner_up)  # fine on the notebook's tables
    with pytest.raises(ExerciseError, match="greedy commits"):
        for seed in range(1, 8):
            check_greedy_counterexample(_fixed_runner_up, seed=seed)
