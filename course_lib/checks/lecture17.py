"""Checks for the exercises of lecture 17 (group-relative advantages, the clipped loss of one
token, the k3 KL estimate, pass@k from samples).

Each check compares the student's answer with the course library on fixed cases and on random
inputs drawn from its keyword-only ``seed``; when the answer is wrong it tries the usual mistakes
on the same input and names the one that matches.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..models.rl import group_advantages, kl_k3, pass_at_k
from . import ExerciseError, call_student, check_mistakes, hidden_rng, passed

__all__ = ["check_group_advantages", "check_clipped_token_loss", "check_kl_k3", "check_pass_at_k"]

# The course_lib functions that compute each exercise's answer: an answer that calls one is
# flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "17.1": ("course_lib.models.rl.group_advantages",),
    "17.2": ("course_lib.models.rl.grpo_loss",),
    "17.3": ("course_lib.models.rl.kl_k3",),
    "17.4": ("course_lib.models.rl.pass_at_k",),
}

EPS = 1e-4


def _numbers(got):
    if isinstance(got, torch.Tensor):  # keeps float32 (then checked to float32's precision)
        return got.detach().cpu().numpy()
    return got


# --- 17.1 ----------------------------------------------------------------------------------


def check_group_advantages(student_fn, *, seed: int = 0) -> None:
    """Exercise 17.1: ``advantages(rewards, group_size)``, GRPO's group-relative advantages."""
    ex = "17.1"
    rng = hidden_rng(seed, 171)
    g = int(rng.integers(3, 7))
    cases = [
        ("two prompts, four completions each (0/1 rewards)",
         np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]), 4),
        ("a group whose rewards are all equal (no signal: advantage 0, not nan)",
         np.array([0.0, 1.0, 1.0, 0.0, 0.0, 0.0]), 3),
        (f"five prompts, {g} completions each (random real rewards)",
         np.round(rng.normal(size=5 * g), 3), g),
        ("three prompts, two completions each", np.array([2.0, 0.5, 1.0, 1.0, -1.0, 3.0]), 2),
    ]  # fmt: skip
    for what, rewards, size in cases:
        got = _numbers(call_student(ex, student_fn, rewards.copy(), size))
        expected = group_advantages(torch.tensor(rewards), size).numpy()
        grouped = rewards.reshape(-1, size)
        mean = grouped.mean(axis=1, keepdims=True)
        std = grouped.std(axis=1, ddof=1, keepdims=True)
        with np.errstate(all="ignore"):
            interleaved = rewards.reshape(size, -1)
            mistakes = {
                "the standard deviation of a group is Bessel-corrected (divide by G - 1, "
                "np.std(..., ddof=1), torch.std's default), as TRL computes it.":
                    ((grouped - mean) / (grouped.std(axis=1, keepdims=True) + EPS)).ravel(),
                "the baseline is the mean of the prompt's OWN group, not of the whole batch.":
                    ((rewards - rewards.mean()) / (rewards.std(ddof=1) + EPS)),
                "scale by the group's std: dividing by the whole batch's std is TRL's "
                "scale_rewards='batch', not GRPO's default.":
                    ((grouped - mean) / (rewards.std(ddof=1) + EPS)).ravel(),
                "add the small constant 1e-4 to the std before dividing: a group whose "
                "rewards are all equal has std 0 (its advantage must be 0, not nan).":
                    ((grouped - mean) / std).ravel(),
                "subtract the group's mean first: an advantage says how much better than the "
                "group a completion did.": (grouped / (std + EPS)).ravel(),
                "the G completions of one prompt are CONSECUTIVE (rows p*G to p*G+G-1): "
                "reshape to (-1, group_size), not (group_size, -1).":
                    ((interleaved - interleaved.mean(axis=0)) /
                     (interleaved.std(axis=0, ddof=1) + EPS)).ravel(),
                "that is Dr. GRPO's advantage (no division); the exercise asks for GRPO's.":
                    (grouped - mean).ravel(),
            }  # fmt: skip
        check_mistakes(ex, got, expected, what=what, mistakes=mistakes, rtol=1e-6, atol=1e-7,
                       hint="per group of group_size consecutive rewards: "
                            "(r - mean) / (std + 1e-4), std with ddof=1.")  # fmt: skip
    passed(ex, "group-relative advantages")


# --- 17.2 ----------------------------------------------------------------------------------


def _clip_reference(logp, old_logp, advantage, eps):
    ratio = math.exp(logp - old_logp)
    return -min(ratio * advantage, min(max(ratio, 1 - eps), 1 + eps) * advantage)


def _close(got, value) -> bool:
    try:
        return bool(np.allclose(np.asarray(got, dtype=float), value, rtol=1e-6, atol=1e-9))
    except (TypeError, ValueError):
        return False


def check_clipped_token_loss(student_fn, *, seed: int = 0) -> None:
    """Exercise 17.2: ``clipped_token_loss(logp, old_logp, advantage, eps)`` of one token."""
    ex = "17.2"
    rng = hidden_rng(seed, 172)
    cases = [
        ("ratio 1 (the policy has not moved), advantage +1", -1.0, -1.0, 1.0, 0.2),
        ("ratio e^0.5 = 1.65 > 1.2, positive advantage (clipped)", -0.5, -1.0, 2.0, 0.2),
        ("ratio e^0.5 = 1.65, NEGATIVE advantage (not clipped: the loss stays pessimistic)",
         -0.5, -1.0, -2.0, 0.2),
        ("ratio e^-0.5 = 0.61 < 0.8, negative advantage (clipped)", -1.5, -1.0, -1.5, 0.2),
        ("ratio e^-0.5 = 0.61, positive advantage (not clipped)", -1.5, -1.0, 1.5, 0.3),
    ]  # fmt: skip
    for _ in range(4):
        old = float(rng.uniform(-3, -0.1))
        cases.append(("random token", old + float(rng.normal(0, 0.4)), old,
                      float(rng.normal()), float(rng.choice([0.1, 0.2, 0.28]))))  # fmt: skip
    rows = []  # (what, got, expected, {hint: the mistake's value})
    for what, logp, old, adv, eps in cases:
        got = _numbers(call_student(ex, student_fn, logp, old, adv, eps))
        if isinstance(got, np.ndarray) and got.size == 1:
            got = got.reshape(())
        ratio = math.exp(logp - old)
        clipped = min(max(ratio, 1 - eps), 1 + eps)
        mistakes = {
            "the LOSS is minus the surrogate objective: -min(ratio * A, clip(ratio) * A).":
                min(ratio * adv, clipped * adv),
            "keep the unclipped term too: -min(ratio * A, clip(ratio) * A); the clip alone "
            "would also clip where it makes the loss smaller.": -clipped * adv,
            "that is the unclipped loss -ratio * A; clip the ratio to [1 - eps, 1 + eps].":
                -ratio * adv,
            "take the MIN of the two terms (the pessimistic one), not the max.":
                -max(ratio * adv, clipped * adv),
            "the ratio is exp(logp - old_logp): a ratio of probabilities from log-probabilities.":
                _clip_reference(math.log(abs(logp / old)), 0.0, adv, eps),
            "the ratio is pi / pi_old = exp(logp - old_logp), not its inverse.":
                _clip_reference(old, logp, adv, eps),
        }  # fmt: skip
        where = f"{what} (logp={logp:.3f}, old_logp={old:.3f}, A={adv:.3f}, eps={eps})"
        rows.append((where, got, _clip_reference(logp, old, adv, eps), mistakes))
    # on one token several mistakes can give the same number: name the one that fits every case
    fits_all = [h for h in rows[0][3] if all(_close(got, m[h]) for _, got, _, m in rows)]
    for where, got, expected, mistakes in rows:
        named = {fits_all[0]: mistakes[fits_all[0]]} if fits_all else mistakes
        check_mistakes(ex, got, expected, what=where, mistakes=named, rtol=1e-6, atol=1e-9,
                       hint="ratio = exp(logp - old_logp); loss = -min(ratio * A, "
                            "clip(ratio, 1 - eps, 1 + eps) * A).")  # fmt: skip
    passed(ex, "the clipped loss of one token")


# --- 17.3 ----------------------------------------------------------------------------------


def check_kl_k3(student_fn, *, seed: int = 0) -> None:
    """Exercise 17.3: ``kl_k3(logp, ref_logp)``, the k3 estimate per token (arrays)."""
    ex = "17.3"
    rng = hidden_rng(seed, 173)
    logp = np.log(rng.dirichlet(np.ones(6), size=3))  # (3, 6)
    cases = [
        ("p = 0.5, p_ref = 0.25", np.array([math.log(0.5)]), np.array([math.log(0.25)])),
        ("the policy equals the reference (KL 0)", logp[0].copy(), logp[0].copy()),
        ("random (3, 6) log-probabilities", logp, np.log(rng.dirichlet(np.ones(6), size=3))),
    ]
    for what, lp, ref in cases:
        got = _numbers(call_student(ex, student_fn, lp.copy(), ref.copy()))
        flat = [torch.tensor(v).reshape(1, -1) for v in (lp, ref)]  # kl_k3 takes (B, T)
        expected = kl_k3(*flat).numpy().reshape(lp.shape)
        d = ref - lp  # log(p_ref / p)
        mistakes = {
            "k3 uses log(p_ref / p) = ref_logp - logp; with the arguments swapped it "
            "estimates the other KL.": np.exp(-d) + d - 1,
            "that is k1 = log(p / p_ref), unbiased but often negative; k3 is "
            "exp(d) - d - 1 with d = ref_logp - logp.": -d,
            "that is k2 = (log(p / p_ref))^2 / 2; k3 is exp(d) - d - 1.": d**2 / 2,
            "k3 = exp(d) - d - 1: the -1 makes it 0 where the two agree.": np.exp(d) - d,
            "exp(d) - d - 1 with d = ref_logp - logp (minus d, not plus).": np.exp(d) + d - 1,
        }
        check_mistakes(ex, got, expected, what=what, mistakes=mistakes, rtol=1e-6, atol=1e-9,
                       hint="d = ref_logp - logp per token; kl = exp(d) - d - 1.")  # fmt: skip
    passed(ex, "the k3 KL estimate")


# --- 17.4 ----------------------------------------------------------------------------------


def check_pass_at_k(student_fn, *, seed: int = 0) -> None:
    """Exercise 17.4: ``pass_at_k(samples, k)``: from one prompt's 0/1 outcomes of ``n``
    samples, the unbiased estimate of the chance that at least one of ``k`` is right."""
    ex = "17.4"
    rng = hidden_rng(seed, 174)
    n = int(rng.integers(10, 17))
    c = int(rng.integers(1, n - 3))
    random_samples = rng.permutation([1] * c + [0] * (n - c))
    cases = [
        ("8 samples, 3 right, k = 1", [1, 0, 0, 1, 0, 0, 0, 1], 1),
        ("8 samples, 3 right, k = 4", [1, 0, 0, 1, 0, 0, 0, 1], 4),
        ("8 samples, none right, k = 8", [0] * 8, 8),
        ("6 samples, 5 right, k = 2 (every pair holds a right one)", [1, 1, 0, 1, 1, 1], 2),
        (f"{n} random samples, {c} right, k = 5", [int(v) for v in random_samples], 5),
    ]
    for what, samples, k in cases:
        got = _numbers(call_student(ex, student_fn, list(samples), k))
        n_, c_ = len(samples), sum(samples)
        expected = pass_at_k(n_, c_, k)
        p = c_ / n_
        mistakes = {
            "1 - (1 - c/n)^k draws WITH replacement (biased low); pass@k draws k of the n "
            "samples without replacement: 1 - C(n - c, k) / C(n, k).": 1 - (1 - p) ** k,
            "c / n is pass@1 only; for k > 1 count the k-subsets holding at least one right "
            "sample.": p,
            "k * c / n over-counts (it can exceed 1); use 1 - C(n - c, k) / C(n, k).":
                k * p,
            "look at all the n samples, not only the first k: the estimate averages over every "
            "k-subset.": float(any(samples[:k])),
            "1 - C(n - c, k) / C(n, k): the fraction of k-subsets with NO right sample is "
            "C(n - c, k) / C(n, k), not C(c, k) / C(n, k).":
                1 - math.comb(c_, k) / math.comb(n_, k),
        }  # fmt: skip
        if isinstance(got, np.ndarray) and got.size == 1:
            got = float(got.reshape(()))
        if not isinstance(got, int | float | np.floating | np.integer) or isinstance(got, bool):
            raise ExerciseError(ex, f"{what}: expected a number, got {type(got).__name__}.",
                                "return one float between 0 and 1.")  # fmt: skip
        check_mistakes(ex, float(got), expected, what=what, mistakes=mistakes, rtol=1e-9,
                       atol=1e-12, hint="pass@k = 1 - C(n - c, k) / C(n, k) (math.comb).")  # fmt: skip
    passed(ex, "pass@k from samples")
