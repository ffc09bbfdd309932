"""Lecture 17: learning from a reward, from REINFORCE to GRPO (Shao et al., 2024).

The model answers a prompt ``x`` with a completion ``y`` sampled from its own distribution
``pi(y | x)``; a program scores it, ``r(x, y)`` (here lecture 14's exact-match checker). The goal
is the **expected reward** ``J = E_{y ~ pi}[r(x, y)]``; its gradient is an expectation we can
sample (the log-derivative trick)::

    grad J = E_y[ r(x, y) * grad log pi(y | x) ]                        REINFORCE
           = E_y[ (r(x, y) - b(x)) * grad log pi(y | x) ]               any baseline b(x)

and ``log pi(y | x)`` is the sum of the completion's token log-probabilities (the response
mask of lecture 14 picks them). **GRPO** takes the baseline from a *group* of ``G``
completions of the same prompt: the advantage of completion ``i`` is ``(r_i - mean) / (std +
1e-4)`` (:func:`group_advantages`; Dr. GRPO drops the division). To take several gradient
steps on one batch of samples it weighs each token by the **ratio** ``pi / pi_old`` to the
policy that sampled it and **clips** that ratio to ``[1 - eps_low, 1 + eps_high]`` (PPO's
pessimistic surrogate), optionally with the k3 estimate of ``KL(pi || pi_ref)`` to a frozen
reference, weighted by ``beta`` (:func:`grpo_loss`).

The tests hold :func:`grpo_loss` (loss and gradient) and :func:`group_advantages` to TRL
1.16's ``GRPOTrainer`` to 1e-6. The pieces of one GRPO iteration: :func:`sample_group`
(``G`` completions per prompt with the course's :func:`~course_lib.generate`),
:func:`exact_match_rewards` / :func:`one_word_rewards` (a real reward and a format-only one),
:func:`group_advantages`, :func:`~course_lib.token_logprobs`, :func:`grpo_loss`.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from .._validation import (
    check_choice,
    check_flag,
    check_module,
    check_positive_int,
    check_str,
    check_type,
)
from ..data.chat import END_OF_TURN, render_chat
from ..tokenization import BPETokenizer
from ..training import train
from .assistant import token_logprobs
from .generation import generate

__all__ = [
    "sample_group",
    "exact_match_rewards",
    "one_word_rewards",
    "group_advantages",
    "reinforce_loss",
    "kl_k3",
    "grpo_loss",
    "clip_fraction",
    "pass_at_k",
    "GRPOLog",
    "grpo_train",
    "LOSS_TYPES",
    "SCALE_REWARDS",
]

STD_EPS = 1e-4  # added to the group's std (TRL's constant): all-equal rewards give advantage 0
LOSS_TYPES = ("grpo", "dr_grpo", "dapo")
SCALE_REWARDS = ("group", "batch", "none")


@torch.no_grad()
def sample_group(
    model: nn.Module,
    tokenizer: BPETokenizer,
    prompts: Sequence[str],
    group_size: int,
    max_new_tokens: int = 40,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """``group_size`` sampled completions of each user message: ``(ids, loss_mask, replies)``.

    Rows are in TRL's layout: the ``G`` completions of prompt ``p`` are rows ``p * G`` to
    ``p * G + G - 1``. ``ids (P * G, n)``: the rendered prompt (:func:`course_lib.render_chat`
    with the generation prompt), then the sampled tokens, right-padded with 0.
    ``loss_mask (P * G, n)`` bool: True on the sampled tokens up to and including the first
    ``<|end|>`` (what the assistant said, as lecture 14's loss mask), False on the prompt, on
    padding and on anything after ``<|end|>``. ``replies``: the decoded completions.
    """
    group_size, max_new_tokens = _check_sample_inputs(
        model, tokenizer, prompts, group_size, max_new_tokens
    )
    end = tokenizer.vocab[END_OF_TURN]
    rendered = [
        render_chat([{"role": "user", "content": p}], tokenizer, add_generation_prompt=True)[0]
        for p in prompts
    ]
    rows: list[list[int]] = []
    starts: list[int] = []  # where each row's completion starts
    for prompt_ids in rendered:
        batch = torch.tensor([prompt_ids] * group_size, dtype=torch.long)  # (G, n_prompt)
        out = generate(model, batch, max_new_tokens, temperature=temperature, eos_id=end,
                       generator=generator)  # fmt: skip
        for row in out.tolist():
            new = row[len(prompt_ids) :]
            new = new[: new.index(end) + 1] if end in new else new  # keep the first <|end|>
            rows.append(prompt_ids + new)
            starts.append(len(prompt_ids))
    n = max(len(r) for r in rows)
    ids = torch.zeros((len(rows), n), dtype=torch.long)  # (P * G, n), right-padded with 0
    loss_mask = torch.zeros((len(rows), n), dtype=torch.bool)
    replies = []
    for i, (row, start) in enumerate(zip(rows, starts, strict=True)):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        loss_mask[i, start : len(row)] = True
        replies.append(tokenizer.decode([t for t in row[start:] if t != end]).strip())
    return ids, loss_mask, replies


def _check_sample_inputs(model, tokenizer, prompts, group_size, max_new_tokens) -> tuple[int, int]:
    """sample_group's door (generate checks the rest)."""
    check_module(model)
    check_type(tokenizer, "tokenizer", BPETokenizer)
    if isinstance(prompts, str) or not isinstance(prompts, Sequence) or not prompts:
        raise TypeError(f"prompts must be a non-empty list of str, got {type(prompts).__name__}")
    for i, p in enumerate(prompts):
        check_str(p, f"prompts[{i}]")
    return (check_positive_int(group_size, "group_size"),
            check_positive_int(max_new_tokens, "max_new_tokens"))  # fmt: skip


def _check_replies(replies) -> list[str]:
    if isinstance(replies, str) or not isinstance(replies, Sequence):
        raise TypeError(f"replies must be a list of str, got {type(replies).__name__}")
    if not replies:
        raise ValueError("replies must hold at least one reply, got an empty list")
    return [check_str(r, f"replies[{i}]") for i, r in enumerate(replies)]


def exact_match_rewards(replies: Sequence[str], answers: Sequence[str]) -> torch.Tensor:
    """``(len(replies),)`` float: 1.0 where the reply is the answer (lecture 14's
    :func:`~course_lib.data.instructions.exact_match`: equal after stripping spaces), else 0."""
    replies = _check_replies(replies)
    if isinstance(answers, str) or not isinstance(answers, Sequence):
        raise TypeError(f"answers must be a list of str, got {type(answers).__name__}")
    if len(answers) != len(replies):
        raise ValueError(
            f"answers must hold one answer per reply ({len(replies)}), got {len(answers)}"
        )
    return torch.tensor(
        [float(r.strip() == check_str(a, f"answers[{i}]").strip())
         for i, (r, a) in enumerate(zip(replies, answers, strict=True))]
    )  # fmt: skip


def one_word_rewards(replies: Sequence[str]) -> torch.Tensor:
    """A **format-only** reward: 1.0 for a reply of exactly one word, else 0. It checks the
    form an answer to a one-answer family has, never whether it is right (lecture 17 trains on
    it to measure reward hacking)."""
    replies = _check_replies(replies)
    return torch.tensor([float(len(r.split()) == 1) for r in replies])


def group_advantages(
    rewards: torch.Tensor, group_size: int, scale_rewards: str = "group"
) -> torch.Tensor:
    """Group-relative advantages, TRL's layout and options: ``rewards (P * G,)`` -> ``(P * G,)``.

    The ``G = group_size`` completions of one prompt are consecutive. Each reward minus its
    group's mean; then divided by ``std + 1e-4`` where ``std`` is the group's standard
    deviation (``scale_rewards="group"``, GRPO), that of the whole batch (``"batch"``), or not
    divided (``"none"``: Dr. GRPO). Standard deviations are Bessel-corrected (``torch.std``).
    A group whose rewards are all equal gets advantage 0 (never NaN); a NaN reward gives NaN
    advantages in its group (TRL instead zeroes a completion no reward function could score).

    Raises:
        TypeError: rewards not a real tensor or list of numbers.
        ValueError: ``group_size < 2`` (a group of one is its own baseline: its advantage would
            always be 0), a length that is not a multiple of ``group_size``, an unknown
            ``scale_rewards``.
    """
    rewards = _check_advantage_inputs(rewards, group_size, scale_rewards)
    grouped = rewards.view(-1, group_size)  # (P, G): one row per prompt
    advantages = grouped - grouped.mean(dim=1, keepdim=True)  # r_i - mean of its group
    if scale_rewards == "group":
        advantages = advantages / (grouped.std(dim=1, keepdim=True) + STD_EPS)
    elif scale_rewards == "batch":
        advantages = advantages / (rewards.std() + STD_EPS)
    same = grouped.amax(dim=1, keepdim=True) == grouped.amin(dim=1, keepdim=True)  # (P, 1)
    advantages = advantages.masked_fill(same, 0.0)  # exactly 0 (a float mean can miss the last bit)
    return advantages.reshape(-1)  # (P * G,)


def _check_advantage_inputs(rewards, group_size, scale_rewards) -> torch.Tensor:
    """group_advantages' door: ``rewards`` as a floating 1-D tensor of whole groups."""
    if not isinstance(rewards, torch.Tensor):
        try:
            rewards = torch.tensor(rewards, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(
                f"rewards must be a 1-D tensor of numbers (P * G,), got {type(rewards).__name__}"
            ) from None
    if rewards.dtype == torch.bool or rewards.is_complex():
        raise TypeError(f"rewards must hold real numbers, got {rewards.dtype}")
    if not rewards.is_floating_point():
        rewards = rewards.double()
    if rewards.ndim != 1 or rewards.numel() == 0:
        raise ValueError(f"rewards must have shape (n_prompts * group_size,), got "
                         f"{tuple(rewards.shape)}")  # fmt: skip
    group_size = check_positive_int(group_size, "group_size")
    if group_size < 2:
        raise ValueError(
            "group_size must be >= 2: a group of one completion is its own baseline, so its "
            f"advantage is always 0 and nothing is learned; got {group_size}"
        )
    if rewards.numel() % group_size:
        raise ValueError(
            f"rewards must hold a whole number of groups: {rewards.numel()} rewards is not a "
            f"multiple of group_size={group_size}"
        )
    check_choice(scale_rewards, "scale_rewards", SCALE_REWARDS)
    return rewards


def _check_floats(x, name: str, shape: tuple[int, ...] | None, layout: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = f"{x.dtype} tensor" if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"{name} must be a floating torch.Tensor {layout}, got {got}")
    if shape is None:
        if x.ndim != 2:
            raise ValueError(f"{name} must have shape {layout}, got {tuple(x.shape)}")
    elif tuple(x.shape) != shape:
        raise ValueError(f"{name} must have shape {layout} = {shape}, got {tuple(x.shape)}")
    return x


def _check_mask(mask, shape: tuple[int, ...]) -> torch.Tensor:
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a bool torch.Tensor (B, T), got {type(mask).__name__}")
    if tuple(mask.shape) != shape:
        raise ValueError(
            f"mask must have the shape of logps (B, T) = {shape}, got {tuple(mask.shape)}"
        )
    if mask.dtype != torch.bool:
        if mask.is_complex() or not ((mask == 0) | (mask == 1)).all():
            raise ValueError(f"mask must be bool (or hold only 0 and 1), got {mask.dtype} values")
        mask = mask.bool()
    return mask


def _check_epsilon(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in (0, 1), got {type(value).__name__}")
    if not 0 < value < 1:
        raise ValueError(
            f"{name} must be in (0, 1): the ratio is clipped to [1 - epsilon_low, "
            f"1 + epsilon_high], got {value!r}"
        )
    return float(value)


def _check_loss_inputs(logps, old_logps, advantages, mask):
    """The shared door of :func:`grpo_loss`, :func:`clip_fraction` and :func:`reinforce_loss`."""
    _check_floats(logps, "logps", None, "(B, T)")
    shape = tuple(logps.shape)
    if old_logps is not None:
        _check_floats(old_logps, "old_logps", shape, "(B, T) like logps")
    _check_floats(advantages, "advantages", shape[:1], "(B,)")
    return _check_mask(mask, shape)


def reinforce_loss(
    logps: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """REINFORCE with a baseline: ``-mean_i (A_i * sum_t log pi(y_it))``, a scalar.

    ``logps (B, T)``: the log-probability of each sampled token under the policy (with its
    graph); ``advantages (B,)``: reward minus baseline, a constant; ``mask (B, T)``: True on
    the completion's tokens. Its gradient is the sampled estimate of ``-grad J``.
    """
    mask = _check_loss_inputs(logps, None, advantages, mask)
    sequence_logps = (logps * mask).sum(dim=1)  # (B,): log pi(y_i | x_i)
    return -(advantages.detach() * sequence_logps).mean()


def kl_k3(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """The k3 estimate of ``KL(pi || pi_ref)`` per sampled token (Schulman, 2020), ``(B, T)``:
    ``exp(ref - logp) - (ref - logp) - 1``. Never negative, 0 where the two agree, and its mean
    over tokens sampled from ``pi`` is an unbiased estimate of the KL."""
    _check_floats(logps, "logps", None, "(B, T)")
    _check_floats(ref_logps, "ref_logps", tuple(logps.shape), "(B, T) like logps")
    log_ratio = ref_logps - logps  # log(pi_ref / pi) per token
    return torch.exp(log_ratio) - log_ratio - 1


def _check_grpo_inputs(logps, old_logps, advantages, mask, epsilon_low, epsilon_high, beta,
                       ref_logps, loss_type, max_completion_length, use_bias_correction_kl):  # fmt: skip
    """grpo_loss's door: ``(mask as bool, L)``, L the dr_grpo denominator's length (or None)."""
    mask = _check_loss_inputs(logps, old_logps, advantages, mask)
    epsilon_low = _check_epsilon(epsilon_low, "epsilon_low")
    epsilon_high = _check_epsilon(epsilon_high, "epsilon_high")
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real):
        raise TypeError(f"beta must be a number >= 0, got {type(beta).__name__}")
    if not 0 <= beta < math.inf:
        raise ValueError(f"beta must be a finite number >= 0 (0 = no KL term), got {beta!r}")
    if beta > 0 and ref_logps is None:
        raise ValueError(f"ref_logps is needed when beta > 0 (the KL term), got None; beta={beta}")
    check_choice(loss_type, "loss_type", LOSS_TYPES)
    use_bias_correction_kl = check_flag(use_bias_correction_kl, "use_bias_correction_kl")
    B, T = logps.shape
    L = None
    if loss_type == "dr_grpo":
        L = T if max_completion_length is None else check_positive_int(
            max_completion_length, "max_completion_length")  # fmt: skip
        if B and L < int(mask.sum(dim=1).max()):
            raise ValueError(f"max_completion_length must be at least the longest completion "
                             f"({int(mask.sum(dim=1).max())} tokens), got {L}")  # fmt: skip
    return mask, L


def grpo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    epsilon_low: float = 0.2,
    epsilon_high: float = 0.2,
    beta: float = 0.0,
    ref_logps: torch.Tensor | None = None,
    loss_type: str = "dapo",
    *,
    max_completion_length: int | None = None,
    use_bias_correction_kl: bool = True,
) -> torch.Tensor:
    """The clipped GRPO loss that TRL 1.16's ``GRPOTrainer`` computes, a scalar.

    Per token: ``ratio = exp(logps - old_logps)``, ``-min(ratio * A, clip(ratio, 1 - eps_low,
    1 + eps_high) * A)``, plus ``beta * ratio * kl_k3(logps, ref_logps)`` when ``beta > 0``
    (TRL 1.16's default ``use_bias_correction_kl=True``: the k3 term weighted by the ratio, as
    DeepSeek-V3.2, so that its gradient is that of the reverse KL even off-policy; ``False``:
    ``beta * kl_k3``, the GRPO paper's term; the two have equal values on-policy, not equal
    gradients). Then summed over the tokens ``mask`` marks and divided by (``loss_type``):

    * ``"grpo"``: each completion's token count, then averaged over completions (long
      completions weigh less per token);
    * ``"dr_grpo"``: ``B * max_completion_length``, a constant (Dr. GRPO);
    * ``"dapo"`` (TRL's default): the batch's total token count (one process, one micro-batch:
      TRL's ``num_items_in_batch``).

    Args:
        logps: ``(B, T)`` log-probability of each completion token under the policy being
            trained (with its graph).
        old_logps: ``(B, T)`` the same under the policy that sampled the completions (no
            graph), or None: ``logps.detach()`` (one gradient step per sample: ratio 1).
        advantages: ``(B,)`` one per completion (:func:`group_advantages`).
        mask: ``(B, T)`` bool (or 0/1), True on completion tokens; masked positions must hold
            finite numbers (they are multiplied by 0, as in TRL).
        epsilon_low, epsilon_high: the clip range, each in (0, 1).
        beta: the weight of the KL term (>= 0; 0 = no reference, TRL's default; then
            ``ref_logps`` is ignored).
        ref_logps: ``(B, T)`` under the frozen reference; needed when ``beta > 0``.
        loss_type: ``"grpo"``, ``"dr_grpo"`` or ``"dapo"``.
        max_completion_length: only for ``"dr_grpo"``: TRL's ``max_completion_length`` (the
            longest completion generation allows); default ``T``, the padded width of
            ``logps``. It must be at least the longest completion the mask marks.
        use_bias_correction_kl: weight the KL term by the ratio (TRL 1.16's default, True).

    Raises:
        TypeError/ValueError: naming the argument: shapes that differ, a mask that is not
            bool or 0/1, ``beta < 0``, an epsilon outside (0, 1), ``beta > 0`` without
            ``ref_logps``, an unknown ``loss_type``.
    """
    mask, L = _check_grpo_inputs(logps, old_logps, advantages, mask, epsilon_low, epsilon_high,
                                 beta, ref_logps, loss_type, max_completion_length,
                                 use_bias_correction_kl)  # fmt: skip
    B = logps.shape[0]
    if old_logps is None:
        old_logps = logps.detach()  # sampled by this very policy: ratio 1, gradient REINFORCE's

    ratio = torch.exp(logps - old_logps)  # (B, T): pi / pi_old per token
    clipped = torch.clamp(ratio, 1 - epsilon_low, 1 + epsilon_high)
    A = advantages[:, None]  # (B, 1): one advantage for every token of a completion
    per_token = -torch.min(ratio * A, clipped * A)  # (B, T): the pessimistic surrogate
    if beta > 0:
        kl = kl_k3(logps, ref_logps)  # (B, T), >= 0
        per_token = per_token + beta * (ratio * kl if use_bias_correction_kl else kl)
    m = mask.to(per_token.dtype)  # (B, T) 1.0 on completion tokens
    if loss_type == "grpo":  # mean over each completion's tokens, then over completions
        return ((per_token * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)).mean()
    if loss_type == "dr_grpo":  # a constant denominator: no length bias
        return (per_token * m).sum() / (B * L)
    return (per_token * m).sum() / m.sum().clamp(min=1.0)  # dapo: mean over all tokens


@torch.no_grad()
def clip_fraction(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    epsilon_low: float = 0.2,
    epsilon_high: float = 0.2,
) -> float:
    """The fraction of completion tokens whose ratio the clip holds (TRL's
    ``clip_ratio/region_mean``): ``ratio < 1 - eps_low`` with a negative advantage, or
    ``ratio > 1 + eps_high`` with a positive one. Those tokens get no gradient."""
    mask = _check_loss_inputs(logps, old_logps, advantages, mask)
    if old_logps is None:
        raise TypeError("old_logps must be a floating torch.Tensor (B, T) like logps, got None")
    epsilon_low = _check_epsilon(epsilon_low, "epsilon_low")
    epsilon_high = _check_epsilon(epsilon_high, "epsilon_high")
    ratio = torch.exp(logps - old_logps)  # (B, T)
    A = advantages[:, None]  # (B, 1)
    if ratio[mask].isnan().any() or A[mask.any(dim=1)].isnan().any():
        return math.nan  # nan in, nan out: no token can be said to be held or not
    held = ((ratio < 1 - epsilon_low) & (A < 0)) | ((ratio > 1 + epsilon_high) & (A > 0))
    return float((held & mask).sum() / mask.sum().clamp(min=1))


def pass_at_k(n: int, c: int, k: int) -> float:
    """The probability that at least one of ``k`` samples is right, estimated without bias
    from ``n`` samples of which ``c`` were right (Chen et al., 2021):
    ``1 - C(n - c, k) / C(n, k)``. ``pass_at_k(n, c, 1) = c / n``."""
    n = check_positive_int(n, "n")
    c = check_positive_int(c, "c", allow_zero=True)
    k = check_positive_int(k, "k")
    if c > n:
        raise ValueError(f"c must be <= n={n} (right samples among n), got {c}")
    if k > n:
        raise ValueError(f"k must be <= n={n} (the samples drawn), got {k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass
class GRPOLog:
    """What :func:`grpo_train` returns: the mean reward of every rollout, and per gradient step
    the loss, the clip fraction (:func:`clip_fraction`) and the CPU time."""

    rewards: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    clip_fractions: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0


def grpo_train(
    policy: nn.Module,
    tokenizer: BPETokenizer,
    tasks: Callable[[int], tuple[list[str], list[str]]],
    *,
    steps: int,
    group_size: int = 8,
    iterations: int = 1,
    lr: float = 1e-4,
    epsilon_low: float = 0.2,
    epsilon_high: float = 0.2,
    beta: float = 0.0,
    reference: nn.Module | None = None,
    loss_type: str = "dapo",
    scale_rewards: str = "group",
    reward: Callable[[list[str], list[str]], torch.Tensor] = exact_match_rewards,
    temperature: float = 1.0,
    max_new_tokens: int = 40,
    seed: int = 0,
    threads: int = 1,
    progress: bool = True,
    rows: Callable[[torch.Tensor], torch.Tensor] | None = None,
    trained: nn.Module | None = None,
) -> GRPOLog:
    """GRPO on ``policy``, in place: ``steps`` gradient steps, a new rollout every
    ``iterations`` of them (TRL's ``num_iterations``, the paper's mu).

    A rollout: ``tasks(i) -> (prompts, answers)``; ``group_size`` sampled completions of each
    prompt (:func:`sample_group`, the policy as it is now = ``pi_old``); their rewards
    ``reward(replies, answers repeated per completion)``; :func:`group_advantages`; the
    per-token log-probabilities under ``pi_old`` (and under ``reference`` if ``beta > 0``).
    Each gradient step: :func:`grpo_loss` of the policy's current log-probabilities on that
    rollout, with AdamW (:func:`course_lib.train`, constant ``lr``, gradient norm clipped to
    1). Deterministic for a given ``seed`` and thread count.

    Several processes (``tools/training/train_rl.py`` under ``torchrun``): every process samples
    the whole rollout with the same ``seed`` (as one process would) and trains on its rows of it,
    ``rows(tensor)`` (the same slice of every ``(P * G, ...)`` tensor); ``trained`` is the module
    the optimiser steps through (``policy`` in ``DistributedDataParallel``, which averages the
    gradients over the processes). For ``"dapo"`` each process's loss is rescaled so that this
    average is the mean over the whole rollout's tokens; ``"grpo"`` and ``"dr_grpo"`` are means
    over completions already. ``log.losses`` and ``log.clip_fractions`` are then this process's
    rows'. ``None`` (the default): the whole rollout, ``policy`` itself.
    """
    check_module(policy, "policy")
    steps = check_positive_int(steps, "steps")
    iterations = check_positive_int(iterations, "iterations")
    group_size = check_positive_int(group_size, "group_size")
    if beta and reference is None:
        raise ValueError(f"reference is needed when beta > 0 (the KL term), got None; beta={beta}")
    generator = torch.Generator().manual_seed(seed)
    log = GRPOLog()
    rollout: dict = {}

    def batches(step: int) -> dict:
        if step % iterations:  # reuse the rollout: pi_old stays the policy that sampled it
            return rollout
        prompts, answers = tasks(step // iterations)
        ids, loss_mask, replies = sample_group(policy, tokenizer, prompts, group_size,
                                               max_new_tokens, temperature, generator)  # fmt: skip
        rewards = reward(replies, [a for a in answers for _ in range(group_size)])  # (P * G,)
        with torch.no_grad():
            old_logps = token_logprobs(policy, ids)  # (P * G, n - 1) under pi_old
            ref_logps = token_logprobs(reference, ids) if beta else None
        rollout.update(ids=ids, mask=loss_mask[:, 1:], old_logps=old_logps,
                       ref_logps=ref_logps,
                       advantages=group_advantages(rewards, group_size, scale_rewards))  # fmt: skip
        log.rewards.append(rewards.float().mean().item())
        if rows is not None:  # this process's rows; dapo: its share of the rollout's tokens
            full_rows, full_tokens = ids.shape[0], int(rollout["mask"].sum())
            rollout.update({k: rows(v) for k, v in rollout.items()
                            if isinstance(v, torch.Tensor)})  # fmt: skip
            mine = int(rollout["mask"].sum())  # this process's tokens, of full_tokens
            rollout["share"] = full_rows / len(rollout["ids"]) * mine / max(full_tokens, 1)
        return rollout

    def loss_fn(model: nn.Module, batch: dict) -> torch.Tensor:
        logps = token_logprobs(model, batch["ids"])  # (P * G, n - 1), with its graph
        log.clip_fractions.append(clip_fraction(logps.detach(), batch["old_logps"],
                                                batch["advantages"], batch["mask"],
                                                epsilon_low, epsilon_high))  # fmt: skip
        loss = grpo_loss(logps, batch["old_logps"], batch["advantages"], batch["mask"],
                         epsilon_low, epsilon_high, beta, batch["ref_logps"], loss_type)  # fmt: skip
        return loss * batch["share"] if rows is not None and loss_type == "dapo" else loss

    start = time.process_time()
    done = train(policy if trained is None else trained, batches, loss_fn, steps=steps, lr=lr,
                 schedule="constant", seed=seed, threads=threads, progress=progress,
                 desc="GRPO")  # fmt: skip
    log.losses, log.cpu_seconds = done.losses, time.process_time() - start
    return log
