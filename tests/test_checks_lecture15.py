"""Lecture 15 checks: right answers (two ways each, one in float32 or torch) pass; realistic
mistakes get their hint; the stub fails; hidden seeds give the same verdicts."""

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture15 import (
    check_acceptance,
    check_cache_bytes_per_token,
    check_dequantize_q4_0,
    check_int8_per_channel,
)

# --- right answers, written independently of course_lib ------------------------------------


def int8_divide(w):
    scale = np.abs(w).max(axis=1, keepdims=True) / 127
    return np.round(w / scale).astype(np.int8), scale


def int8_torch(w):
    t = torch.tensor(w)
    absmax = t.abs().amax(dim=1)
    return torch.round(t * (127 / absmax[:, None])).to(torch.int8), absmax / 127


def q4_0_loop(blocks, shape):
    out = []
    for block in blocks.reshape(-1, 18):
        d = np.frombuffer(block[:2].tobytes(), dtype="<f2")[0].astype(np.float32)
        low = [d * ((int(b) & 15) - 8) for b in block[2:]]
        high = [d * ((int(b) >> 4) - 8) for b in block[2:]]
        out += low + high
    return np.array(out, dtype=np.float32).reshape(shape)


def q4_0_vector(blocks, shape):
    b = blocks.reshape(-1, 18)
    d = b[:, :2].copy().view(np.float16).astype(np.float64)
    q = np.concatenate([b[:, 2:] & 0x0F, b[:, 2:] >> 4], axis=1).astype(np.int64) - 8
    return (d * q).reshape(shape)


def accept_loop(p, q, tokens, r):
    for i, x in enumerate(tokens):
        if r[i] > min(1.0, p[i, x] / q[i, x]):
            residual = np.clip(p[i] - q[i], 0, None)
            return i, residual / residual.sum()
    return len(tokens), p[len(tokens)]


def accept_vector(p, q, tokens, r):
    k = len(tokens)
    ratio = p[np.arange(k), tokens] / q[np.arange(k), tokens]
    rejected = np.flatnonzero(r > ratio)
    if rejected.size == 0:
        return k, torch.tensor(p[k])
    n = int(rejected[0])
    residual = np.maximum(p[n] - q[n], 0.0)
    return n, torch.tensor(residual / residual.sum(), dtype=torch.float32)


def cache_bytes(config):
    layers = config["num_hidden_layers"]
    if config.get("kv_lora_rank"):
        return layers * (config["kv_lora_rank"] + config["qk_rope_head_dim"]) * 2
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim", config["hidden_size"] // heads)
    return 2 * layers * config.get("num_key_value_heads", heads) * head_dim * 2


def cache_bytes_numpy(config):
    c = dict(config)
    if "kv_lora_rank" in c:
        return np.int64(c["num_hidden_layers"]) * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 2.0
    head_dim = c["head_dim"] if "head_dim" in c else c["hidden_size"] / c["num_attention_heads"]
    return np.prod([2, c["num_hidden_layers"], c["num_key_value_heads"], head_dim, 2])


RIGHT = [
    (check_int8_per_channel, int8_divide, int8_torch, "15.1 passed"),
    (check_dequantize_q4_0, q4_0_loop, q4_0_vector, "15.2 passed"),
    (check_acceptance, accept_loop, accept_vector, "15.3 passed"),
    (check_cache_bytes_per_token, cache_bytes, cache_bytes_numpy, "15.4 passed"),
]


@pytest.mark.parametrize("check,first,second,message", RIGHT, ids=lambda v: getattr(v, "__name__", ""))  # fmt: skip
def test_right_answers_pass_for_several_seeds(check, first, second, message, capsys):
    for seed in (0, 1, 7, 123):
        check(first, seed=seed)
        check(second, seed=seed)
    assert capsys.readouterr().out.count(message) == 8


# --- the usual mistakes ------------------------------------------------------------------------


def int8_with(scale_of, rounding=np.round):
    def answer(w):
        scale = scale_of(w)
        return rounding(w / scale), scale

    return answer


def q4_0_with(order="split", minus=8, scale=True):
    def answer(blocks, shape):
        b = blocks.reshape(-1, 18)
        d = b[:, :2].copy().view(np.float16).astype(np.float32) if scale else 1.0
        lo, hi = b[:, 2:] & 15, b[:, 2:] >> 4
        if order == "split":
            q = np.concatenate([lo, hi], axis=1)
        elif order == "swapped":
            q = np.concatenate([hi, lo], axis=1)
        else:
            q = np.stack([lo, hi], axis=2).reshape(len(b), 32)
        return (d * (q.astype(np.float32) - minus)).reshape(shape)

    return answer


def q4_0_uint8(blocks, shape):
    b = blocks.reshape(-1, 18)
    d = b[:, :2].copy().view(np.float16).astype(np.float32)
    return (d * (np.concatenate([b[:, 2:] & 15, b[:, 2:] >> 4], axis=1) - 8)).reshape(shape)


def accept_no_stop(p, q, tokens, r):
    k = len(tokens)
    ok = r <= p[np.arange(k), tokens] / q[np.arange(k), tokens]
    n = int(ok.sum())
    if n == k:
        return n, p[k]
    residual = np.maximum(p[n] - q[n], 0)
    return n, residual / residual.sum()


def accept_from(residual_of):
    def answer(p, q, tokens, r):
        for i, x in enumerate(tokens):
            if r[i] > p[i, x] / q[i, x]:
                return i, residual_of(p[i], q[i])
        return len(tokens), p[len(tokens)]

    return answer


def accept_inverted(p, q, tokens, r):
    for i, x in enumerate(tokens):
        if r[i] > q[i, x] / p[i, x]:
            residual = np.maximum(p[i] - q[i], 0)
            return i, residual / residual.sum()
    return len(tokens), p[len(tokens)]


def accept_bonus_from_last_draft(p, q, tokens, r):
    n, nxt = accept_loop(p, q, tokens, r)
    return (n, p[n - 1]) if n == len(tokens) else (n, nxt)


def cache_with(**changes):
    def answer(config):
        c = {**config, **changes.get("override", {})}
        layers = 1 if changes.get("no_layers") else c["num_hidden_layers"]
        if "kv_lora_rank" in c:
            latent = c["kv_lora_rank"] * changes.get("latent_times", 1)
            rope = 0 if changes.get("no_rope") else c["qk_rope_head_dim"]
            if changes.get("decompressed"):
                per = c["num_attention_heads"] * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"] + c["v_head_dim"])  # fmt: skip
                return layers * per * 2
            return layers * (latent + rope) * 2
        heads = c["num_attention_heads"]
        kv = heads if changes.get("all_heads") else c.get("num_key_value_heads", heads)
        head_dim = c["hidden_size"] // heads if changes.get("ignore_head_dim") else c.get("head_dim", c["hidden_size"] // heads)  # fmt: skip
        kv_factor = 1 if changes.get("no_two") else 2
        return kv_factor * layers * kv * head_dim * changes.get("bytes", 2)

    return answer


WRONG = [
    (check_int8_per_channel, int8_with(lambda w: np.abs(w).max() / 127), "for the whole matrix"),
    (check_int8_per_channel, int8_with(lambda w: np.abs(w).max(axis=0) / 127), "axis 0"),
    (check_int8_per_channel, int8_with(lambda w: np.abs(w).max(axis=1, keepdims=True) / 128), "divided by 128"),  # fmt: skip
    (check_int8_per_channel, int8_with(lambda w: np.abs(w).max(axis=1, keepdims=True) / 255), "255"),  # fmt: skip
    (check_int8_per_channel, int8_with(lambda w: w.max(axis=1, keepdims=True) / 127), "ABSOLUTE"),  # fmt: skip
    (check_int8_per_channel, int8_with(lambda w: np.abs(w).max(axis=1, keepdims=True) / 127, np.trunc), "truncation"),  # fmt: skip
    (check_int8_per_channel, int8_with(lambda w: np.abs(w).max(axis=1, keepdims=True) / 127, np.floor), "np.floor"),  # fmt: skip
    (check_int8_per_channel, lambda w: int8_divide(w)[0], "a pair (q, scale)"),
    (check_dequantize_q4_0, q4_0_with(order="interleaved"), "j + 16 in its HIGH"),
    (check_dequantize_q4_0, q4_0_with(order="swapped"), "you swapped them"),
    (check_dequantize_q4_0, q4_0_with(minus=0), "subtract 8"),
    (check_dequantize_q4_0, lambda b, shape: q4_0_with()(b, shape) * 0 + q4_0_uint8(b, shape), "wraps around"),
    (check_dequantize_q4_0, q4_0_with(scale=False), "float16 in the first two bytes"),
    (check_acceptance, accept_inverted, "you used q / p"),
    (check_acceptance, accept_no_stop, "FIRST rejected draft"),
    (check_acceptance, accept_from(lambda p, q: np.maximum(q - p, 0) / np.maximum(q - p, 0).sum()), "not max(0, q - p)"),  # fmt: skip
    (check_acceptance, accept_from(lambda p, q: p), "not from p itself"),
    (check_acceptance, accept_from(lambda p, q: np.maximum(p - q, 0)), "normalise the residual"),
    (check_acceptance, accept_bonus_from_last_draft, "LAST row"),
    (check_cache_bytes_per_token, cache_with(no_two=True), "the factor 2"),
    (check_cache_bytes_per_token, cache_with(all_heads=True), "num_key_value_heads"),
    (check_cache_bytes_per_token, cache_with(ignore_head_dim=True), "config['head_dim']"),
    (check_cache_bytes_per_token, cache_with(bytes=4), "not 4"),
    (check_cache_bytes_per_token, cache_with(no_layers=True), "number of layers"),
    (check_cache_bytes_per_token, cache_with(latent_times=2), "not twice the latent"),
    (check_cache_bytes_per_token, cache_with(no_rope=True), "rotated key part"),
    (check_cache_bytes_per_token, cache_with(decompressed=True), "decompressed"),
]  # fmt: skip


@pytest.mark.parametrize("check,wrong,fragment", WRONG)
def test_mistakes_get_their_hint(check, wrong, fragment):
    for seed in (0, 3):
        with pytest.raises(ExerciseError) as err:
            check(wrong, seed=seed)
        assert fragment in str(err.value)


@pytest.mark.parametrize("check", [c for c, *_ in RIGHT])
def test_stub_fails(check):
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check(_stub)
