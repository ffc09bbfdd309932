"""Lecture 17 checks: right answers (two ways each) pass; realistic mistakes get their hint; the
stub fails; hidden seeds give the same verdicts."""

import itertools
import math

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture17 import (
    check_clipped_token_loss,
    check_group_advantages,
    check_kl_k3,
    check_pass_at_k,
)

# --- right answers, written independently of course_lib ------------------------------------


def advantages_numpy(rewards, group_size):
    g = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    mean = g.mean(axis=1, keepdims=True)
    return ((g - mean) / (g.std(axis=1, ddof=1, keepdims=True) + 1e-4)).ravel()


def advantages_loop(rewards, group_size):
    out = []
    for start in range(0, len(rewards), group_size):
        group = [float(r) for r in rewards[start : start + group_size]]
        mean = sum(group) / len(group)
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / (len(group) - 1))
        out += [(r - mean) / (std + 1e-4) for r in group]
    return out


def clip_math(logp, old_logp, advantage, eps):
    ratio = math.exp(logp - old_logp)
    return -min(ratio * advantage, max(1 - eps, min(ratio, 1 + eps)) * advantage)


def clip_torch_float32(logp, old_logp, advantage, eps):
    ratio = torch.exp(torch.tensor(logp - old_logp, dtype=torch.float32))
    a = torch.tensor(advantage, dtype=torch.float32)
    return -torch.minimum(ratio * a, torch.clamp(ratio, 1 - eps, 1 + eps) * a)


def k3_numpy(logp, ref_logp):
    d = ref_logp - logp
    return np.exp(d) - d - 1


def k3_ratio(logp, ref_logp):
    r = np.exp(ref_logp) / np.exp(logp)
    return r - np.log(r) - 1


def pass_comb(samples, k):
    n, c = len(samples), sum(samples)
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def pass_enumerate(samples, k):
    subsets = list(itertools.combinations(samples, k))
    return sum(any(s) for s in subsets) / len(subsets)


RIGHT = [
    (check_group_advantages, advantages_numpy, advantages_loop, "17.1 passed"),
    (check_clipped_token_loss, clip_math, clip_torch_float32, "17.2 passed"),
    (check_kl_k3, k3_numpy, k3_ratio, "17.3 passed"),
    (check_pass_at_k, pass_comb, pass_enumerate, "17.4 passed"),
]


@pytest.mark.parametrize(
    "check,first,second,message", RIGHT, ids=lambda v: getattr(v, "__name__", "")
)
def test_right_answers_pass_for_several_seeds(check, first, second, message, capsys):
    for seed in (0, 1, 7, 12345):
        check(first, seed=seed)
        check(second, seed=seed)
    assert capsys.readouterr().out.count(message) == 8


def _population_std(rewards, group_size):
    g = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    return ((g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + 1e-4)).ravel()


def _no_eps(rewards, group_size):
    g = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    return ((g - g.mean(1, keepdims=True)) / g.std(1, ddof=1, keepdims=True)).ravel()


def _batch_mean(rewards, group_size):
    r = np.asarray(rewards, dtype=float)
    return (r - r.mean()) / (r.std(ddof=1) + 1e-4)


def _interleaved(rewards, group_size):
    g = np.asarray(rewards, dtype=float).reshape(group_size, -1)
    return ((g - g.mean(0)) / (g.std(0, ddof=1) + 1e-4)).ravel()


def _dr_grpo(rewards, group_size):
    g = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    return (g - g.mean(1, keepdims=True)).ravel()


def _objective(logp, old, a, eps):
    return -clip_math(logp, old, a, eps)


def _max(logp, old, a, eps):
    r = math.exp(logp - old)
    return -max(r * a, max(1 - eps, min(r, 1 + eps)) * a)


def _clip_only(logp, old, a, eps):
    r = math.exp(logp - old)
    return -max(1 - eps, min(r, 1 + eps)) * a


def _inverse_ratio(logp, old, a, eps):
    return clip_math(old, logp, a, eps)


WRONG = [
    (check_group_advantages, _population_std, "Bessel-corrected"),
    (check_group_advantages, _no_eps, "add the small constant 1e-4"),
    (check_group_advantages, _batch_mean, "the prompt's OWN group"),
    (check_group_advantages, _interleaved, "CONSECUTIVE"),
    (check_group_advantages, _dr_grpo, "Dr. GRPO"),
    (check_group_advantages, lambda r, g: None, "returned None"),
    (check_clipped_token_loss, _objective, "minus the surrogate"),
    (check_clipped_token_loss, _max, "take the MIN"),
    (check_clipped_token_loss, _clip_only, "keep the unclipped term"),
    (check_clipped_token_loss, lambda lp, o, a, e: -math.exp(lp - o) * a, "unclipped loss"),
    (check_clipped_token_loss, _inverse_ratio, "not its inverse"),
    (check_kl_k3, lambda lp, ref: k3_numpy(ref, lp), "arguments swapped"),
    (check_kl_k3, lambda lp, ref: lp - ref, "that is k1"),
    (check_kl_k3, lambda lp, ref: (lp - ref) ** 2 / 2, "that is k2"),
    (check_kl_k3, lambda lp, ref: np.exp(ref - lp) - (ref - lp), "the -1 makes it 0"),
    (check_pass_at_k, lambda s, k: 1 - (1 - sum(s) / len(s)) ** k, "WITH replacement"),
    (check_pass_at_k, lambda s, k: sum(s) / len(s), "pass@1 only"),
    (check_pass_at_k, lambda s, k: float(any(s[:k])), "not only the first k"),
    (check_pass_at_k, lambda s, k: [pass_comb(s, k)], "expected a number"),
]  # fmt: skip


@pytest.mark.parametrize("check,wrong,fragment", WRONG)
def test_mistakes_get_their_hint(check, wrong, fragment):
    for seed in (0, 3, 99):
        with pytest.raises(ExerciseError) as err:
            check(wrong, seed=seed)
        assert fragment in str(err.value)


@pytest.mark.parametrize("check", [c for c, *_ in RIGHT])
def test_stub_fails(check):
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check(_stub)
