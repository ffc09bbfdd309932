"""Mixture of experts (lecture 16) against transformers 5.23 with weights copied in:
Qwen3MoeSparseMoeBlock (softmax, norm_topk_prob on and off), MixtralSparseMoeBlock (softmax,
renormalised), DeepseekV3MoE (sigmoid scores, selection bias, groups, shared expert, scaling),
and the load-balancing loss against load_balancing_loss_func. Tiny random configs."""

import pytest
import torch
from transformers import DeepseekV3Config, MixtralConfig, Qwen3MoeConfig
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3MoE
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
from transformers.models.qwen3_moe.modeling_qwen3_moe import (
    Qwen3MoeSparseMoeBlock,
    load_balancing_loss_func,
)

from course_lib.nn import (
    MixtureOfExperts,
    Router,
    load_balancing_loss,
    sigmoid_top_k,
    softmax_top_k,
)

D, E, K, F = 16, 6, 2, 12


def _randomise(module: torch.nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)


def _copy_experts(ours: MixtureOfExperts, gate_up: torch.Tensor, down: torch.Tensor) -> None:
    d_ff = down.shape[-1]
    with torch.no_grad():
        for e, expert in enumerate(ours.experts):
            expert.gate.weight.copy_(gate_up[e, :d_ff])
            expert.up.weight.copy_(gate_up[e, d_ff:])
            expert.down.weight.copy_(down[e])


@pytest.mark.parametrize("norm_topk_prob", [True, False])
def test_qwen3_moe_block(norm_topk_prob):
    cfg = Qwen3MoeConfig(hidden_size=D, moe_intermediate_size=F, num_experts=E,
                         num_experts_per_tok=K, norm_topk_prob=norm_topk_prob)  # fmt: skip
    theirs = Qwen3MoeSparseMoeBlock(cfg).eval()
    _randomise(theirs, 0)
    ours = MixtureOfExperts(D, F, E, K, normalize=norm_topk_prob)
    ours.router.linear.weight.data.copy_(theirs.gate.weight)
    _copy_experts(ours, theirs.experts.gate_up_proj, theirs.experts.down_proj)
    x = torch.randn(3, 7, D, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-5)
        # the router's own outputs: same experts, same weights
        logits, weights, experts = theirs.gate(x.view(-1, D))
        w, e = ours.router(x.view(-1, D))
    assert torch.equal(e, experts)
    torch.testing.assert_close(w, weights, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours.router.logits, logits, rtol=0, atol=1e-6)
    # renormalised weights sum to 1; the raw top-k probabilities sum to less
    sums = w.sum(-1)
    assert torch.allclose(sums, torch.ones_like(sums)) == norm_topk_prob


def test_mixtral_block():
    cfg = MixtralConfig(hidden_size=D, intermediate_size=F, num_local_experts=E,
                        num_experts_per_tok=K)  # fmt: skip
    theirs = MixtralSparseMoeBlock(cfg).eval()
    _randomise(theirs, 2)
    ours = MixtureOfExperts(D, F, E, K)  # Mixtral always renormalises
    ours.router.linear.weight.data.copy_(theirs.gate.weight)
    _copy_experts(ours, theirs.experts.gate_up_proj, theirs.experts.down_proj)
    x = torch.randn(2, 9, D, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    ("n_group", "topk_group", "norm"), [(1, 1, True), (3, 1, True), (2, 1, False)]
)
def test_deepseek_v3_moe(n_group, topk_group, norm):
    cfg = DeepseekV3Config(hidden_size=D, moe_intermediate_size=F, n_routed_experts=E,
                           num_experts_per_tok=K, n_group=n_group, topk_group=topk_group,
                           n_shared_experts=2, routed_scaling_factor=2.5, norm_topk_prob=norm)  # fmt: skip
    theirs = DeepseekV3MoE(cfg).eval()
    _randomise(theirs, 4)
    with torch.no_grad():  # a selection bias large enough to change some choices
        theirs.gate.e_score_correction_bias.copy_(torch.linspace(-0.3, 0.3, E))
    ours = MixtureOfExperts(D, F, E, K, scoring="sigmoid", normalize=norm, scaling=2.5,
                            num_groups=n_group, top_groups=topk_group, shared_d_ff=2 * F)  # fmt: skip
    with torch.no_grad():
        ours.router.linear.weight.copy_(theirs.gate.weight)
        ours.router.selection_bias.copy_(theirs.gate.e_score_correction_bias)
        for name in ("gate", "up", "down"):
            getattr(ours.shared_expert, name).weight.copy_(
                getattr(theirs.shared_experts, f"{name}_proj").weight
            )
    _copy_experts(ours, theirs.experts.gate_up_proj, theirs.experts.down_proj)
    x = torch.randn(2, 11, D, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-5)
        _, weights, experts = theirs.gate(x)
        w, e = ours.router(x.view(-1, D))
    # same experts (as sets: DeepSeek's top-k is unsorted), same weight for each
    order, their_order = e.argsort(-1), experts.argsort(-1)
    assert torch.equal(e.gather(1, order), experts.gather(1, their_order))
    torch.testing.assert_close(
        w.gather(1, order), weights.gather(1, their_order), rtol=0, atol=1e-6
    )


def test_selection_bias_changes_the_choice_not_the_weight():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    w0, e0 = sigmoid_top_k(logits, 1, torch.zeros(4), normalize=False)
    w1, e1 = sigmoid_top_k(logits, 1, torch.tensor([0.0, 0.0, 0.0, 5.0]), normalize=False)
    assert e0.item() == 0 and e1.item() == 3
    assert w1.item() == pytest.approx(torch.sigmoid(torch.tensor(-1.0)).item())  # no bias in it


def test_softmax_top_k_by_hand():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]))
    w, e = softmax_top_k(logits, 2, normalize=False)
    torch.testing.assert_close(w, torch.tensor([[0.5, 0.3], [0.8, 0.1]]))
    assert e[0].tolist() == [0, 1] and e[1, 0].item() == 2
    w, _ = softmax_top_k(logits, 2)
    torch.testing.assert_close(w, torch.tensor([[0.625, 0.375], [8 / 9, 1 / 9]]))


def test_one_expert_top_one_is_that_expert():
    # E = k = 1, renormalised: the layer is exactly its one SwiGLU expert
    moe = MixtureOfExperts(D, F, 1, 1)
    x = torch.randn(2, 5, D)
    torch.testing.assert_close(moe(x), moe.experts[0](x), rtol=0, atol=0)


@pytest.mark.parametrize("layers", [1, 3])
def test_load_balancing_loss_equals_transformers(layers):
    g = torch.Generator().manual_seed(6)
    logits = tuple(torch.randn(20, 8, generator=g) * 2 for _ in range(layers))
    theirs = load_balancing_loss_func(logits, 8, 2)
    ours = load_balancing_loss(list(logits), 2)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)
    if layers == 1:
        torch.testing.assert_close(load_balancing_loss(logits[0], 2), theirs, rtol=0, atol=1e-6)


def test_load_balancing_loss_values_by_hand():
    # uniform router: f_e = k/E, P_e = 1/E -> E * E * (k/E)(1/E) = k
    assert load_balancing_loss(
        torch.zeros(12, 4) + torch.arange(12)[:, None] % 4 * 1e-3, 1
    ).item() == pytest.approx(1.0, abs=1e-2)
    # every token to expert 0 with probability ~1: f = (1, 0, ...), P = (1, 0, ...) -> E
    collapsed = torch.tensor([[20.0, 0.0, 0.0, 0.0]]).repeat(10, 1)
    assert load_balancing_loss(collapsed, 1).item() == pytest.approx(4.0, abs=1e-6)


def test_router_errors():
    with pytest.raises(ValueError, match="top_k=5 is more than num_experts=4"):
        Router(8, 4, 5)
    with pytest.raises(ValueError, match="k=3 is more than num_experts=2"):
        softmax_top_k(torch.zeros(1, 2), 3)
    with pytest.raises(ValueError, match="needs scoring='sigmoid'"):
        Router(8, 4, 1, num_groups=2)
