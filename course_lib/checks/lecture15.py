"""Checks for the exercises of lecture 15 (an asymmetric uint8 quantiser with a zero point, a Q5_0
block dequantiser, the speculative acceptance rule, the KV cache's memory for GQA and MLA).
The lecture shows the symmetric int8 and the Q8_0/Q4_0/Q4_1 code; exercises 15.1 and 15.2 ask
for the formats beside them, which it does not show.

Each check compares the student's answer with the course library on fixed cases and on random
inputs drawn from its keyword-only ``seed``; when the answer is wrong it tries the usual mistakes
on the same input and names the one that matches.
"""

from __future__ import annotations

import numpy as np

from ..inference.kv_memory import kv_cache_bytes_per_token
from . import ExerciseError, answer_array, call_student, check_mistakes, hidden_rng, passed

__all__ = [
    "check_uint8_per_channel",
    "check_dequantize_q5_0",
    "check_acceptance",
    "check_cache_bytes_per_token",
]

# The course_lib functions that compute each exercise's answer: an answer that calls one is
# flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    # no course_lib function computes 15.1 or 15.2 (torch's quantize_per_channel and
    # gguf.quants.dequantize do: the tests' references, outside what the grader can flag)
    "15.1": (),
    "15.2": (),
    "15.3": ("course_lib.inference.speculative.speculative_accept",),
    "15.4": (
        "course_lib.inference.kv_memory.kv_cache_bytes_per_token",
        "course_lib.grouped_query.kv_cache_bytes",
    ),  # fmt: skip
}


def _as_array(ex: str, got, what: str) -> np.ndarray:
    return answer_array(ex, got, what, hint="return numpy arrays.")


# --- 15.1 ----------------------------------------------------------------------------------


def _weights(rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """Rows of every sign pattern: mixed, all >= 0 (zero point 0), all < 0 (zero point 255)."""
    fixed = np.array([[0.5, -1.0, 0.25, 0.75], [2.0, 0.5, 0.1, 1.5]], dtype=np.float32)
    shifted = rng.normal(rng.uniform(-0.06, 0.06, size=(6, 1)), 0.05, size=(6, 40))
    shifted[2, 7] = 1.5  # one outlier: it should change row 2's scale and zero point only
    return [
        ("w (2, 4): one row from -1 to 0.75, one row all positive", fixed),
        ("w (6, 40), rows centred off zero, one outlier of 1.5 in row 2",
         shifted.astype(np.float32)),
        ("w (5, 16), every weight negative", -np.abs(rng.normal(size=(5, 16))).astype(np.float32)),
        ("w (4, 32), every weight positive",
         (np.abs(rng.normal(size=(4, 32))) + 0.1).astype(np.float32)),
        ("hidden w (8, 24)",
         rng.normal(rng.uniform(-1, 1, size=(8, 1)), rng.uniform(0.01, 3, size=(8, 1)),
                    size=(8, 24)).astype(np.float32)),
    ]  # fmt: skip


def _affine_uint8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The asymmetric uint8 reference in float64: ``(q, scale, zero_point, -lo / scale)``. The
    tests hold it to torch's ``PerChannelMinMaxObserver`` + ``quantize_per_channel`` (quint8)."""
    w = w.astype(np.float64)
    lo = np.minimum(w.min(axis=1, keepdims=True), 0)  # (out, 1): the range holds 0
    hi = np.maximum(w.max(axis=1, keepdims=True), 0)
    scale = (hi - lo) / 255
    exact = -lo / scale  # the zero point before rounding
    zero_point = np.round(exact)
    return np.clip(np.round(w / scale) + zero_point, 0, 255), scale, zero_point, exact


def _integers(ex: str, a: np.ndarray, what: str, name: str) -> None:
    if not np.all(a == np.round(a)):
        raise ExerciseError(ex, f"{what}: {name} should hold whole numbers, got e.g. "
                            f"{a[a != np.round(a)].flat[0]:.4g}.",
                            f"round it: {name} is an integer level of the uint8 grid.")  # fmt: skip


def check_uint8_per_channel(student_fn, *, seed: int = 0) -> None:
    """Exercise 15.1: ``uint8_per_channel(w) -> (q, scale, zero_point)``, asymmetric uint8 with
    one scale and one integer zero point per row, as PyTorch's quint8."""
    ex = "15.1"
    for what, w in _weights(hidden_rng(seed, 151)):
        got = call_student(ex, student_fn, w.copy())
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise ExerciseError(ex, f"{what}: expected a triple (q, scale, zero_point), got "
                                f"{type(got).__name__}.", "return q, scale, zero_point")  # fmt: skip
        q, scale, zp = (_as_array(ex, g, what) for g in got)
        q_ref, s_ref, zp_ref, exact = _affine_uint8(w)
        w64, rows = w.astype(np.float64), w.shape[0]
        scale = scale.reshape(-1, 1) if scale.size == rows else scale
        zp = zp.reshape(-1, 1) if zp.size == rows else zp
        absmax = np.abs(w64).max(axis=1, keepdims=True)
        span = np.maximum(w64.max(axis=1, keepdims=True), 0) - np.minimum(
            w64.min(axis=1, keepdims=True), 0)  # fmt: skip
        scale_mistakes = {
            "one scale per ROW (output channel): you used one for the whole matrix.":
                np.full_like(s_ref, (max(w64.max(), 0) - min(w64.min(), 0)) / 255),
            "one scale per row: w has shape (out, in) and each row is one output channel; you "
            "took the range over axis 0 (the columns).":
                (np.maximum(w64.max(axis=0), 0) - np.minimum(w64.min(axis=0), 0)) / 255,
            "the range must contain 0 (lo = min(min(w), 0), hi = max(max(w), 0)), so that 0 is "
            "stored exactly; for a row of one sign you took min(w) to max(w).":
                (w64.max(axis=1, keepdims=True) - w64.min(axis=1, keepdims=True)) / 255,
            "the 256 levels 0..255 are 255 steps apart: scale = (hi - lo) / 255, not / 256.":
                span / 256,
            "this is the asymmetric format: the scale spans lo..hi, not the symmetric "
            "max|w| / 127 of the lecture's int8.": absmax / 127,
            "scale = (hi - lo) / 255 (the size of one step); you returned its inverse.": 255 / span,
            "return the step, scale = (hi - lo) / 255, not the range hi - lo.": span,
        }  # fmt: skip
        check_mistakes(ex, scale, s_ref, what=f"{what}: scale", mistakes=scale_mistakes,
                       rtol=1e-6, atol=0,
                       hint="per row: lo = min(w, 0), hi = max(w, 0), scale = (hi - lo) / 255, "
                       "shape (out, 1).")  # fmt: skip
        if zp.shape != s_ref.shape:
            raise ExerciseError(ex, f"{what}: zero_point should have shape {s_ref.shape} (one "
                                f"per row), got {zp.shape}.", "one integer per row.")  # fmt: skip
        zp_mistakes = {
            "zero_point is an integer: round(-lo / scale), so that 0 is a level of the grid.":
                exact,
            "zero_point = round(-lo / scale): lo <= 0, so the zero point is >= 0 (you have the "
            "sign the wrong way round).": np.round(-exact),
            "the zero point depends on the row's range (round(-lo / scale)); 128 is only right "
            "when the row is symmetric.": np.full_like(exact, 128),
        }  # fmt: skip
        if np.all(np.abs(zp - exact) <= 0.5 + 1e-3):  # the nearest level (a tie either way)
            _integers(ex, zp, what, "zero_point")
        else:
            check_mistakes(ex, zp, zp_ref, what=f"{what}: zero_point", mistakes=zp_mistakes,
                           rtol=0, atol=1e-3, hint="zero_point = round(-lo / scale), "
                           "an integer in 0..255, shape (out, 1).")  # fmt: skip
        if q.shape != w.shape:
            raise ExerciseError(ex, f"{what}: q should have w's shape {w.shape}, got {q.shape}.",
                                "one integer per weight.")  # fmt: skip
        _integers(ex, q, what, "q")
        error = np.abs(s_ref * (q - zp) - w64)  # what the stored level stands for, against w
        edge = (q == 0) | (q == 255)  # clipped at a tie: up to a whole step away
        if (q.min() >= 0 and q.max() <= 255
                and np.all(error <= s_ref * np.where(edge, 1.001, 0.5005))):  # fmt: skip
            continue
        _check_levels(ex, what, q, q_ref, w64, s_ref, zp_ref)
    passed(ex, "an asymmetric uint8 quantiser")


def _check_levels(ex: str, what: str, q, q_ref, w, scale, zp) -> None:
    """``q`` is wrong: name the usual mistake it matches on (nearly) every weight, or say so."""
    ratio = w / scale
    if q.min() < 0 or q.max() > 255:
        raise ExerciseError(ex, f"{what}: q holds {q.min():g}..{q.max():g}, outside 0..255.",
                            "clip round(w / scale) + zero_point to 0..255.")  # fmt: skip
    mistakes = {
        "add the zero point: q = round(w / scale) + zero_point (you left it out, and the "
        "negative levels wrapped around in uint8).": np.round(ratio) % 256,
        "ADD the zero point, q = round(w / scale) + zero_point; you subtracted it.":
            (np.round(ratio) - zp) % 256,
        "round to the NEAREST integer; truncation (astype) moves every weight towards zero.":
            (np.trunc(ratio) + zp) % 256,
        "round to the nearest integer; np.floor rounds every weight down.":
            (np.floor(ratio) + zp) % 256,
        "clip to 0..255 BEFORE converting to uint8: a level of 256 wrapped round to 0.":
            (np.round(ratio) + zp) % 256,
        "divide by the scale (w / scale), do not multiply.": (np.round(w * scale) + zp) % 256,
    }  # fmt: skip
    for hint, wrong in mistakes.items():
        if wrong.shape == q.shape and np.sum(q != wrong) <= max(1, q.size // 50):  # ties aside
            raise ExerciseError(ex, f"{what}: q differs from the expected levels on "
                                f"{int(np.sum(q != q_ref))} of {q.size} weights.", hint)  # fmt: skip
    raise ExerciseError(ex, f"{what}: q differs from the expected levels on "
                        f"{int(np.sum(q != q_ref))} of {q.size} weights.",
                        "q = round(w / scale) + zero_point, clipped to 0..255.")  # fmt: skip


# --- 15.2 ----------------------------------------------------------------------------------

Q5_0_BYTES = 22  # per block of 32 weights: d (2 bytes), qh (4), 16 bytes of low nibbles


def _q5_0_parts(blocks: np.ndarray):
    """``(d, qh, low, high)`` of every block: the float16 scale ``(n, 1)``, the 32 fifth bits as a
    uint32 ``(n, 1)``, and the low nibbles of weights 0..15 and 16..31 ``(n, 16)`` each."""
    b = blocks.reshape(-1, Q5_0_BYTES)
    d = b[:, :2].copy().view("<f2").astype(np.float32)
    qh = b[:, 2:6].copy().view("<u4").astype(np.int64)
    return d, qh, (b[:, 6:] & 15).astype(np.int64), (b[:, 6:] >> 4).astype(np.int64)


def _dequantize_q5_0(blocks: np.ndarray, shape) -> np.ndarray:
    """The Q5_0 reference (ggml's ``dequantize_row_q5_0``); the tests hold it to
    ``gguf.quants.dequantize`` bit for bit."""
    d, qh, low, high = _q5_0_parts(blocks)
    j = np.arange(16)
    v = np.concatenate([low | ((qh >> j) & 1) << 4, high | ((qh >> (j + 16)) & 1) << 4], axis=1)
    return (d * (v - 16)).astype(np.float32).reshape(shape)  # (n, 32): d * (v - 16)


def _q5_0_variants(blocks: np.ndarray, shape) -> dict[str, np.ndarray]:
    d, qh, low, high = _q5_0_parts(blocks)
    j = np.arange(16)
    bit_lo, bit_hi = (qh >> j) & 1, (qh >> (j + 16)) & 1
    big = blocks.reshape(-1, Q5_0_BYTES)[:, 2:6].copy().view(">u4").astype(np.int64)

    def w(lo_v, hi_v, minus=16, scale=d):
        return (scale * (np.concatenate([lo_v, hi_v], axis=1) - minus)).reshape(shape)

    right_lo, right_hi = low | bit_lo << 4, high | bit_hi << 4
    wrapped = np.concatenate([right_lo, right_hi], axis=1).astype(np.uint8) - np.uint8(16)
    return {
        "the 5-bit values are 0..31 and stand for -16..15: subtract 16, not 8.":
            w(right_lo, right_hi, minus=8),
        "each weight has a FIFTH bit in qh (bytes 2-5): bit j of qh is worth 16 in weight j's "
        "value; you used the low four bits only.": w(low, high),
        "weight j + 16's fifth bit is bit j + 16 of qh (you used bit j for both halves).":
            w(right_lo, high | bit_lo << 4),
        "qh is a LITTLE-endian uint32: byte 2 holds bits 0..7 (weights 0..7).":
            w(low | ((big >> j) & 1) << 4, high | ((big >> (j + 16)) & 1) << 4),
        "the fifth bit is worth 16 (v = low | bit << 4), not 1.":
            w(low + bit_lo, high + bit_hi),
        "byte 6 + j holds weight j in its LOW four bits and weight j + 16 in its HIGH four "
        "bits (not weights 2j and 2j + 1).": (d * (np.stack([low, high], axis=2).reshape(
            len(d), 32) | np.concatenate([bit_lo, bit_hi], axis=1) << 4) - 16 * d).reshape(shape),
        "the stored values are uint8: subtracting 16 wraps around (3 - 16 = 243). Convert them "
        "to a signed integer or a float first.": (d * wrapped.astype(np.float32)).reshape(shape),
        "the scale d is a float16 in the first two bytes; read them with .view(np.float16).":
            w(right_lo, right_hi, scale=1.0),
    }  # fmt: skip


def _q5_0_blocks(rng: np.random.Generator, rows: int, n: int, d_range=(1e-3, 0.2)) -> np.ndarray:
    """``rows`` rows of ``n // 32`` Q5_0 blocks of random bits, each with a finite float16 scale
    of either sign: every bit pattern a file can hold."""
    b = rng.integers(0, 256, size=(rows * n // 32, Q5_0_BYTES), dtype=np.uint8)
    d = rng.uniform(*d_range, size=(len(b), 1)) * rng.choice([-1, 1], size=(len(b), 1))
    b[:, :2] = d.astype("<f2").view(np.uint8)
    return b.reshape(rows, n // 32 * Q5_0_BYTES)


def check_dequantize_q5_0(student_fn, *, seed: int = 0) -> None:
    """Exercise 15.2: ``dequantize_q5_0(blocks, shape)`` -> the float32 weights."""
    ex = "15.2"
    rng = hidden_rng(seed, 152)
    one = np.zeros((1, Q5_0_BYTES), dtype=np.uint8)  # d = 0.5; weights 0, 1, 16, 17 and 31 set
    one[0, :2] = np.array([0.5], dtype="<f2").view(np.uint8)
    one[0, 2:6] = np.array([(1 << 0) | (1 << 17) | (1 << 31)], dtype="<u4").view(np.uint8)
    one[0, 6:] = 0x88  # every other value 8 (+ its fifth bit 0): weight -8 * d
    one[0, 6] = 0x3F  # weight 0: 15 + 16 = 31 -> 15 d; weight 16: 3 -> -13 d
    one[0, 7] = 0x21  # weight 1: 1 -> -15 d; weight 17: 2 + 16 = 18 -> 2 d
    cases = [
        ("one block of 32 with a few weights set", one, (1, 32)),
        ("w (3, 64): six blocks of random bits", _q5_0_blocks(rng, 3, 64), (3, 64)),
        ("hidden w (4, 96), scales of varied size",
         _q5_0_blocks(rng, 4, 96, (1e-4, 10.0)), (4, 96)),
    ]  # fmt: skip
    for what, blocks, shape in cases:
        got = _as_array(ex, call_student(ex, student_fn, blocks.copy(), shape), what)
        expected = _dequantize_q5_0(blocks, shape)
        if got.size == expected.size and got.shape != expected.shape:
            raise ExerciseError(ex, f"{what}: expected shape {shape}, got {got.shape}.",
                                "reshape the weights to `shape` at the end.")  # fmt: skip
        check_mistakes(ex, got, expected, what=what, mistakes=_q5_0_variants(blocks, shape),
                       rtol=1e-6, atol=0,
                       hint="per block of 22 bytes: d = float16 of bytes 0-1, qh = uint32 of "
                       "bytes 2-5 (little-endian); weight j = d * ((byte 6+j & 15) + 16 * bit j "
                       "of qh - 16), weight j+16 the high nibble and bit j+16.")  # fmt: skip
    passed(ex, "a Q5_0 block dequantiser")


# --- 15.3 ----------------------------------------------------------------------------------


def _normalised(v: np.ndarray) -> np.ndarray:
    total = v.sum()
    return v / total if total > 0 else v


def _acceptance(p, q, tokens, r, *, ratio=None, stop=True, residual="p-q", norm=True,
                bonus_row=None):  # fmt: skip
    """The rule with the knobs the usual mistakes turn (the right one with the defaults)."""
    k = len(tokens)
    rows = np.arange(k)
    ratio = p[rows, tokens] / q[rows, tokens] if ratio is None else ratio
    ok = r <= ratio
    n = int(np.cumprod(ok).sum()) if stop else int(ok.sum())
    if n < k:
        diff = {"p-q": p[n] - q[n], "q-p": q[n] - p[n], "p": p[n]}[residual]
        nxt = np.maximum(diff, 0)
        nxt = _normalised(nxt) if norm else nxt
    else:
        nxt = p[k if bonus_row is None else bonus_row]
    return n, nxt


def _acceptance_cases(rng: np.random.Generator):
    p = np.array([[0.1, 0.6, 0.3], [0.2, 0.2, 0.6], [0.5, 0.25, 0.25]])
    q = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    cases = [
        ("k = 2, both drafts accepted (p >= q for each): the bonus comes from p's last row",
         p, q, np.array([1, 0]), np.array([0.9, 0.99])),
        ("k = 2, the first draft rejected (r = 0.5 > p/q = 0.2); the second would pass",
         p, q, np.array([0, 1]), np.array([0.5, 0.0])),
        ("k = 2, the second draft rejected (r = 0.9 > p/q = 0.75)", p, q,
         np.array([1, 2]), np.array([0.0, 0.9])),
    ]  # fmt: skip
    for name, k in (("hidden", 3), ("hidden", 5)):
        vocab = 7
        pk = rng.dirichlet(np.ones(vocab), size=k + 1)
        qk = rng.dirichlet(np.ones(vocab), size=k)
        tokens = np.array([rng.choice(vocab, p=row) for row in qk])
        cases.append((f"{name} k = {k}, vocab {vocab}", pk, qk, tokens, rng.random(k)))
    return cases


def check_acceptance(student_fn, *, seed: int = 0) -> None:
    """Exercise 15.3: ``accept(p, q, tokens, r) -> (n, next_probs)``, Leviathan et al.'s rule."""
    ex = "15.3"
    for what, p, q, tokens, r in _acceptance_cases(hidden_rng(seed, 153)):
        got = call_student(ex, student_fn, p.copy(), q.copy(), tokens.copy(), r.copy())
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise ExerciseError(ex, f"{what}: expected a pair (n, next_probs), got {type(got).__name__}.",
                                "return n, next_probs")  # fmt: skip
        n_ref, next_ref = _acceptance(p, q, tokens, r)
        k, rows = len(tokens), np.arange(len(tokens))
        wrong = {
            "the ratio is p(x) / q(x), target over draft; you used q / p.":
                _acceptance(p, q, tokens, r, ratio=q[rows, tokens] / p[rows, tokens]),
            "stop at the FIRST rejected draft: later drafts were made after a wrong token and "
            "are thrown away, accepted or not.": _acceptance(p, q, tokens, r, stop=False),
            "after a rejection sample from max(0, p - q) (what the target has more of than the "
            "draft), not max(0, q - p).": _acceptance(p, q, tokens, r, residual="q-p"),
            "after a rejection sample from the residual max(0, p - q), not from p itself (p "
            "would over-sample what the draft already proposed).":
                _acceptance(p, q, tokens, r, residual="p"),
            "normalise the residual: max(0, p - q) / its sum is a distribution.":
                _acceptance(p, q, tokens, r, norm=False),
            "when every draft is accepted the extra token comes from p's LAST row (p[k]: the "
            "position after the k drafts).": _acceptance(p, q, tokens, r, bonus_row=k - 1),
        }  # fmt: skip
        try:
            n = int(got[0])
        except (TypeError, ValueError):
            raise ExerciseError(ex, f"{what}: n should be an integer, got {got[0]!r:.40}.",
                                "n = how many drafts were accepted (0..k).") from None  # fmt: skip
        nxt = _as_array(ex, got[1], what)

        def same(n_other, next_other, n=n, nxt=nxt):
            return (
                n == n_other
                and nxt.shape == next_other.shape
                and np.allclose(nxt, next_other, rtol=1e-6, atol=1e-9)
            )

        if same(n_ref, next_ref):
            continue
        for hint, (n_wrong, next_wrong) in wrong.items():
            if same(n_wrong, next_wrong):
                raise ExerciseError(ex, f"{what}: expected n = {n_ref} and the next-token "
                                    f"distribution {np.round(next_ref, 4).tolist()}, got n = "
                                    f"{n} and {np.round(nxt, 4).tolist()}.", hint)  # fmt: skip
        if n != n_ref:
            raise ExerciseError(ex, f"{what}: expected n = {n_ref} accepted drafts, got {n}.",
                                "accept draft i while r[i] <= p[i, x_i] / q[i, x_i]; stop at the first rejection.")  # fmt: skip
        check_mistakes(ex, nxt, next_ref, what=f"{what}: next_probs", rtol=1e-6, atol=1e-9,
                       hint="rejected at i: normalise max(0, p[i] - q[i]); all accepted: p[k].")  # fmt: skip
    passed(ex, "the speculative acceptance rule")


# --- 15.4 ----------------------------------------------------------------------------------


def _hidden_configs(rng: np.random.Generator) -> list[tuple[str, dict]]:
    heads = int(rng.choice([8, 16, 32]))
    return [
        ("multi-head (MHA): Llama 2 7B's config", {
            "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 32, "head_dim": 128}),
        ("hidden GQA config whose head_dim is not hidden_size / heads", {
            "num_hidden_layers": int(rng.integers(8, 40)), "hidden_size": 80 * heads,
            "num_attention_heads": heads, "num_key_value_heads": heads // 4,
            "head_dim": int(rng.choice([128, 256]))}),
        ("hidden GQA config without head_dim (it is hidden_size / heads)", {
            "num_hidden_layers": int(rng.integers(4, 30)), "hidden_size": 96 * heads,
            "num_attention_heads": heads, "num_key_value_heads": 2}),
        ("hidden MLA config (DeepSeek-style latent attention)", {
            "num_hidden_layers": int(rng.integers(20, 70)), "hidden_size": 5120,
            "num_attention_heads": 128, "num_key_value_heads": 128,
            "kv_lora_rank": int(rng.choice([256, 512])), "qk_rope_head_dim": 64,
            "qk_nope_head_dim": 128, "v_head_dim": 128}),
    ]  # fmt: skip


def _cache_mistakes(c: dict) -> dict[str, float]:
    L, heads = c["num_hidden_layers"], c["num_attention_heads"]
    if "kv_lora_rank" in c:
        latent, rope = c["kv_lora_rank"], c["qk_rope_head_dim"]
        decompressed = L * heads * (c["qk_nope_head_dim"] + rope + c["v_head_dim"]) * 2
        return {
            "MLA caches ONE latent per token and layer, shared by keys and values: "
            "kv_lora_rank + qk_rope_head_dim numbers, not twice the latent.":
                L * (2 * latent + rope) * 2,
            "MLA also caches the rotated key part (qk_rope_head_dim numbers), which cannot be "
            "folded into the latent.": L * latent * 2,
            "that is what MLA would cache if it stored every head's decompressed keys and "
            "values; it caches the latent instead.": decompressed,
            "2 bytes per number (bfloat16), times every layer.": (latent + rope) * 2,
        }  # fmt: skip
    kv = c.get("num_key_value_heads", heads)
    head_dim = c.get("head_dim") or c["hidden_size"] // heads
    return {
        "the cache holds a key AND a value per KV head: the factor 2.": L * kv * head_dim * 2,
        "with grouped-query attention only the num_key_value_heads heads are cached, not "
        "num_attention_heads.": 2 * L * heads * head_dim * 2,
        "use config['head_dim'] when the config gives it (here it is not hidden_size / heads).":
            2 * L * kv * (c["hidden_size"] // heads) * 2,
        "2 bytes per number (bfloat16), not 4.": 2 * L * kv * head_dim * 4,
        "times the number of layers: each layer caches its own keys and values.":
            2 * kv * head_dim * 2,
    }  # fmt: skip


def check_cache_bytes_per_token(student_fn, *, seed: int = 0) -> None:
    """Exercise 15.4: ``cache_bytes_per_token(config)`` for MHA/GQA and MLA configs, bf16."""
    ex = "15.4"
    for what, config in _hidden_configs(hidden_rng(seed, 154)):
        got = call_student(ex, student_fn, dict(config))
        expected = kv_cache_bytes_per_token(config, bytes_per_value=2)
        mistakes = {hint: v for hint, v in _cache_mistakes(config).items() if v != expected}
        check_mistakes(ex, _as_array(ex, got, what), float(expected), what=what,
                       mistakes=mistakes, rtol=0, atol=0.5,
                       hint="GQA: 2 * layers * kv_heads * head_dim * 2 bytes; "
                       "MLA: layers * (kv_lora_rank + qk_rope_head_dim) * 2 bytes.")  # fmt: skip
    passed(ex, "the KV cache's memory per token (GQA and MLA)")
