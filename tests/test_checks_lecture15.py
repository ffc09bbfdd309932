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
    check_dequantize_q5_0,
    check_uint8_per_channel,
)

# --- right answers, written independently of course_lib ------------------------------------


def uint8_numpy(w):
    lo = np.minimum(w.min(axis=1, keepdims=True), 0)
    hi = np.maximum(w.max(axis=1, keepdims=True), 0)
    scale = (hi - lo) / 255
    zero_point = np.round(-lo / scale)
    return np.clip(np.round(w / scale) + zero_point, 0, 255).astype(np.uint8), scale, zero_point


def uint8_torch(w):
    """torch's own per-channel quint8: its observer's qparams, its quantize_per_channel."""
    import warnings

    from torch.ao.quantization import PerChannelMinMaxObserver

    t = torch.tensor(w)
    observer = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.quint8,
                                        qscheme=torch.per_channel_affine)  # fmt: skip
    observer(t)
    scale, zero_point = observer.calculate_qparams()
    with warnings.catch_warnings():  # torch 2.13 says its quantized tensors are deprecated
        warnings.simplefilter("ignore", UserWarning)
        q = torch.quantize_per_channel(t, scale, zero_point, 0, torch.quint8).int_repr()
    return q, scale.float(), zero_point  # float32 scales, levels from float32 w * (1 / scale)


def q5_0_loop(blocks, shape):
    out = []
    for block in blocks.reshape(-1, 22):
        d = np.frombuffer(block[:2].tobytes(), dtype="<f2")[0].astype(np.float32)
        qh = int.from_bytes(block[2:6].tobytes(), "little")
        values = [0] * 32
        for j in range(16):
            values[j] = (int(block[6 + j]) & 15) + 16 * ((qh >> j) & 1)
            values[j + 16] = (int(block[6 + j]) >> 4) + 16 * ((qh >> (j + 16)) & 1)
        out += [d * (v - 16) for v in values]
    return np.array(out, dtype=np.float32).reshape(shape)


def q5_0_unpackbits(blocks, shape):
    b = blocks.reshape(-1, 22)
    d = b[:, :2].copy().view(np.float16).astype(np.float64)
    fifth = np.unpackbits(b[:, 2:6], axis=1, bitorder="little")  # (n, 32): bit j of qh
    low = np.concatenate([b[:, 6:] % 16, b[:, 6:] // 16], axis=1)
    return torch.tensor(d * (low.astype(np.int64) + 16 * fifth.astype(np.int64) - 16)).reshape(
        shape
    )


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
    (check_uint8_per_channel, uint8_numpy, uint8_torch, "15.1 passed"),
    (check_dequantize_q5_0, q5_0_loop, q5_0_unpackbits, "15.2 passed"),
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


def uint8_with(scale_of=None, zero_point_of=None, level_of=None):
    """uint8_numpy with one step replaced by a usual mistake."""

    def answer(w):
        lo = np.minimum(w.min(axis=1, keepdims=True), 0)
        hi = np.maximum(w.max(axis=1, keepdims=True), 0)
        scale = (hi - lo) / 255 if scale_of is None else scale_of(w, lo, hi)
        zp = np.round(-lo / scale) if zero_point_of is None else zero_point_of(lo, scale)
        q = (np.clip(np.round(w / scale) + zp, 0, 255) if level_of is None
             else level_of(w, scale, zp))  # fmt: skip
        return q.astype(np.uint8), scale, zp

    return answer


def q5_0_with(minus=16, fifth="right", order="split", scale=True, wrap=False):
    """The right Q5_0 dequantiser with one step replaced by a usual mistake."""

    def answer(blocks, shape):
        b = blocks.reshape(-1, 22)
        d = b[:, :2].copy().view(np.float16).astype(np.float32) if scale else 1.0
        qh = b[:, 2:6].copy().view("<u4" if fifth != "big" else ">u4").astype(np.int64)
        j = np.arange(16)
        bits = {
            "right": np.concatenate([(qh >> j) & 1, (qh >> (j + 16)) & 1], axis=1),
            "big": np.concatenate([(qh >> j) & 1, (qh >> (j + 16)) & 1], axis=1),
            "same": np.concatenate([(qh >> j) & 1, (qh >> j) & 1], axis=1),
            "none": np.zeros((len(b), 32), dtype=np.int64),
            "one": np.concatenate([(qh >> j) & 1, (qh >> (j + 16)) & 1], axis=1),
        }[fifth]
        lo, hi = b[:, 6:] & 15, b[:, 6:] >> 4
        low = (np.concatenate([lo, hi], axis=1) if order == "split"
               else np.stack([lo, hi], axis=2).reshape(len(b), 32))  # fmt: skip
        v = low.astype(np.int64) + (1 if fifth == "one" else 16) * bits
        if wrap:
            return (d * (v.astype(np.uint8) - np.uint8(minus)).astype(np.float32)).reshape(shape)
        return (d * (v - minus)).reshape(shape)

    return answer


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
    (check_uint8_per_channel, uint8_with(scale_of=lambda w, lo, hi: np.full((len(w), 1), (max(w.max(), 0) - min(w.min(), 0)) / 255)), "for the whole matrix"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(scale_of=lambda w, lo, hi: (w.max(axis=1, keepdims=True) - w.min(axis=1, keepdims=True)) / 255), "the range must contain 0"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(scale_of=lambda w, lo, hi: (hi - lo) / 256), "not / 256"),
    (check_uint8_per_channel, uint8_with(scale_of=lambda w, lo, hi: 255 / (hi - lo)), "its inverse"),
    (check_uint8_per_channel, uint8_with(scale_of=lambda w, lo, hi: hi - lo), "not the range hi - lo"),
    (check_uint8_per_channel, uint8_with(scale_of=lambda w, lo, hi: (np.maximum(w.max(axis=0), 0) - np.minimum(w.min(axis=0), 0)) / 255), "axis 0"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(scale_of=lambda w, lo, hi: np.abs(w).max(axis=1, keepdims=True) / 127), "symmetric"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(zero_point_of=lambda lo, s: -lo / s), "zero_point is an integer"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(zero_point_of=lambda lo, s: np.round(lo / s)), "sign the wrong way"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(zero_point_of=lambda lo, s: np.full_like(lo, 128)), "128 is only right"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(level_of=lambda w, s, z: np.round(w / s)), "add the zero point"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(level_of=lambda w, s, z: np.round(w / s) - z), "you subtracted it"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(level_of=lambda w, s, z: np.trunc(w / s) + z), "truncation"),  # fmt: skip
    (check_uint8_per_channel, uint8_with(level_of=lambda w, s, z: np.floor(w / s) + z), "np.floor"),  # fmt: skip
    (check_uint8_per_channel, lambda w: uint8_numpy(w)[:2], "a triple (q, scale, zero_point)"),
    (check_dequantize_q5_0, q5_0_with(minus=8), "subtract 16, not 8"),
    (check_dequantize_q5_0, q5_0_with(fifth="none"), "FIFTH bit"),
    (check_dequantize_q5_0, q5_0_with(fifth="same"), "bit j + 16 of qh"),
    (check_dequantize_q5_0, q5_0_with(fifth="big"), "LITTLE-endian"),
    (check_dequantize_q5_0, q5_0_with(fifth="one"), "worth 16"),
    (check_dequantize_q5_0, q5_0_with(order="interleaved"), "not weights 2j and 2j + 1"),
    (check_dequantize_q5_0, q5_0_with(wrap=True), "wraps around"),
    (check_dequantize_q5_0, q5_0_with(scale=False), "float16 in the first two bytes"),
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


# --- the checks' own references, against independent ones ---------------------------------


def test_the_uint8_reference_is_torchs_per_channel_quint8():
    """15.1's reference: torch's observer gives the same scales (float32) and zero points; its
    levels, computed in float32, differ from the float64 ones by at most 1 at rounding ties."""
    from course_lib.checks.lecture15 import _affine_uint8, _weights

    for seed in range(20):
        for _, w in _weights(np.random.default_rng(seed)):
            q_torch, s_torch, z_torch = uint8_torch(w)
            q, scale, zero_point, _ = _affine_uint8(w)
            np.testing.assert_allclose(s_torch.numpy(), scale[:, 0], rtol=1e-6)
            assert np.array_equal(z_torch.numpy(), zero_point[:, 0])
            differ = q_torch.numpy().astype(int) != q
            assert np.abs(q_torch.numpy().astype(int) - q).max() <= 1 and differ.mean() < 0.01


def test_the_q5_0_reference_is_gguf_bit_for_bit():
    from gguf import GGMLQuantizationType, quants

    from course_lib.checks.lecture15 import _dequantize_q5_0, _q5_0_blocks

    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 64)).astype(np.float32)
    blocks = [quants.quantize(x, GGMLQuantizationType.Q5_0), _q5_0_blocks(rng, 5, 96)]
    for b in blocks:
        shape = (b.shape[0], b.shape[1] // 22 * 32)
        want = quants.dequantize(b, GGMLQuantizationType.Q5_0)
        assert np.array_equal(_dequantize_q5_0(b, shape), want)
    assert np.abs(_dequantize_q5_0(blocks[0], x.shape) - x).max() < 0.1  # it is x, 5 bits deep
