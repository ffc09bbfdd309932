"""Lecture 05 checks: right answers pass, each usual mistake fails with the hint naming it."""

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub
from torch import nn

from course_lib.checks import ExerciseError
from course_lib.checks.lecture05 import (
    check_decoder_parameter_count,
    check_layer_norm,
    check_post_ln_decoder_layer,
    check_pre_ln_layer,
    check_same_after_layer_norm,
)

SEEDS = (0, 1, 2024)


def _ids(table):
    return [row[0] for row in table]


# --- 5.1 ---------------------------------------------------------------------------------------


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def layer_norm_numpy(x, gamma, beta, eps=1e-5):  # through numpy, returns an ndarray
    a = x.numpy()
    z = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + eps)
    return z * gamma.numpy() + beta.numpy()


def _ln(unbiased=False, eps_out=False, dim=-1, affine="right"):
    def answer(x, gamma, beta, eps=1e-5):
        mu = x.mean(dim, keepdim=True)
        var = x.var(dim, unbiased=unbiased, keepdim=True)
        z = (x - mu) / (torch.sqrt(var) + eps if eps_out else torch.sqrt(var + eps))
        return {"right": gamma * z + beta, "none": z, "swapped": beta * z + gamma}[affine]

    return answer


WRONG_5_1 = [
    ("unbiased variance", _ln(unbiased=True), "divides by D, not D - 1"),
    ("eps outside the sqrt", _ln(eps_out=True), "INSIDE the square root"),
    ("normalises over tokens", _ln(dim=0), "LAST axis"),
    ("no gamma and beta", _ln(affine="none"), "multiply by gamma and add beta"),
    ("gamma and beta swapped", _ln(affine="swapped"), "swapped them"),
    ("no eps (nan on a constant token)", lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdim=True))
     / x.std(-1, unbiased=False, keepdim=True) + b, "add eps inside the square root"),
    ("returns a tuple", lambda x, g, b, eps=1e-5: (layer_norm(x, g, b), None), "tuple"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [layer_norm, layer_norm_numpy])
def test_layer_norm_passes_right_answers(answer, seed, capsys):
    check_layer_norm(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 5.1 passed: LayerNorm by hand\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_5_1, ids=_ids(WRONG_5_1))
def test_layer_norm_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_layer_norm(answer, seed=1)


# --- 5.2 ---------------------------------------------------------------------------------------


def post_ln_decoder(x, memory, layer, self_mask, memory_mask):
    x = layer.norm1(x + layer.self_attn(x, x, x, self_mask))
    x = layer.norm2(x + layer.cross_attn(x, memory, memory, memory_mask))
    return layer.norm3(x + layer.ffn(x))


def post_ln_decoder_via_torch(x, memory, layer, self_mask, memory_mask):
    """The same layer through torch's TransformerDecoderLayer, weights copied in."""
    d, h = layer.d_model, layer.num_heads
    ref = nn.TransformerDecoderLayer(d, h, layer.d_ff, dropout=0.0, batch_first=True).double()
    with torch.no_grad():
        for mine, theirs in (
            (layer.self_attn, ref.self_attn),
            (layer.cross_attn, ref.multihead_attn),
        ):
            theirs.in_proj_weight.copy_(
                torch.cat([mine.w_q.weight, mine.w_k.weight, mine.w_v.weight])
            )
            theirs.in_proj_bias.copy_(torch.cat([mine.w_q.bias, mine.w_k.bias, mine.w_v.bias]))
            theirs.out_proj.weight.copy_(mine.w_o.weight)
            theirs.out_proj.bias.copy_(mine.w_o.bias)
        for a, b in (
            (ref.linear1, layer.ffn.linear1),
            (ref.linear2, layer.ffn.linear2),
            (ref.norm1, layer.norm1),
            (ref.norm2, layer.norm2),
            (ref.norm3, layer.norm3),
        ):
            a.weight.copy_(b.weight)
            a.bias.copy_(b.bias)
        n = x.shape[1]
        tgt_mask = ~self_mask[:, 0].repeat_interleave(h, dim=0)  # (B * heads, n, n), True = hidden
        mem_mask = ~memory_mask[:, 0, :]  # key padding mask, True = padding
        return ref(x, memory, tgt_mask=tgt_mask.reshape(-1, n, n), memory_key_padding_mask=mem_mask)


# fmt: skip


def _decoder_wrong(variant):
    def answer(x, memory, layer, self_mask, memory_mask):
        if variant == "call":
            return layer(x, memory, self_mask, memory_mask)
        if variant == "pre":
            y = layer.norm1(x)
            x = x + layer.self_attn(y, y, y, self_mask)
            x = x + layer.cross_attn(layer.norm2(x), memory, memory, memory_mask)
            return x + layer.ffn(layer.norm3(x))
        if variant == "self twice":
            x = layer.norm1(x + layer.self_attn(x, x, x, self_mask))
            x = layer.norm2(x + layer.cross_attn(x, x, x))
            return layer.norm3(x + layer.ffn(x))
        if variant == "queries from memory":
            x = layer.norm1(x + layer.self_attn(x, x, x, self_mask))
            x = layer.norm2(x + layer.cross_attn(memory, x, x))
            return layer.norm3(x + layer.ffn(x))
        if variant == "no self mask":
            return post_ln_decoder(x, memory, layer, None, memory_mask)
        if variant == "no memory mask":
            return post_ln_decoder(x, memory, layer, self_mask, None)
        if variant == "tuple":
            return post_ln_decoder(x, memory, layer, self_mask, memory_mask), None
        raise AssertionError(variant)

    return answer


WRONG_5_2 = [
    ("calls the layer (pre-LN)", _decoder_wrong("call"), "pre-LN order"),
    ("pre-LN composition", _decoder_wrong("pre"), "pre-LN order"),
    ("self-attention twice", _decoder_wrong("self twice"), "second sublayer is CROSS-attention"),
    ("queries from memory", _decoder_wrong("queries from memory"), "QUERIES come from the decoder"),
    ("no causal mask", _decoder_wrong("no self mask"), "sees the words after it"),
    ("no memory mask", _decoder_wrong("no memory mask"), "source's padding"),
    ("returns a tuple", _decoder_wrong("tuple"), "tuple"),
    ("the stub", _stub, STUB_MESSAGE),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [post_ln_decoder, post_ln_decoder_via_torch])
def test_post_ln_decoder_passes_right_answers(answer, seed, capsys):
    with torch.no_grad():
        check_post_ln_decoder_layer(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 5.2 passed: post-LN decoder layer\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_5_2, ids=_ids(WRONG_5_2))
def test_post_ln_decoder_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_post_ln_decoder_layer(answer, seed=1)


# --- 5.3 ---------------------------------------------------------------------------------------


def pre_ln(x, layer, mask=None):
    y = layer.norm1(x)
    x = x + layer.self_attn(y, y, y, mask)
    return x + layer.ffn(layer.norm2(x))


def pre_ln_loop(x, layer, mask=None):  # the two sublayers as a loop over (norm, sublayer)
    subs = [(layer.norm1, lambda y: layer.self_attn(y, y, y, mask)), (layer.norm2, layer.ffn)]
    for norm, sub in subs:
        x = x + sub(norm(x))
    return x


def _pre_wrong(variant):
    def answer(x, layer, mask=None):
        y = layer.norm1(x)
        if variant == "call":
            return layer(x, mask)
        if variant == "queries only":
            x1 = x + layer.self_attn(y, x, x, mask)
        elif variant == "normalised residual":
            x1 = y + layer.self_attn(y, y, y, mask)
        elif variant == "no mask":
            x1 = x + layer.self_attn(y, y, y)
        else:
            x1 = x + layer.self_attn(y, y, y, mask)
        out = x1 + layer.ffn(layer.norm2(x1))
        return layer.norm2(out) if variant == "final norm" else out

    return answer


WRONG_5_3 = [
    ("calls the layer (post-LN)", _pre_wrong("call"), "that is the post-LN layer"),
    ("only queries normalised", _pre_wrong("queries only"), "keys AND values"),
    ("normalised residual", _pre_wrong("normalised residual"), "UN-normalised x"),
    ("final LayerNorm in the layer", _pre_wrong("final norm"), "belongs to the whole stack"),
    ("ignores the mask", _pre_wrong("no mask"), "pass the mask"),
    ("the stub", _stub, STUB_MESSAGE),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [pre_ln, pre_ln_loop])
def test_pre_ln_passes_right_answers(answer, seed, capsys):
    with torch.no_grad():
        check_pre_ln_layer(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 5.3 passed: pre-LN encoder layer\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_5_3, ids=_ids(WRONG_5_3))
def test_pre_ln_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_pre_ln_layer(answer, seed=2)


# --- 5.4 ---------------------------------------------------------------------------------------


def decoder_count_by_torch(d, f):
    with torch.device("meta"):
        layer = nn.TransformerDecoderLayer(d, 1, f, batch_first=True)
    return sum(p.numel() for p in layer.parameters())


def decoder_count_formula(d, f):
    attention = 4 * d * d + 4 * d
    return 2 * attention + (d * f + f + f * d + d) + 3 * 2 * d


WRONG_5_4 = [
    ("an encoder layer", lambda d, f: 12 * d * d - 8 * d * d + 2 * d * f + f + d + 4 * d * 1 + 4 * d,
     "that is an ENCODER layer"),
    ("two LayerNorms", lambda d, f: decoder_count_formula(d, f) - 2 * d, "three LayerNorms"),
    ("d_ff = 4 d_model", lambda d, f: decoder_count_formula(d, 4 * d), "use the d_ff you are given"),
    ("LayerNorm without shift", lambda d, f: decoder_count_formula(d, f) - 3 * d, "gain AND a shift"),
    ("no biases in maps", lambda d, f: 8 * d * d + 2 * d * f + 6 * d, "have biases too"),
    ("a float", lambda d, f: float(decoder_count_formula(d, f)), "expected an integer"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("answer", [decoder_count_by_torch, decoder_count_formula])
def test_decoder_count_passes_right_answers(answer, capsys):
    check_decoder_parameter_count(answer)
    assert "✅ Exercise 5.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_5_4, ids=_ids(WRONG_5_4))
def test_decoder_count_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_decoder_parameter_count(answer)


# --- 5.5 (construct) ---------------------------------------------------------------------------


def _twin(token, mean, std):  # the solution
    return mean + std * (token - token.mean()) / token.std()


def _twin_other(token, mean, std):  # written differently, in float32
    c = std / np.sqrt(np.mean((token - np.mean(token)) ** 2))
    return (c * token + (mean - c * np.mean(token))).astype(np.float32)


def _twin_by_layer_norm(token, mean, std):  # LayerNorm (eps 1e-5, float32) scaled and shifted
    t = torch.tensor(token, dtype=torch.float32)
    return torch.nn.functional.layer_norm(t, (t.shape[0],)) * std + mean


def _twin_tuple(token, mean, std):  # plain Python numbers
    return tuple(float(v) for v in _twin(token, mean, std))


@pytest.mark.parametrize("fn", [_twin, _twin_other, _twin_by_layer_norm, _twin_tuple])
@pytest.mark.parametrize("seed", [0, 1, 7, 43, 123])
def test_same_after_layer_norm_accepts_every_right_answer(fn, seed, capsys):
    """Seed 43 failed the official solution before the tolerance was derived (the audit's F3)."""
    check_same_after_layer_norm(fn, seed=seed)
    assert "✅ Exercise 5.5 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda t, m, s: -_twin(t, m, s), "NEGATIVE factor"),
        (lambda t, m, s: _twin(t, m, s)[::-1], "permutation|ADD"),
        (lambda t, m, s: np.sort(_twin(t, m, s)), "permutation|ADD"),
        (lambda t, m, s: _twin(t, m, s) ** 2, "ADD"),
        (lambda t, m, s: 3 * t - 10, "same LayerNorm output, but mean"),
        (lambda t, m, s: m + s * (t - t.mean()) / t.std(ddof=1), "ddof=0"),
        (lambda t, m, s: _twin(t, m, s)[:3], "expected 4 finite numbers"),
        (lambda t, m, s: "abc", "expected 4 numbers"),
    ],
)
def test_same_after_layer_norm_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_same_after_layer_norm(fn)
