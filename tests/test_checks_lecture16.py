"""Lecture 16 checks: right answers (written independently of course_lib, two ways where it
matters) pass on every hidden seed; the usual mistakes get their hint; the stub fails."""

import numpy as np
import pytest
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture16 import (
    check_balance_loss,
    check_mla_cache,
    check_top_k_routing,
    check_window_mask,
)

SEEDS = [0, 1, 2, 7]

# --- right answers ---------------------------------------------------------------------------


def route(logits, k, normalize):
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p = z / z.sum(axis=-1, keepdims=True)
    experts = np.argsort(-p, axis=-1)[:, :k]
    weights = np.take_along_axis(p, experts, axis=1)
    if normalize:
        weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights, experts


def route_float32_unsorted(logits, k, normalize):
    # another order of the k experts, in float32, renormalised through a softmax of the top logits
    logits = logits.astype(np.float32)
    experts = np.argpartition(-logits, k - 1, axis=-1)[:, :k]
    top = np.take_along_axis(logits, experts, axis=1)
    if normalize:
        z = np.exp(top - top.max(-1, keepdims=True))
        return z / z.sum(-1, keepdims=True), experts
    z = np.exp(logits - logits.max(-1, keepdims=True))
    return np.take_along_axis(z / z.sum(-1, keepdims=True), experts, axis=1), experts


def balance(logits, k):
    t, e = logits.shape
    z = np.exp(logits - logits.max(-1, keepdims=True))
    p = z / z.sum(-1, keepdims=True)
    counts = np.zeros(e)
    for row in np.argsort(-p, axis=-1)[:, :k]:
        counts[row] += 1
    return float(e * np.sum(counts / t * p.mean(0)))


def window_mask(start, n_new, window, n_keys):
    i = np.arange(start, start + n_new)[:, None]
    j = np.arange(start + n_new - n_keys, start + n_new)[None, :]
    return (j <= i) & (i - j < window)


def window_mask_loops(start, n_new, window, n_keys):
    first = start + n_new - n_keys
    return np.array([[first + b <= start + a and start + a - (first + b) < window
                      for b in range(n_keys)] for a in range(n_new)])  # fmt: skip


def mla_cache_bytes(config, seq_len, batch, bytes_per_value):
    per_token = config["kv_lora_rank"] + config["qk_rope_head_dim"]
    return config["num_hidden_layers"] * per_token * seq_len * batch * bytes_per_value


# --- they pass ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (check_top_k_routing, route),
        (check_top_k_routing, route_float32_unsorted),
        (check_balance_loss, balance),
        (check_window_mask, window_mask),
        (check_window_mask, window_mask_loops),
        (check_mla_cache, mla_cache_bytes),
    ],
)
def test_right_answers_pass_on_every_seed(check, answer, seed, capsys):
    check(answer, seed=seed)
    assert "passed" in capsys.readouterr().out.lower()


@pytest.mark.parametrize(
    "check", [check_top_k_routing, check_balance_loss, check_window_mask, check_mla_cache]
)
def test_the_stub_fails(check):
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check(_stub)


# --- the usual mistakes get their hint -------------------------------------------------------


def _fails(check, answer, hint, seed=0):
    with pytest.raises(ExerciseError) as info:
        check(answer, seed=seed)
    assert hint in str(info.value), str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the naive softmax overflows, on purpose
def test_routing_mistakes():
    _fails(check_top_k_routing, lambda x, k, n: route(x, k, not n), "renormalise only when")

    def smallest(x, k, n):
        z = np.exp(x - x.max(axis=-1, keepdims=True))
        p = z / z.sum(axis=-1, keepdims=True)
        e = np.argsort(p, axis=-1)[:, :k]
        return np.take_along_axis(p, e, axis=1), e

    _fails(check_top_k_routing, smallest, "k LARGEST")

    def naive(x, k, n):
        p = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
        e = np.argsort(-p, axis=-1)[:, :k]
        w = np.take_along_axis(p, e, axis=1)
        return (w / w.sum(-1, keepdims=True) if n else w), e

    _fails(check_top_k_routing, naive, "subtract each row's maximum")

    def sigmoid(x, k, n):
        s = 1 / (1 + np.exp(-x))
        e = np.argsort(-s, axis=-1)[:, :k]
        w = np.take_along_axis(s, e, axis=1)
        return (w / w.sum(-1, keepdims=True) if n else w), e

    _fails(check_top_k_routing, sigmoid, "SOFTMAX over the experts")


def test_balance_mistakes():
    _fails(check_balance_loss, lambda x, k: balance(x, k) / k, "not of the k*T slots", seed=3)
    _fails(check_balance_loss, lambda x, k: balance(x, k) / x.shape[1], "multiply by the number")


def test_window_mistakes():
    def off_by_one(s, n, w, nk):
        return window_mask(s, n, w + 1, nk)

    def from_zero(s, n, w, nk):
        i = np.arange(s, s + n)[:, None]
        j = np.arange(nk)[None, :]
        return (j <= i) & (i - j < w)

    def not_causal(s, n, w, nk):
        i = np.arange(s, s + n)[:, None]
        j = np.arange(s + n - nk, s + n)[None, :]
        return abs(i - j) < w

    _fails(check_window_mask, off_by_one, "not <= window")
    _fails(check_window_mask, from_zero, "LAST positions")
    _fails(check_window_mask, not_causal, "still causal")
    _fails(check_window_mask, lambda s, n, w, nk: window_mask(s, n, w, nk).astype(int),
           "boolean array")  # fmt: skip


def test_mla_mistakes():
    def latent_only(c, n, b, bpv):
        return c["num_hidden_layers"] * c["kv_lora_rank"] * n * b * bpv

    def per_head(c, n, b, bpv):
        return mla_cache_bytes(c, n, b, bpv) * c["num_attention_heads"]

    _fails(check_mla_cache, latent_only, "decoupled RoPE key")
    _fails(check_mla_cache, per_head, "shared by ALL heads")
    _fails(check_mla_cache, lambda c, n, b, bpv: 2 * mla_cache_bytes(c, n, b, bpv),
           "do not count it twice", seed=5)  # fmt: skip
    _fails(check_mla_cache, lambda c, n, b, bpv: float(mla_cache_bytes(c, n, b, bpv)),
           "expected an integer")  # fmt: skip


def test_hidden_seeds_give_other_inputs():
    # a formula with the visible numbers (DeepSeek-V3's 61 layers and 576 values) fails elsewhere
    def deepseek_only(c, n, b, bpv):
        return 61 * 576 * n * b * bpv

    check_mla_cache(deepseek_only, seed=0)
    with pytest.raises(ExerciseError):
        check_mla_cache(deepseek_only, seed=1)
