"""DPO: learn from preferences without a reward model (Rafailov et al., 2023).

For a prompt ``x`` with a preferred answer ``y_w`` (chosen) and a worse one ``y_l`` (rejected),
the policy ``pi`` is pushed to raise the log-probability of ``y_w`` *relative to a frozen
reference* ``pi_ref`` (the model before DPO) more than that of ``y_l``::

    reward(y)  = beta * (log pi(y | x) - log pi_ref(y | x))
    loss       = -log sigmoid(reward(y_w) - reward(y_l))

``log pi(y | x)`` is the sum of the log-probabilities of the answer's tokens
(:func:`course_lib.sequence_logprobs`). ``beta`` says how far the policy may move from the
reference: a small ``beta`` needs a large change of log-probabilities for the same loss. This
is TRL's ``loss_type="sigmoid"`` (no label smoothing); the tests hold :func:`dpo_loss` to
TRL's ``DPOTrainer`` on the same log-probabilities to 1e-6.

:func:`dpo_nll_loss` adds the negative log-likelihood of the chosen answers, per token (RPO,
Pang et al. 2024: "DPO+NLL"), so that the chosen answer is pulled up and not only the rejected
one pushed down; it is TRL's ``loss_type=["sigmoid", "sft"]`` with ``loss_weights=[1, weight]``
(a test holds it to that to 1e-6).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .._validation import check_positive_number

__all__ = ["dpo_loss", "dpo_nll_loss"]

_NAMES = (
    "policy_chosen_logps",
    "policy_rejected_logps",
    "reference_chosen_logps",
    "reference_rejected_logps",
)


def dpo_loss(
    policy_chosen_logps: torch.Tensor,
    policy_rejected_logps: torch.Tensor,
    reference_chosen_logps: torch.Tensor,
    reference_rejected_logps: torch.Tensor,
    beta: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The DPO loss of each preference pair: ``(losses, chosen_rewards, rejected_rewards)``.

    Each input: ``(pairs,)`` summed log-probabilities of the chosen / rejected answers under
    the policy and under the reference. ``losses`` keeps the graph (take ``.mean()`` to
    train); the rewards ``beta * (policy - reference)`` are detached, as TRL logs them.

    Raises:
        TypeError: an input that is not a floating tensor; ValueError: shapes that differ or are
            not 1-D, ``beta <= 0``.
    """
    beta = _check_dpo_inputs(policy_chosen_logps, policy_rejected_logps,
                             reference_chosen_logps, reference_rejected_logps, beta=beta)  # fmt: skip
    chosen_logratios = policy_chosen_logps - reference_chosen_logps  # log pi/pi_ref of y_w
    rejected_logratios = policy_rejected_logps - reference_rejected_logps  # ... of y_l
    losses = -F.logsigmoid(beta * (chosen_logratios - rejected_logratios))
    chosen_rewards = beta * chosen_logratios.detach()
    rejected_rewards = beta * rejected_logratios.detach()
    return losses, chosen_rewards, rejected_rewards


def dpo_nll_loss(
    policy_chosen_logps: torch.Tensor,
    policy_rejected_logps: torch.Tensor,
    reference_chosen_logps: torch.Tensor,
    reference_rejected_logps: torch.Tensor,
    chosen_tokens: torch.Tensor,
    beta: float = 0.1,
    nll_weight: float = 1.0,
) -> torch.Tensor:
    """The mean DPO loss of a batch plus ``nll_weight`` times the chosen answers' negative
    log-likelihood per token: a scalar to train on.

    ``chosen_tokens``: ``(pairs,)`` how many tokens each chosen answer has (the loss mask's
    count), so that ``-policy_chosen_logps.sum() / chosen_tokens.sum()`` is the response-only
    cross-entropy on the chosen answers (:func:`course_lib.response_loss`). The other
    arguments are those of :func:`dpo_loss`.

    Raises:
        as :func:`dpo_loss`; ValueError: ``nll_weight < 0``, ``chosen_tokens`` not of shape
            ``(pairs,)`` or with a total of 0.
    """
    nll_weight = _check_nll_inputs(chosen_tokens, policy_chosen_logps, nll_weight)
    losses, _, _ = dpo_loss(policy_chosen_logps, policy_rejected_logps, reference_chosen_logps,
                            reference_rejected_logps, beta=beta)  # fmt: skip
    nll = -policy_chosen_logps.sum() / chosen_tokens.sum()  # nats per chosen token
    return losses.mean() + nll_weight * nll


def _check_dpo_inputs(policy_chosen_logps, *others, beta) -> float:
    """dpo_loss's door: four floating ``(pairs,)`` tensors of log-probabilities, ``beta > 0``."""
    values = (policy_chosen_logps, *others)
    for name, v in zip(_NAMES, values, strict=True):
        if not isinstance(v, torch.Tensor) or not v.is_floating_point():
            got = f"{v.dtype} tensor" if isinstance(v, torch.Tensor) else type(v).__name__
            raise TypeError(f"{name} must be a floating torch.Tensor (pairs,), got {got}")
        if v.ndim != 1 or v.shape != policy_chosen_logps.shape:
            raise ValueError(
                f"{name} must have shape (pairs,) like policy_chosen_logps "
                f"{tuple(policy_chosen_logps.shape)}, got {tuple(v.shape)}"
            )
        if (v > 0).any():  # a log-probability is <= 0 (nan passes: nan in, nan out)
            raise ValueError(
                f"{name} must hold log-probabilities (<= 0), got a largest value of "
                f"{float(v.max()):.4g}: pass log p, not p or -log p"
            )
    return check_positive_number(beta, "beta")


def _check_nll_inputs(chosen_tokens, policy_chosen_logps, nll_weight) -> float:
    """dpo_nll_loss's door: whole token counts ``(pairs,)`` with a total > 0, a finite weight."""
    if isinstance(nll_weight, bool) or not isinstance(nll_weight, int | float):
        raise TypeError(f"nll_weight must be a number >= 0, got {type(nll_weight).__name__}")
    if not 0 <= nll_weight < math.inf:  # also rejects nan
        raise ValueError(f"nll_weight must be a finite number >= 0, got {nll_weight!r}")
    if not isinstance(chosen_tokens, torch.Tensor):
        raise TypeError(f"chosen_tokens must be a torch.Tensor (pairs,), got "
                        f"{type(chosen_tokens).__name__}")  # fmt: skip
    if chosen_tokens.shape != getattr(policy_chosen_logps, "shape", None):
        raise ValueError(
            f"chosen_tokens must have shape (pairs,) like policy_chosen_logps "
            f"{tuple(getattr(policy_chosen_logps, 'shape', ()))}, got {tuple(chosen_tokens.shape)}"
        )
    if (chosen_tokens < 0).any() or (chosen_tokens != chosen_tokens.round()).any():
        raise ValueError(
            f"chosen_tokens must hold whole token counts >= 0, got {chosen_tokens.tolist()[:8]}"
        )
    if not chosen_tokens.sum() > 0:
        raise ValueError("chosen_tokens must count at least one token, got a total of 0")
    return nll_weight
