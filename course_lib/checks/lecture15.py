"""Checks for the exercises of lecture 15 (a per-channel int8 quantiser, a Q4_0 block
dequantiser, the speculative acceptance rule, the KV cache's memory for GQA and MLA).

Each check compares the student's answer with the course library on fixed cases and on random
inputs drawn from its keyword-only ``seed``; when the answer is wrong it tries the usual mistakes
on the same input and names the one that matches.
"""

from __future__ import annotations

import numpy as np

from ..inference.int8 import int8_quantize
from ..inference.kv_memory import kv_cache_bytes_per_token
from ..inference.quantization import dequantize, quantize
from . import ExerciseError, call_student, check_mistakes, hidden_rng, passed

__all__ = [
    "check_int8_per_channel",
    "check_dequantize_q4_0",
    "check_acceptance",
    "check_cache_bytes_per_token",
]

# The course_lib functions that compute each exercise's answer: an answer that calls one is
# flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "15.1": (
        "course_lib.inference.int8.int8_quantize",
        "course_lib.inference.quantized_model.Int8Linear",
    ),  # fmt: skip
    "15.2": ("course_lib.inference.quantization.dequantize",),
    "15.3": ("course_lib.inference.speculative.speculative_accept",),
    "15.4": (
        "course_lib.inference.kv_memory.kv_cache_bytes_per_token",
        "course_lib.grouped_query.kv_cache_bytes",
    ),  # fmt: skip
}


def _as_array(ex: str, got, what: str) -> np.ndarray:
    if hasattr(got, "detach"):  # a torch tensor
        got = got.detach().cpu().numpy()
    try:
        return np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise ExerciseError(ex, f"{what}: expected an array of numbers, got {type(got).__name__}.",
                            "return numpy arrays.") from None  # fmt: skip


# --- 15.1 ----------------------------------------------------------------------------------


def _weights(rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    w = rng.normal(0, 0.05, size=(6, 40)).astype(np.float32)
    w[2, 7] = 1.5  # one outlier: it should change row 2's scale only
    tied = np.array([[0.5, -1.0, 0.25, 1.0], [2.0, -0.5, 0.0, 1.5]], dtype=np.float32)
    return [
        ("w (2, 4) with halves (rows' absmax 1.0 and 2.0)", tied),
        ("w (6, 40), one outlier of 1.5 in row 2", w),
        (
            "w (5, 16) whose largest weights are negative",
            -np.abs(rng.normal(size=(5, 16))).astype(np.float32),
        ),  # fmt: skip
        (
            "hidden w (8, 24)",
            rng.normal(0, rng.uniform(0.01, 3), size=(8, 24)).astype(np.float32),
        ),  # fmt: skip
    ]


def check_int8_per_channel(student_fn, *, seed: int = 0) -> None:
    """Exercise 15.1: ``int8_per_channel(w) -> (q, scale)``, absmax int8, one scale per row."""
    ex = "15.1"
    for what, w in _weights(hidden_rng(seed, 151)):
        got = call_student(ex, student_fn, w.copy())
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise ExerciseError(ex, f"{what}: expected a pair (q, scale), got {type(got).__name__}.",
                                "return q, scale")  # fmt: skip
        q, scale = _as_array(ex, got[0], what), _as_array(ex, got[1], what)
        q_ref, s_ref = int8_quantize(w, per_channel=True)
        absmax = np.abs(w).max(axis=1, keepdims=True)
        s = absmax / 127
        if scale.size == w.shape[0]:
            scale = scale.reshape(-1, 1)
        elif scale.size == 1:  # one number: compare it as a scale for every row
            scale = np.full((w.shape[0], 1), scale.item())
        scale_mistakes = {
            "one scale per ROW (output channel): you used one for the whole matrix.":
                np.full_like(s, np.abs(w).max() / 127),
            "one scale per row: w has shape (out, in) and each row is one output channel; you "
            "took the maximum over axis 0 (the columns).": np.abs(w).max(axis=0) / 127,
            "the scale is max|w| / 127 (so the largest weight maps to 127); you divided by 128.":
                absmax / 128,
            "the scale is max|w| / 127; 255 is the number of levels, not the largest integer.":
                absmax / 255,
            "take the largest ABSOLUTE value: a row whose largest weight is negative has "
            "max(w) < max|w|.": w.max(axis=1, keepdims=True) / 127,
            "return the scale (w ≈ scale * q), not the row's absmax.": absmax,
        }  # fmt: skip
        check_mistakes(ex, scale, s_ref, what=f"{what}: scale", mistakes=scale_mistakes,
                       rtol=1e-6, atol=0,
                       hint="scale = max|w| over each row / 127, shape (out, 1).")  # fmt: skip
        if q.shape != w.shape:
            raise ExerciseError(ex, f"{what}: q should have w's shape {w.shape}, got {q.shape}.",
                                "one integer per weight.")  # fmt: skip
        exact = w.astype(np.float64) / (absmax.astype(np.float64) / 127)  # w / scale, exactly
        if np.all(np.abs(q - exact) <= 0.5 + 1e-4) and np.all(q == np.round(q)):
            continue  # the nearest integer (a tie may go either way: w / s or w * (127 / a))
        q_mistakes = {
            "round to the NEAREST integer (np.round); truncation (astype(int)) moves every "
            "weight towards zero.": np.trunc(exact),
            "round to the nearest integer; np.floor rounds negative weights down.": np.floor(exact),
            "divide by the scale (q = w / scale), do not multiply.": np.round(w * s),
        }  # fmt: skip
        check_mistakes(ex, q, q_ref, what=f"{what}: q", mistakes=q_mistakes, rtol=0, atol=0,
                       hint="q = round(w / scale), integers in -127..127.")  # fmt: skip
    passed(ex, "a per-channel int8 quantiser")


# --- 15.2 ----------------------------------------------------------------------------------


def _q4_0_variants(blocks: np.ndarray, shape) -> dict[str, np.ndarray]:
    b = blocks.reshape(-1, 18)
    d = b[:, :2].copy().view("<f2").astype(np.float32)
    lo, hi = (b[:, 2:] & 15).astype(np.float32), (b[:, 2:] >> 4).astype(np.float32)
    split = np.concatenate([lo, hi], axis=1)  # right: weights 0..15 low, 16..31 high
    interleaved = np.stack([lo, hi], axis=2).reshape(len(b), 32)  # wrong: 2j, 2j + 1
    swapped = np.concatenate([hi, lo], axis=1)
    wrapped = (np.concatenate([b[:, 2:] & 15, b[:, 2:] >> 4], axis=1) - np.uint8(8)).astype(np.float32)  # fmt: skip
    return {
        "the stored values are uint8: subtracting 8 wraps around (0 - 8 = 248). Convert them to "
        "a signed integer or a float first, then subtract 8.": (d * wrapped).reshape(shape),
        "byte j holds weight j in its LOW four bits and weight j + 16 in its HIGH four bits "
        "(not weights 2j and 2j + 1).": (d * (interleaved - 8)).reshape(shape),
        "the LOW four bits hold weights 0..15 and the high four bits weights 16..31; you "
        "swapped them.": (d * (swapped - 8)).reshape(shape),
        "subtract 8: the stored values 0..15 stand for -8..7.": (d * split).reshape(shape),
        "the scale d is a float16 in the first two bytes; read them with .view(np.float16).":
            (split - 8).reshape(shape),
    }  # fmt: skip


def check_dequantize_q4_0(student_fn, *, seed: int = 0) -> None:
    """Exercise 15.2: ``dequantize_q4_0(blocks, shape)`` -> the float32 weights."""
    ex = "15.2"
    rng = hidden_rng(seed, 152)
    one = np.zeros(32, dtype=np.float32)
    one[[0, 1, 16, 17, 31]] = [-4.0, 1.0, 2.0, 0.3, 3.5]
    cases = [
        ("one block of 32 with a few weights set", one.reshape(1, 32)),
        ("w (3, 64): six blocks", rng.normal(size=(3, 64)).astype(np.float32)),
        ("hidden w (4, 96), weights of varied size",
         (rng.normal(size=(4, 96)) * rng.uniform(0.001, 10, size=(4, 1))).astype(np.float32)),
    ]  # fmt: skip
    for what, w in cases:
        blocks = quantize(w, "Q4_0")
        got = _as_array(ex, call_student(ex, student_fn, blocks.copy(), w.shape), what)
        expected = dequantize(blocks, "Q4_0", w.shape)
        if got.size == expected.size and got.shape != expected.shape:
            raise ExerciseError(ex, f"{what}: expected shape {w.shape}, got {got.shape}.",
                                "reshape the weights to `shape` at the end.")  # fmt: skip
        check_mistakes(ex, got, expected, what=what, mistakes=_q4_0_variants(blocks, w.shape),
                       rtol=1e-6, atol=0,
                       hint="per block of 18 bytes: d = float16 of bytes 0-1; weight j = "
                       "d * ((byte j+2 & 15) - 8), weight j+16 = d * ((byte j+2 >> 4) - 8).")  # fmt: skip
    passed(ex, "a Q4_0 block dequantiser")


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
