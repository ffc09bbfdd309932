"""Checks for the exercises of lecture 16 (mixture of experts, sliding windows, latent attention).

Each check compares the student's answer with the course library on fixed cases and on random
inputs drawn from its keyword-only ``seed``; when the answer is wrong it tries the usual mistakes
on the same input and names the one that matches. The student's functions take and return NumPy
arrays and Python numbers; the library's torch functions compute the expected answers here.
"""

from __future__ import annotations

import numpy as np

from ..configs import MLAConfig, ModernConfig
from . import (
    ExerciseError,
    _single_precision,
    answer_array,
    call_student,
    check_array,
    hidden_rng,
    passed,
)

__all__ = ["check_top_k_routing", "check_balance_loss", "check_window_mask", "check_mla_cache"]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "16.1": (
        "course_lib.nn.moe.softmax_top_k",
        "course_lib.nn.moe.Router",
        "course_lib.nn.moe.MixtureOfExperts",
    ),  # fmt: skip
    "16.2": ("course_lib.nn.moe.load_balancing_loss",),
    "16.3": ("course_lib.nn.attention.sliding_window_mask",),
    "16.4": ("course_lib.models.modern.kv_cache_bytes_for",),
}


def _torch():
    import torch  # the checks' references are torch functions; imported when a check runs

    return torch


def _first_match(got, mistakes, same) -> str | None:
    return next((hint for wrong, hint in mistakes if same(got, wrong)), None)


# --- 16.1 ----------------------------------------------------------------------------------


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _by_expert(weights: np.ndarray, experts: np.ndarray, num_experts: int) -> np.ndarray:
    """The routing as a dense (T, E) matrix: weight of expert e for token t (0 if not chosen)."""
    dense = np.zeros((weights.shape[0], num_experts))
    np.put_along_axis(dense, experts, weights, axis=1)
    return dense


def _reference_routing(logits: np.ndarray, k: int, normalize: bool) -> np.ndarray:
    from ..nn.moe import softmax_top_k

    torch = _torch()
    w, e = softmax_top_k(torch.as_tensor(logits, dtype=torch.float64), k, normalize)
    return _by_expert(w.numpy(), e.numpy(), logits.shape[-1])


def _routing_mistakes(logits: np.ndarray, k: int, normalize: bool):
    probs = _softmax(logits)
    top = np.argsort(-probs, axis=-1)[:, :k]
    low = np.argsort(probs, axis=-1)[:, :k]
    kept = np.take_along_axis(probs, top, axis=1)
    other = kept if normalize else kept / kept.sum(-1, keepdims=True)
    with np.errstate(over="ignore"):
        sig = 1 / (1 + np.exp(-logits))
    sig_w = np.take_along_axis(sig, top, axis=1)
    col = _softmax(logits, axis=0)
    return [
        (_by_expert(other, top, logits.shape[-1]),
         "renormalise only when normalize is True: then divide the k kept probabilities by "
         "their sum; with normalize=False return them as the softmax gave them."),
        (_by_expert(np.take_along_axis(probs, low, axis=1), low, logits.shape[-1]),
         "keep the k LARGEST probabilities (np.argsort(-p) or np.argpartition)."),
        (_by_expert(sig_w / sig_w.sum(-1, keepdims=True) if normalize else sig_w, top,
                    logits.shape[-1]),
         "Mixtral and Qwen3 score with a SOFTMAX over the experts, not a sigmoid."),
        (_by_expert(np.take_along_axis(col, top, axis=1), top, logits.shape[-1]),
         "the softmax runs over the EXPERTS of each token (the last axis), not over tokens."),
    ]  # fmt: skip


def check_top_k_routing(student_fn, *, seed: int = 0) -> None:
    """Exercise 16.1: ``route(logits (T, E), k, normalize) -> (weights (T, k), experts (T, k))``."""
    ex = "16.1"
    rng = hidden_rng(seed, 161)
    cases = [
        ("one token, logits log([0.2, 0.7, 0.1]), k = 2, renormalised",
         np.log(np.array([[0.2, 0.7, 0.1]])), 2, True),
        ("the same token, k = 2, NOT renormalised", np.log(np.array([[0.2, 0.7, 0.1]])), 2, False),
        ("random logits (6 tokens, 8 experts), k = 2, renormalised", rng.normal(size=(6, 8)) * 2,
         2, True),
        ("random logits (5 tokens, 6 experts), k = 3, not renormalised",
         rng.normal(size=(5, 6)) * 2, 3, False),
        ("large logits (up to 1000): the softmax must not overflow", rng.normal(size=(4, 5)) * 500,
         2, True),
        ("k = number of experts (4), renormalised", rng.normal(size=(3, 4)), 4, True),
    ]  # fmt: skip
    for what, logits, k, normalize in cases:
        got = call_student(ex, student_fn, logits.copy(), k, normalize)
        if not isinstance(got, tuple) or len(got) != 2:
            raise ExerciseError(ex, f"{what}: expected a pair (weights, experts), got "
                                f"{type(got).__name__}.", "return weights, experts")  # fmt: skip
        t = logits.shape[0]
        weights = answer_array(ex, got[0], f"{what}: weights", (t, k))
        experts = answer_array(ex, got[1], f"{what}: experts", (t, k), dtype=np.int64)
        if ((experts < 0) | (experts >= logits.shape[-1])).any() or any(
            len(set(row)) != k for row in experts.tolist()
        ):
            raise ExerciseError(ex, f"{what}: experts must be k different indices in 0 .. "
                                f"{logits.shape[-1] - 1} per token, got {experts.tolist()}.")  # fmt: skip
        dense = _by_expert(weights, experts, logits.shape[-1])
        # a float32 answer saw the logits rounded to float32 (at 1000 that moves a weight by
        # ~1e-5): it is held to the routing of those rounded logits, at float32's precision
        single = _single_precision(got[0])
        seen = logits.astype(np.float32).astype(np.float64) if single else logits
        expected = _reference_routing(seen, k, normalize)
        tol = {"rtol": 2e-5, "atol": 2e-6} if single else {"rtol": 1e-5, "atol": 1e-7}
        if np.allclose(dense, expected, **tol):
            continue
        if not np.isfinite(weights).all():
            raise ExerciseError(ex, f"{what}: your weights contain nan or inf.",
                                "subtract each row's maximum before np.exp (the stable softmax "
                                "of lecture 01).")  # fmt: skip
        hint = _first_match(dense, _routing_mistakes(seen, k, normalize),
                            lambda a, b, tol=tol: np.allclose(a, b, **tol))  # fmt: skip
        check_array(ex, dense.astype(np.float32) if single else dense, expected,
                    what=f"{what} (weights by expert, 0 = not chosen)",
                    hint=hint or "p = softmax(logits) per token; keep the k largest p; with "
                    "normalize divide them by their sum.")  # fmt: skip
    passed(ex, "top-k routing")


# --- 16.2 ----------------------------------------------------------------------------------


def _reference_balance(logits: np.ndarray, k: int) -> float:
    from ..nn.moe import load_balancing_loss

    torch = _torch()
    return float(load_balancing_loss(torch.as_tensor(logits, dtype=torch.float64), k))


def _balance_mistakes(logits: np.ndarray, k: int):
    t, e = logits.shape
    p = _softmax(logits)
    chosen = np.zeros_like(p)
    np.put_along_axis(chosen, np.argsort(-p, axis=-1)[:, :k], 1.0, axis=1)
    top1 = np.zeros_like(p)
    np.put_along_axis(top1, p.argmax(-1)[:, None], 1.0, axis=1)
    f, big_p = chosen.mean(0), p.mean(0)
    return [
        (e * np.sum(f / k * big_p), "f_e is the fraction of TOKENS that have e among their "
                                    "top-k (the f_e sum to k), not of the k*T slots."),
        (np.sum(f * big_p), "multiply by the number of experts E: a uniform router then "
                            "gives k."),
        (e * np.sum(top1.mean(0) * big_p), "count every expert of a token's top k, not only "
                                           "its first choice."),
        (e * np.sum(f * (p * chosen).mean(0)), "P_e is the mean router probability over ALL "
                                               "tokens, not only those routed to e."),
        (e * np.sum(f * _softmax(logits, axis=0).mean(0)), "the router probabilities are a "
                                                           "softmax over the experts of each "
                                                           "token (last axis)."),
    ]  # fmt: skip


def check_balance_loss(student_fn, *, seed: int = 0) -> None:
    """Exercise 16.2: ``balance_loss(logits (T, E), k) -> float``, Switch Transformer's loss."""
    ex = "16.2"
    rng = hidden_rng(seed, 162)
    collapsed = np.tile([[6.0, 0.0, 0.0, 0.0]], (8, 1))
    cases = [
        ("8 tokens all preferring expert 0 (4 experts, k = 1)", collapsed, 1),
        ("random logits (10 tokens, 4 experts), k = 1", rng.normal(size=(10, 4)) * 2, 1),
        ("random logits (12 tokens, 8 experts), k = 2", rng.normal(size=(12, 8)) * 2, 2),
        ("random logits (7 tokens, 6 experts), k = 3", rng.normal(size=(7, 6)), 3),
    ]
    for what, logits, k in cases:
        got = call_student(ex, student_fn, logits.copy(), k)
        try:
            got = float(got)
        except (TypeError, ValueError):
            raise ExerciseError(ex, f"{what}: expected a number, got {type(got).__name__}.",
                                "return a Python float (float(loss)).") from None  # fmt: skip
        expected = _reference_balance(logits, k)
        if np.isclose(got, expected, rtol=1e-6, atol=1e-9):
            continue
        hint = _first_match(got, _balance_mistakes(logits, k),
                            lambda a, b: np.isclose(a, b, rtol=1e-6, atol=1e-9))  # fmt: skip
        raise ExerciseError(ex, f"{what}: expected {expected:.6f}, got {got:.6f}.",
                            hint or "E * sum_e f_e * P_e with f_e = fraction of tokens with e in "
                            "their top k, P_e = mean softmax probability of e.")  # fmt: skip
    passed(ex, "the load-balancing loss")


# --- 16.3 ----------------------------------------------------------------------------------


def _reference_window(start: int, n_new: int, window: int, n_keys: int) -> np.ndarray:
    from ..nn.attention import sliding_window_mask

    return sliding_window_mask(start, n_new, window, n_keys).numpy()


def _window_by_positions(start, n_new, n_keys, rule) -> np.ndarray:
    i = np.arange(start, start + n_new)[:, None]
    j = np.arange(start + n_new - n_keys, start + n_new)[None, :]
    return rule(i, j)


def check_window_mask(student_fn, *, seed: int = 0) -> None:
    """Exercise 16.3: ``window_mask(start, n_new, window, n_keys) -> bool (n_new, n_keys)``."""
    ex = "16.3"
    rng = hidden_rng(seed, 163)
    cases = [
        ("a prompt of 7 tokens, window 2 (start 0, all 7 keys)", 0, 7, 2, 7),
        ("one new token at position 9, a ring buffer of 4 kept keys + itself, window 4",
         9, 1, 4, 5),
        ("3 new tokens at positions 5..7 after a ring buffer of 4, window 4", 5, 3, 4, 7),
        ("window 1: each token sees only itself", 2, 4, 1, 6),
        ("a window longer than the text: plain causal", 0, 5, 50, 5),
    ]  # fmt: skip
    for _ in range(2):
        w = int(rng.integers(2, 7))
        start, n_new = int(rng.integers(0, 12)), int(rng.integers(1, 6))
        kept = min(start, w)
        cases.append((f"hidden: start {start}, {n_new} new, window {w}, {kept} kept keys",
                      start, n_new, w, kept + n_new))  # fmt: skip
    for what, start, n_new, window, n_keys in cases:
        got = call_student(ex, student_fn, start, n_new, window, n_keys)
        arr = answer_array(ex, got, what, (n_new, n_keys), dtype=object)
        if not all(isinstance(v, (bool, np.bool_)) for v in arr.flat):
            raise ExerciseError(ex, f"{what}: expected a boolean array (True = may attend).",
                                "build it from comparisons, e.g. (j <= i) & (...)")  # fmt: skip
        arr = arr.astype(bool)
        expected = _reference_window(start, n_new, window, n_keys)
        if np.array_equal(arr, expected):
            continue
        mistakes = [
            (_window_by_positions(start, n_new, n_keys, lambda i, j, w=window: (j <= i) & (i - j <= w)),
             "the window counts the query itself: key j is seen when i - j < window (window "
             "positions in all), not <= window."),
            (_window_by_positions(start, n_new, n_keys, lambda i, j, w=window: abs(i - j) < w),
             "a sliding window is still causal: also require j <= i."),
            (_window_by_positions(start, n_new, n_keys, lambda i, j: j <= i),
             "keys older than window - 1 positions are masked too."),
            ((np.arange(n_keys)[None, :] <= np.arange(start, start + n_new)[:, None])
             & (np.arange(start, start + n_new)[:, None] - np.arange(n_keys)[None, :] < window),
             "the n_keys keys are the LAST positions start + n_new - n_keys .. start + n_new - 1 "
             "(the ring buffer hands over only the kept ones), not 0 .. n_keys - 1."),
        ]  # fmt: skip
        hint = _first_match(arr, mistakes, np.array_equal)
        raise ExerciseError(
            ex,
            f"{what}: expected\n{expected.astype(int)}\ngot\n{arr.astype(int)}",
            hint
            or "query i = start + a sees key j when j <= i and i - j < window; the keys are "
            "positions start + n_new - n_keys .. start + n_new - 1.",
        )
    passed(ex, "the sliding-window mask over a ring buffer")


# --- 16.4 ----------------------------------------------------------------------------------

_DEEPSEEK_V3 = {"num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
                "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
                "qk_rope_head_dim": 64, "v_head_dim": 128}  # fmt: skip


def _hidden_configs(seed: int) -> list[dict]:
    if seed == 0:
        return [_DEEPSEEK_V3]
    rng = hidden_rng(seed, 164)
    heads = int(rng.choice([8, 16, 32]))
    nope, rope, v = int(rng.choice([32, 64])), int(rng.choice([16, 32])), int(rng.choice([32, 64]))
    return [{"num_hidden_layers": int(rng.integers(4, 40)), "hidden_size": heads * 64,
             "num_attention_heads": heads, "kv_lora_rank": int(rng.choice([64, 128, 256])),
             "q_lora_rank": None, "qk_nope_head_dim": nope, "qk_rope_head_dim": rope,
             "v_head_dim": v}]  # fmt: skip


def _reference_mla_bytes(c: dict, seq_len: int, batch: int, bytes_per_value: int) -> int:
    from ..models.modern import kv_cache_bytes_for

    mla = MLAConfig(c["kv_lora_rank"], c["qk_nope_head_dim"], c["qk_rope_head_dim"],
                    c["v_head_dim"], c["q_lora_rank"])  # fmt: skip
    config = ModernConfig(vocab_size=2, d_model=c["hidden_size"], num_heads=c["num_attention_heads"],
                          num_kv_heads=c["num_attention_heads"],
                          num_layers=c["num_hidden_layers"], d_ff=1, mla=mla)  # fmt: skip
    return kv_cache_bytes_for(config, seq_len, batch, bytes_per_value)


def check_mla_cache(student_fn, *, seed: int = 0) -> None:
    """Exercise 16.4: ``mla_cache_bytes(config, seq_len, batch, bytes_per_value) -> int`` for a
    ``config`` dict with ``transformers``' DeepSeek-V3 names (the check hides other configs)."""
    ex = "16.4"
    rng = hidden_rng(seed, 1640)
    for c in _hidden_configs(seed):
        for seq_len, batch, bpv in ((4096, 2, 2), (int(rng.integers(100, 5000)), int(rng.integers(1, 5)), 2),
                                    (int(rng.integers(10, 300)), 1, 4)):  # fmt: skip
            got = call_student(ex, student_fn, dict(c), seq_len, batch, bpv)
            what = (f"{c['num_hidden_layers']} layers, kv_lora_rank {c['kv_lora_rank']}, "
                    f"qk_rope_head_dim {c['qk_rope_head_dim']}, {c['num_attention_heads']} heads; "
                    f"{seq_len} tokens, batch {batch}, {bpv} bytes a value")  # fmt: skip
            if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
                raise ExerciseError(ex, f"{what}: expected an integer number of bytes, got "
                                    f"{type(got).__name__} {got!r:.60}.", "return an int.")  # fmt: skip
            expected = _reference_mla_bytes(c, seq_len, batch, bpv)
            if got == expected:
                continue
            layers, r, dr = c["num_hidden_layers"], c["kv_lora_rank"], c["qk_rope_head_dim"]
            h, dn, dv = c["num_attention_heads"], c["qk_nope_head_dim"], c["v_head_dim"]
            per = seq_len * batch * bpv * layers
            mistakes = [
                (per * r, "the cache also holds the decoupled RoPE key: kv_lora_rank + "
                          "qk_rope_head_dim numbers per token and layer."),
                (per * (r + dr) * h, "the latent and the RoPE key are shared by ALL heads: one "
                                     "copy per token and layer, not one per head."),
                (per * 2 * (r + dr), "one latent stands for both keys and values: do not count "
                                     "it twice."),
                (per * h * (2 * dn + dr + dv), "that is the cache of the keys and values MLA "
                                               "expands to (multi-head attention); MLA caches "
                                               "only the latent and the RoPE key."),
                (per * (r + dr) * 8, "bytes, not bits."),
                (per * (r + dr) // layers, "every layer has its own cache."),
            ]  # fmt: skip
            hint = next((hh for value, hh in mistakes if value == got), None)
            raise ExerciseError(ex, f"{what}: expected {expected:,} bytes, got {int(got):,}.",
                                hint or "per token and layer MLA caches kv_lora_rank + "
                                "qk_rope_head_dim values.")  # fmt: skip
    passed(ex, "the MLA cache, in bytes")
