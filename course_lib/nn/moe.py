"""Mixture of experts (lecture 16): a router picks ``k`` of ``E`` SwiGLU experts for each token,
and the layer's output is their weighted sum::

    logits  = W_router x                              (T, E): one score per expert
    weights, experts = top-k routing of the logits    (T, k): which experts, with what weight
    y       = sum_j weights_j * expert_{experts_j}(x)  (+ shared_expert(x), DeepSeek)

Two routing conventions are in use (:func:`softmax_top_k`, :func:`sigmoid_top_k`):

* **softmax, then top-k** (Mixtral, Qwen3-MoE): ``p = softmax(logits)``, keep the ``k``
  largest; Mixtral renormalises them to sum to 1, Qwen3-MoE does when ``norm_topk_prob``.
* **sigmoid, biased choice** (DeepSeek-V3): ``s = sigmoid(logits)``; the experts are chosen by
  ``s + b`` (a per-expert *selection bias*, nudged during training to balance the load, with no
  auxiliary loss), but weighted by ``s`` alone, renormalised and scaled. Optionally the experts
  are in groups and only the best ``top_groups`` groups may be chosen (group-limited routing).

The load-balancing auxiliary loss (Switch Transformer, eq. 4-6) is
:func:`load_balancing_loss`: ``E * sum_e f_e P_e``, with ``f_e`` the fraction of tokens sent to
expert ``e`` and ``P_e`` its mean router probability; it is smallest when both are uniform.

Every function here is held to ``transformers`` with weights copied in
(``Qwen3MoeSparseMoeBlock``, ``MixtralSparseMoeBlock``, ``DeepseekV3MoE``,
``load_balancing_loss_func``) by ``tests/test_moe.py``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_flag,
    check_last_dim,
    check_positive_int,
    check_positive_number,
    inner_checks_off,
)
from .feedforward import SwiGLUFeedForward

__all__ = [
    "Router",
    "MixtureOfExperts",
    "softmax_top_k",
    "sigmoid_top_k",
    "load_balancing_loss",
    "check_top_k",
]

SCORINGS = ("softmax", "sigmoid")


def check_top_k(top_k: int, num_experts: int, name: str = "top_k") -> int:
    """``1 <= top_k <= num_experts``, else a ValueError naming ``top_k``."""
    num_experts = check_positive_int(num_experts, "num_experts")
    if check_positive_int(top_k, name) > num_experts:
        raise ValueError(
            f"{name}={top_k} is more than num_experts={num_experts}: a token cannot be sent to "
            f"more experts than there are (need 1 <= {name} <= {num_experts})"
        )
    return int(top_k)


def _check_logits(logits, k, name: str = "logits") -> None:
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or not logits.is_floating_point():
        got = f"{tuple(logits.shape)} {logits.dtype}" if isinstance(logits, torch.Tensor) else (
            type(logits).__name__)  # fmt: skip
        raise ValueError(f"{name} must be a floating (tokens, num_experts) tensor, got {got}")
    if k is not None:
        check_top_k(k, logits.shape[-1], "k")


def softmax_top_k(
    logits: torch.Tensor, k: int, normalize: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mixtral's and Qwen3-MoE's routing: softmax over the experts, keep the ``k`` largest.

    ``logits (T, E)`` -> ``weights (T, k)`` and ``experts (T, k)`` (long), largest first. With
    ``normalize`` the ``k`` kept probabilities are divided by their sum (Mixtral always;
    Qwen3-MoE when ``norm_topk_prob``); without, they sum to less than 1.
    """
    _check_logits(logits, k)
    normalize = check_flag(normalize, "normalize")
    probs = torch.softmax(logits, dim=-1)  # (T, E): each row sums to 1
    weights, experts = probs.topk(k, dim=-1)  # (T, k), (T, k)
    if normalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)  # the k weights sum to 1
    return weights, experts


def sigmoid_top_k(
    logits: torch.Tensor, k: int, selection_bias: torch.Tensor | None = None,
    normalize: bool = True, num_groups: int = 1, top_groups: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """DeepSeek-V3's routing: sigmoid scores; the choice uses ``score + selection_bias``, the
    weight uses the score alone.

    ``logits (T, E)`` -> ``weights (T, k)``, ``experts (T, k)``. With ``num_groups > 1`` the
    ``E`` experts form ``num_groups`` equal groups, each group is scored by the sum of its two
    best biased scores, and only the ``top_groups`` best groups may be chosen. ``normalize``
    divides the ``k`` weights by their sum (``+ 1e-20``, as DeepSeek-V3).
    """
    _check_logits(logits, k)
    normalize = check_flag(normalize, "normalize")
    check_positive_int(num_groups, "num_groups")
    check_positive_int(top_groups, "top_groups")
    if selection_bias is not None and (
        not isinstance(selection_bias, torch.Tensor) or selection_bias.shape != logits.shape[-1:]
    ):
        raise ValueError(
            f"selection_bias must be None or a tensor (num_experts={logits.shape[-1]},), got "
            f"{getattr(selection_bias, 'shape', type(selection_bias).__name__)}"
        )
    if num_groups > 1 and (logits.shape[-1] % num_groups or top_groups > num_groups):
        raise ValueError(
            f"num_groups={num_groups} must divide the {logits.shape[-1]} experts and "
            f"top_groups={top_groups} must be <= num_groups"
        )
    scores = torch.sigmoid(logits)  # (T, E): each in (0, 1), independent of the others
    choice = scores if selection_bias is None else scores + selection_bias  # (T, E)
    if num_groups > 1:
        t, e = choice.shape
        groups = choice.view(t, num_groups, e // num_groups)  # (T, G, E/G)
        group_scores = groups.topk(2, dim=-1).values.sum(dim=-1)  # (T, G): two best per group
        best = group_scores.topk(top_groups, dim=-1).indices  # (T, top_groups)
        allowed = torch.zeros_like(group_scores, dtype=torch.bool).scatter(1, best, True)
        allowed = allowed.repeat_interleave(e // num_groups, dim=1)  # (T, E)
        choice = choice.masked_fill(~allowed, float("-inf"))
    experts = choice.topk(k, dim=-1).indices  # (T, k): chosen with the bias
    weights = scores.gather(1, experts)  # (T, k): weighted without it
    if normalize:
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
    return weights, experts


class Router(nn.Module):
    """``linear -> top-k``: for tokens ``(T, d_model)`` returns ``weights (T, k)`` and
    ``experts (T, k)``; keeps the latest ``logits (T, E)`` (with their gradient, for
    :func:`load_balancing_loss`).

    Args:
        d_model: token width.
        num_experts: ``E``.
        top_k: experts per token, ``1 <= top_k <= E``.
        scoring: ``"softmax"`` (:func:`softmax_top_k`) or ``"sigmoid"`` (:func:`sigmoid_top_k`,
            with a ``selection_bias`` buffer of ``E`` zeros).
        normalize: renormalise the ``k`` weights to sum to 1.
        scaling: multiplies the weights (DeepSeek-V3's ``routed_scaling_factor``, 2.5).
        num_groups, top_groups: group-limited routing (sigmoid scoring only).
    """

    def __init__(
        self, d_model: int, num_experts: int, top_k: int, *, scoring: str = "softmax",
        normalize: bool = True, scaling: float = 1.0, num_groups: int = 1, top_groups: int = 1,
    ):  # fmt: skip
        super().__init__()
        check_positive_int(d_model, "d_model")
        self.top_k = check_top_k(top_k, num_experts)
        if scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
        self.scoring, self.normalize = scoring, check_flag(normalize, "normalize")
        self.scaling = check_positive_number(scaling, "scaling")
        self.num_groups = check_positive_int(num_groups, "num_groups")
        self.top_groups = check_positive_int(top_groups, "top_groups")
        if num_experts % num_groups or top_groups > num_groups:
            raise ValueError(
                f"num_groups={num_groups} must divide num_experts={num_experts} and "
                f"top_groups={top_groups} must be <= num_groups"
            )
        if num_groups > 1 and (scoring != "sigmoid" or num_experts // num_groups < 2):
            raise ValueError(
                "num_groups > 1 (group-limited routing) needs scoring='sigmoid' and at least 2 "
                f"experts per group, got scoring={scoring!r}, {num_experts // num_groups} per group"
            )
        if top_groups * (num_experts // num_groups) < top_k:
            raise ValueError(
                f"top_k={top_k} is more than the {top_groups * (num_experts // num_groups)} "
                f"experts in the top_groups={top_groups} groups that may be chosen"
            )
        self.num_experts = num_experts
        self.linear = nn.Linear(d_model, num_experts, bias=False)
        if scoring == "sigmoid":
            self.register_buffer("selection_bias", torch.zeros(num_experts))
        self.logits: torch.Tensor | None = None
        self.checks = True  # off inside MixtureOfExperts

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.checks:  # off inside MixtureOfExperts, whose forward checks x
            check_last_dim(x, "x", self.linear.in_features, like=self)
            if x.ndim != 2:
                raise ValueError(f"x must have shape (tokens, d_model), got {tuple(x.shape)}")
        logits = self.linear(x)  # (T, E)
        self.logits = logits  # kept for the load-balancing loss
        if self.scoring == "softmax":
            weights, experts = softmax_top_k(logits, self.top_k, self.normalize)
        else:
            weights, experts = sigmoid_top_k(logits, self.top_k, self.selection_bias,
                                             self.normalize, self.num_groups, self.top_groups)  # fmt: skip
        return weights * self.scaling, experts  # (T, k), (T, k)


class MixtureOfExperts(nn.Module):
    """A sparse feed-forward layer: ``E`` SwiGLU experts, ``k`` of them per token.

    Args:
        d_model: token width.
        d_ff: hidden width of each expert (HF: ``moe_intermediate_size``).
        num_experts, top_k, scoring, normalize, scaling, num_groups, top_groups: the
            :class:`Router`'s.
        shared_d_ff: hidden width of a *shared expert* every token goes through (DeepSeek:
            ``moe_intermediate_size * n_shared_experts``); ``None`` for none.

    ``forward(x (..., d_model)) -> (..., d_model)``; ``self.router.logits`` keeps the router's
    logits of the latest call. Parameters per token: the router, ``k`` experts and the shared
    one; in total: all ``E`` experts.
    """

    def __init__(
        self, d_model: int, d_ff: int, num_experts: int, top_k: int, *,
        scoring: str = "softmax", normalize: bool = True, scaling: float = 1.0,
        num_groups: int = 1, top_groups: int = 1, shared_d_ff: int | None = None,
    ):  # fmt: skip
        super().__init__()
        self.router = Router(d_model, num_experts, top_k, scoring=scoring, normalize=normalize,
                             scaling=scaling, num_groups=num_groups, top_groups=top_groups)  # fmt: skip
        self.experts = nn.ModuleList(SwiGLUFeedForward(d_model, d_ff) for _ in range(num_experts))
        if shared_d_ff is not None:
            check_positive_int(shared_d_ff, "shared_d_ff")
        self.shared_expert = (
            None if shared_d_ff is None else SwiGLUFeedForward(d_model, shared_d_ff)
        )
        self.d_model = d_model
        inner_checks_off(self)
        self.checks = True  # off inside a model whose forward has checked its input

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.checks:
            check_last_dim(x, "x", self.d_model, like=self)
        tokens = x.reshape(-1, self.d_model)  # (T, d): every position of every sequence
        weights, experts = self.router(tokens)  # (T, k), (T, k)
        out = torch.zeros_like(tokens)  # (T, d)
        for e, expert in enumerate(self.experts):
            token, slot = torch.where(
                experts == e
            )  # the tokens sent to expert e, and which of their k
            if token.numel():
                out = out.index_add(0, token, weights[token, slot, None] * expert(tokens[token]))
        if self.shared_expert is not None:
            out = out + self.shared_expert(tokens)  # every token, weight 1
        return out.view(x.shape)


def load_balancing_loss(
    router_logits: torch.Tensor | list[torch.Tensor] | tuple[torch.Tensor, ...], top_k: int
) -> torch.Tensor:
    """Switch Transformer's auxiliary loss, as ``transformers``' ``load_balancing_loss_func``::

        f_e = (tokens with e among their top-k) / T     sums to top_k over the experts
        P_e = mean over tokens of softmax(logits)_e     sums to 1
        loss = E * sum_e f_e * P_e

    ``router_logits``: ``(T, E)``, or a list/tuple of them (one per layer; their tokens are
    pooled, as ``transformers`` does). A uniform router gives ``top_k``; routing every token to
    the same experts gives up to ``E``. Only ``P`` carries a gradient (``f`` counts).
    """
    if isinstance(router_logits, (list, tuple)):
        if not router_logits:
            raise ValueError("router_logits: got an empty list; pass (T, E) logits per layer")
        router_logits = torch.cat(list(router_logits), dim=0)  # (layers * T, E)
    _check_logits(router_logits, None, "router_logits")
    num_experts = router_logits.shape[-1]
    top_k = check_top_k(top_k, num_experts)
    probs = torch.softmax(router_logits.float(), dim=-1)  # (T, E)
    chosen = F.one_hot(probs.topk(top_k, dim=-1).indices, num_experts).sum(dim=1)  # (T, E) 0/1
    f = chosen.float().mean(dim=0)  # (E,): fraction of tokens routed to each expert
    p = probs.mean(dim=0)  # (E,): mean router probability of each expert
    return num_experts * (f * p).sum()
