"""Lecture 14's training pieces against values computed another way (a loop over positions,
lecture 11's GPT on its own vocabulary, a greedy loop written out)."""

from __future__ import annotations

import math

import pytest
import torch

from course_lib.configs import GPTConfig
from course_lib.data.chat import load_chat_tokenizer, render_chat
from course_lib.models.assistant import (
    add_chat_tokens,
    chat_batch,
    generate_replies,
    response_loss,
    sequence_logprobs,
)
from course_lib.models.gpt import GPT


@pytest.fixture(scope="module")
def tok():
    return load_chat_tokenizer()


def _model(vocab=515, seed=0):
    torch.manual_seed(seed)
    return GPT(GPTConfig(vocab, 64, d_model=16, num_heads=2, num_layers=1)).eval()


def _batch(tok):
    chats = [
        [{"role": "user", "content": "first of: a b c"}, {"role": "assistant", "content": "a"}],
        [{"role": "user", "content": "Join: open file read"},
         {"role": "assistant", "content": "open, file, read"}],
    ]  # fmt: skip
    return chat_batch([render_chat(c, tok) for c in chats])


def test_add_chat_tokens_keeps_the_old_model(tok):
    model = _model(vocab=512)
    ids = torch.tensor([[0, 5, 77, 300]])
    before = model(ids)
    add_chat_tokens(model, 515)
    after = model(ids)
    torch.testing.assert_close(after[..., :512], before, atol=1e-6, rtol=0)
    assert after.shape[-1] == 515 and model.config.vocab_size == 515
    assert model.lm_head.weight is model.token_embedding.weight  # still tied
    mean = model.token_embedding.weight[:512].mean(dim=0)
    torch.testing.assert_close(model.token_embedding.weight[514], mean)
    with pytest.raises(ValueError, match="vocab_size must be larger than the model's 515"):
        add_chat_tokens(model, 515)


def test_chat_batch_pads_with_mask_false(tok):
    ids, mask = _batch(tok)
    short = render_chat([{"role": "user", "content": "first of: a b c"},
                         {"role": "assistant", "content": "a"}], tok)  # fmt: skip
    n = len(short[0])
    assert ids[0, :n].tolist() == short[0] and mask[0, :n].tolist() == short[1]
    assert (ids[0, n:] == 0).all() and not mask[0, n:].any()
    assert ids.dtype == torch.long and mask.dtype == torch.bool


def test_response_loss_and_logprobs_by_a_loop(tok):
    model = _model()
    ids, mask = _batch(tok)
    logits = model(ids[:, :-1])
    total, count, per_row = 0.0, 0, [0.0, 0.0]
    for b in range(ids.shape[0]):
        for t in range(1, ids.shape[1]):
            if mask[b, t]:
                logp = logits[b, t - 1].double().log_softmax(-1)[ids[b, t]].item()
                total, count = total - logp, count + 1
                per_row[b] += logp
    assert count == int(mask[:, 1:].sum())
    assert math.isclose(response_loss(model, ids, mask).item(), total / count, rel_tol=1e-5)
    torch.testing.assert_close(sequence_logprobs(model, ids, mask).double(),
                               torch.tensor(per_row, dtype=torch.double), atol=1e-4, rtol=0)  # fmt: skip
    # the prompt is read, never predicted: changing the mask off the answer changes nothing
    loss_all = response_loss(model, ids, torch.ones_like(mask))
    assert not math.isclose(loss_all.item(), total / count, rel_tol=1e-3)


def test_generate_replies_is_a_greedy_loop_to_the_end_token(tok):
    model = _model(seed=3)
    prompts = ["first of: a b c", "Join: x y", "first of: a b d"]
    got = generate_replies(model, tok, prompts, max_new_tokens=6)
    for prompt, reply in zip(prompts, got, strict=True):
        ids = render_chat([{"role": "user", "content": prompt}], tok, add_generation_prompt=True)[0]
        new = []
        for _ in range(6):
            nxt = int(model(torch.tensor([ids + new]))[0, -1].argmax())
            if nxt == 514:
                break
            new.append(nxt)
        assert reply == tok.decode(new).strip()


def test_bad_ids_and_mask(tok):
    model = _model()
    ids, mask = _batch(tok)
    with pytest.raises(ValueError, match="loss_mask must have the shape of ids"):
        response_loss(model, ids, mask[:, :-1])
    with pytest.raises(TypeError, match="loss_mask must be a torch.bool tensor"):
        response_loss(model, ids, mask.long())
    with pytest.raises(ValueError, match="marks no target token"):
        response_loss(model, ids, torch.zeros_like(mask))


@pytest.mark.parametrize("name", ["tuned", "lora", "dpo", "grpo"])
def test_shipped_assistants_reproduce_their_stored_replies(tok, name):
    from pathlib import Path

    from course_lib.data.instructions import HELD_OUT_KINDS, held_out_instructions
    from course_lib.models.assistant import ASSISTANT_CHECKPOINTS, load_assistant

    assert Path(ASSISTANT_CHECKPOINTS[name]).stat().st_size < 3e6
    model, meta = load_assistant(name)
    assert set(meta["replies"]) == set(HELD_OUT_KINDS)
    for kind, stored in meta["replies"].items():
        items = held_out_instructions(kind)[::30]  # two of each family
        assert len(stored) == len(items) == 10
        assert generate_replies(model, tok, [x.prompt for x in items], max_new_tokens=40) == stored
        # the stored scores are the exact matches of these replies
        for j, (reply, x) in enumerate(zip(stored, items, strict=True)):
            position = 30 * j % 60
            assert meta["scores"][kind][x.family][position] == int(reply.strip() == x.answer)


def test_the_shipped_dpo_settings_follow_the_validation_rule():
    """The DPO checkpoint's settings are the ones tools/training/train_assistant.py's rule picks from its
    stored validation numbers (never from the held-out sets), among the script's candidates, and its
    pairs are on-policy: the tuned model's own wrong replies."""
    from course_lib.data.instructions import FAMILIES, VALIDATION_PER_FAMILY
    from course_lib.models.assistant import load_assistant
    from tools.training.train_assistant import SETTINGS, choose_dpo

    _, meta = load_assistant("dpo")
    val = meta["validation"]
    assert val["items"] == VALIDATION_PER_FAMILY * len(FAMILIES)
    tried = [{k: t[k] for k in ("lr", "beta", "nll", "steps")} for t in val["tried"]]
    assert tried == SETTINGS["dpo_candidates"]
    assert choose_dpo(val["tried"], SETTINGS) == val["chosen"]
    assert meta["dpo"] == SETTINGS["dpo_candidates"][val["chosen"]]
    for t in val["tried"]:
        assert math.isclose(t["accuracy_drop"], val["tuned_accuracy"] - t["accuracy"])
        assert len(t["trajectory"]["chosen"]) == len(t["trajectory"]["rejected"]) == t["steps"]
    assert meta["pairs"]["pool"] == SETTINGS["dpo_pool"]
    assert sum(meta["pairs"]["by_family"].values()) == meta["pairs"]["wrong"] > 0
    for _prompt, chosen, rejected in meta["pairs"]["examples"]:
        assert chosen != rejected
    # by hand, the rule on made-up candidates: the highest all-family accuracy among those that
    # lose at most 1 point of one-answer accuracy; a tie goes to the earlier candidate
    made_up = [{"accuracy_all": 92.0, "accuracy_drop": 3.0}, {"accuracy_all": 91.0,
               "accuracy_drop": 0.5}, {"accuracy_all": 90.0, "accuracy_drop": 0.0}]  # fmt: skip
    assert choose_dpo(made_up, SETTINGS) == 1
    tie = [
        {"accuracy_all": 91.0, "accuracy_drop": 0.0},
        {"accuracy_all": 91.0, "accuracy_drop": -1.0},
    ]
    assert choose_dpo(tie, SETTINGS) == 0
