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
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._validation import check_positive_number

__all__ = ["dpo_loss"]

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
    beta = check_positive_number(beta, "beta")
    values = (policy_chosen_logps, policy_rejected_logps,
              reference_chosen_logps, reference_rejected_logps)  # fmt: skip
    for name, v in zip(_NAMES, values, strict=True):
        if not isinstance(v, torch.Tensor) or not v.is_floating_point():
            got = f"{v.dtype} tensor" if isinstance(v, torch.Tensor) else type(v).__name__
            raise TypeError(f"{name} must be a floating torch.Tensor (pairs,), got {got}")
        if v.ndim != 1 or v.shape != policy_chosen_logps.shape:
            raise ValueError(
                f"{name} must have shape (pairs,) like policy_chosen_logps "
                f"{tuple(policy_chosen_logps.shape)}, got {tuple(v.shape)}"
            )
    chosen_logratios = policy_chosen_logps - reference_chosen_logps  # log pi/pi_ref of y_w
    rejected_logratios = policy_rejected_logps - reference_rejected_logps  # ... of y_l
    losses = -F.logsigmoid(beta * (chosen_logratios - rejected_logratios))
    chosen_rewards = beta * chosen_logratios.detach()
    rejected_rewards = beta * rejected_logratios.detach()
    return losses, chosen_rewards, rejected_rewards
