"""LoRA against peft's LoRA, and the DPO loss against TRL's DPOTrainer (lecture 14).

peft: the same frozen base weights and the same A, B copied into ``peft``'s ``lora_A`` /
``lora_B``; outputs equal to 1e-6 before and after merging. TRL: ``DPOTrainer``'s own loss
method (``_compute_loss``, loss type "sigmoid") run on a batch of per-token log-probabilities
that a stand-in model returns, against :func:`course_lib.dpo_loss` on their sums.
"""

from __future__ import annotations

import collections
import copy
import types

import pytest
import torch
from torch import nn

from course_lib.models.dpo import dpo_loss, dpo_nll_loss
from course_lib.models.lora import LoRALinear, apply_lora, merge_lora, trainable_parameter_count

peft = pytest.importorskip("peft")
trl = pytest.importorskip("trl")


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(6, 5)
        self.down = nn.Linear(5, 3, bias=False)

    def forward(self, x):
        return self.down(torch.tanh(self.up(x)))


def _peft_twin(model: Two, r: int, alpha: float, ours: Two):
    config = peft.LoraConfig(r=r, lora_alpha=alpha, target_modules=["up", "down"],
                             lora_dropout=0.0, init_lora_weights=True)  # fmt: skip
    theirs = peft.get_peft_model(copy.deepcopy(model), config)
    inner = theirs.base_model.model
    with torch.no_grad():
        for name in ("up", "down"):
            layer = getattr(inner, name)
            layer.lora_A["default"].weight.copy_(getattr(ours, name).lora_A.weight)
            layer.lora_B["default"].weight.copy_(getattr(ours, name).lora_B.weight)
    return theirs


@pytest.mark.parametrize(("r", "alpha"), [(1, 1.0), (2, 16.0), (4, 3.0)])
def test_lora_equals_peft_before_and_after_merge(r, alpha):
    torch.manual_seed(r)
    model = Two().double()
    ours = copy.deepcopy(model)
    trainable = apply_lora(ours, r, alpha, ["up", "down"])
    assert trainable == r * (6 + 5) + r * (5 + 3)  # A (r, in) + B (out, r) per layer
    with torch.no_grad():  # a trained B (B starts at zero: a zero update would hide a bug)
        for name in ("up", "down"):
            getattr(ours, name).lora_B.weight.normal_()
    theirs = _peft_twin(model, r, alpha, ours)
    assert ours.up.scaling == alpha / r == theirs.base_model.model.up.scaling["default"]
    x = torch.randn(7, 6, dtype=torch.double)
    adapted = ours(x)
    torch.testing.assert_close(adapted, theirs(x), atol=1e-6, rtol=0)
    assert (adapted - model(x)).abs().max() > 1e-2  # the update does something
    merged_theirs = theirs.merge_and_unload()
    merge_lora(ours)
    assert type(ours.up) is nn.Linear and type(merged_theirs.up) is nn.Linear
    torch.testing.assert_close(ours(x), merged_theirs(x), atol=1e-6, rtol=0)
    torch.testing.assert_close(ours(x), adapted, atol=1e-6, rtol=0)
    torch.testing.assert_close(ours.up.weight, merged_theirs.up.weight, atol=1e-6, rtol=0)


def test_lora_starts_equal_to_its_base_and_trains_only_a_and_b():
    torch.manual_seed(0)
    base = nn.Linear(4, 3)
    layer = LoRALinear(base, r=2, alpha=4.0)
    x = torch.randn(5, 4)
    torch.testing.assert_close(layer(x), base(x), atol=0, rtol=0)  # B = 0 at the start
    assert layer.scaling == 2.0
    assert trainable_parameter_count(layer) == 2 * 4 + 3 * 2
    assert not base.weight.requires_grad and not base.bias.requires_grad
    # by hand: y = x W^T + b + (alpha / r) x A^T B^T
    with torch.no_grad():
        layer.lora_B.weight.fill_(0.5)
    by_hand = (
        x @ base.weight.T + base.bias + 2.0 * (x @ layer.lora_A.weight.T) @ layer.lora_B.weight.T
    )
    torch.testing.assert_close(layer(x), by_hand)
    torch.testing.assert_close(layer.merge()(x), by_hand)


def _trl_dpo(per_token_logps, completion_mask, ref_chosen, ref_rejected, beta,
             loss_types=("sigmoid",), loss_weights=(1.0,)):  # fmt: skip
    """TRL's DPOTrainer._compute_loss on per-token log-probs ``(2 * pairs, T)`` (chosen rows
    first), reference log-probs precomputed: (mean loss, mean chosen reward, mean rejected)."""
    from trl import DPOTrainer

    t = DPOTrainer.__new__(DPOTrainer)  # the loss method alone: no model download, no dataset
    t.model = nn.Linear(1, 1).eval()
    t.accelerator = types.SimpleNamespace(device=torch.device("cpu"), gather=lambda v: v,
                                          gather_for_metrics=lambda v: v)  # fmt: skip
    t.aux_loss_enabled, t.ld_alpha, t.precompute_ref_logps = False, None, True
    t.f_divergence_type, t.loss_types = "reverse_kl", list(loss_types)
    t.loss_weights = list(loss_weights)
    t.beta, t.label_smoothing, t.use_weighting, t.rpo_alpha = beta, 0.0, False, None
    t._metrics = {"train": collections.defaultdict(list), "eval": collections.defaultdict(list)}
    t._total_train_tokens, t._tp_size = 0, 1
    rows, length = per_token_logps.shape
    mask = torch.cat([torch.zeros(rows, 1, dtype=torch.long), completion_mask.long()], dim=1)

    def model(**kwargs):  # what TRL reads from the model's output
        zeros = torch.zeros(rows, length)
        return types.SimpleNamespace(log_probs=per_token_logps * completion_mask, entropy=zeros,
                                     mean_logits=zeros, is_top1=zeros.bool())  # fmt: skip

    inputs = {"input_ids": torch.zeros(rows, length + 1, dtype=torch.long),
              "attention_mask": torch.ones(rows, length + 1, dtype=torch.long),
              "completion_mask": mask, "ref_chosen_logps": ref_chosen,
              "ref_rejected_logps": ref_rejected}  # fmt: skip
    loss = t._compute_loss(model, inputs, return_outputs=False)
    metrics = t._metrics["eval"]
    return loss.item(), metrics["rewards/chosen"][-1], metrics["rewards/rejected"][-1]


@pytest.mark.parametrize("beta", [0.1, 0.5, 2.0])
def test_dpo_loss_equals_trl_pair_by_pair_and_on_the_batch(beta):
    g = torch.Generator().manual_seed(int(beta * 10))
    pairs, length = 6, 5
    per_token = -3 * torch.rand(2 * pairs, length, generator=g, dtype=torch.float64)
    mask = torch.rand(2 * pairs, length, generator=g) < 0.7
    mask[:, 0] = True
    ref = -15 * torch.rand(2, pairs, generator=g, dtype=torch.float64)
    sums = (per_token * mask).sum(dim=1)  # (2 * pairs,): log p(answer) per sequence
    losses, chosen, rejected = dpo_loss(sums[:pairs], sums[pairs:], ref[0], ref[1], beta=beta)
    assert losses.shape == chosen.shape == rejected.shape == (pairs,)
    for i in range(pairs):  # TRL reports batch means: one pair at a time gives each value
        rows = [i, pairs + i]
        loss, c, r = _trl_dpo(per_token[rows], mask[rows], ref[0, i : i + 1], ref[1, i : i + 1],
                              beta)  # fmt: skip
        assert abs(losses[i].item() - loss) < 1e-6
        assert abs(chosen[i].item() - c) < 1e-6 and abs(rejected[i].item() - r) < 1e-6
    loss, c, r = _trl_dpo(per_token, mask, ref[0], ref[1], beta)
    assert abs(losses.mean().item() - loss) < 1e-6
    assert abs(chosen.mean().item() - c) < 1e-6 and abs(rejected.mean().item() - r) < 1e-6


@pytest.mark.parametrize(("beta", "weight"), [(0.1, 5.0), (0.5, 1.0), (2.0, 0.0)])
def test_dpo_nll_loss_equals_trl_sigmoid_plus_sft(beta, weight):
    """DPO + NLL (RPO) = TRL's loss_type=["sigmoid", "sft"], loss_weights=[1, weight]."""
    g = torch.Generator().manual_seed(int(beta * 10 + weight))
    pairs, length = 6, 5
    per_token = -3 * torch.rand(2 * pairs, length, generator=g, dtype=torch.float64)
    mask = torch.rand(2 * pairs, length, generator=g) < 0.7
    mask[:, 0] = True
    ref = -15 * torch.rand(2, pairs, generator=g, dtype=torch.float64)
    sums = (per_token * mask).sum(dim=1)
    ours = dpo_nll_loss(sums[:pairs], sums[pairs:], ref[0], ref[1], mask[:pairs].sum(dim=1),
                        beta=beta, nll_weight=weight)  # fmt: skip
    theirs, _, _ = _trl_dpo(
        per_token, mask, ref[0], ref[1], beta, ("sigmoid", "sft"), (1.0, weight)
    )
    assert abs(ours.item() - theirs) < 1e-6
    # by hand: the DPO mean plus weight x the chosen answers' mean -log p per token
    nll = -(per_token[:pairs] * mask[:pairs]).sum() / mask[:pairs].sum()
    by_hand = (
        dpo_loss(sums[:pairs], sums[pairs:], ref[0], ref[1], beta=beta)[0].mean() + weight * nll
    )
    assert abs(ours.item() - by_hand.item()) < 1e-12


def test_dpo_loss_by_hand():
    # one pair: policy log-ratios 0 (chosen) and 0 (rejected): loss = -log sigmoid(0) = log 2
    z = torch.zeros(1)
    losses, c, r = dpo_loss(z, z, z, z)
    assert abs(losses.item() - 0.6931471805599453) < 1e-7 and c.item() == r.item() == 0
    # chosen up by 2 nats, rejected down by 3, beta 0.5: margin 0.5 * 5 = 2.5
    losses, c, r = dpo_loss(torch.tensor([-1.0]), torch.tensor([-6.0]), torch.tensor([-3.0]),
                            torch.tensor([-3.0]), beta=0.5)  # fmt: skip
    assert abs(losses.item() - 0.07888973) < 1e-6  # log(1 + e^-2.5)
    assert (c.item(), r.item()) == (1.0, -1.5)
