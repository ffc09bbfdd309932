"""Lecture 13's comparison table (``course_lib/data/modern_ladder.json``) is what
``python -m tools.training.modern_ladder`` computes, and agrees with itself.

The full script takes about half an hour of CPU; these tests re-run the first steps of stored runs
(same seeds, same schedule) and compare the losses to 1e-5, check the ladder's models rung by rung,
and check that the table's summary is computed from its runs.
"""

from __future__ import annotations

import json
import math
import statistics

import pytest
import torch
from torch import nn

from course_lib import GPT, ModernLM
from course_lib.data.language_modeling import evaluate_lm, lm_corpus
from course_lib.models.ngram import bigram_lm
from course_lib.nn import FeedForward, RMSNorm, SwiGLUFeedForward
from tools.training import modern_ladder as ml

TABLE = json.loads(ml.TABLE.read_text())
RUNS = TABLE["runs"]


def stored(setting: str, lr: float, seed: int) -> dict:
    (run,) = [r for r in RUNS if (r["setting"], r["lr"], r["seed"]) == (setting, lr, seed)]
    return run


def test_every_setting_has_its_seeds_and_nothing_else():
    keys = [(r["setting"], r["lr"], r["seed"]) for r in RUNS]
    assert len(keys) == len(set(keys))
    expected = {(name, ml.LR) for name in ml.NAMES} | {
        (ml.RUNGS[0], ml.HIGH_LR),
        (ml.RUNGS[ml.GQA], ml.HIGH_LR),
    }
    assert {(s, lr) for s, lr, _ in keys} == expected
    for setting, lr in expected:
        assert sorted(seed for s, r, seed in keys if (s, r) == (setting, lr)) == list(ml.SEEDS)
    assert [s["setting"] for s in TABLE["settings"]] == list(ml.RUNGS)
    assert [s["setting"] for s in TABLE["off_ladder"]] == [ml.OFF_LADDER]
    assert len(ml.SEEDS) >= 3


def test_the_summary_is_computed_from_the_runs():
    assert len(TABLE["summary"]) == len({(r["setting"], r["lr"]) for r in RUNS})
    for row in TABLE["summary"]:
        values = [
            r["held_out"] for r in RUNS if (r["setting"], r["lr"]) == (row["setting"], row["lr"])
        ]
        assert row["seeds"] == len(values) >= 3
        assert math.isclose(row["mean"], statistics.fmean(values), rel_tol=1e-12)
        assert math.isclose(row["std"], statistics.stdev(values), rel_tol=1e-12)
        assert (row["min"], row["max"]) == (min(values), max(values))


def test_every_run_beats_the_bigram_and_its_curves_are_whole():
    corpus = lm_corpus(ml.VOCAB)
    bigram = bigram_lm(corpus.train_ids, corpus.vocab_size, beta=ml.BIGRAM_BETA)
    assert math.isclose(TABLE["bigram"], bigram.nll(corpus.held_out_ids), rel_tol=1e-12)
    steps = TABLE["config"]["steps"]
    for r in RUNS:
        assert r["held_out"] < TABLE["bigram"], (r["setting"], r["lr"], r["seed"])
        assert [s for s, _ in r["held_out_curve"]] == list(range(0, steps + 1, ml.EVAL_EVERY))
        assert r["held_out"] == r["held_out_curve"][-1][1]
        assert len(r["train_curve"]) == steps // ml.BLOCK and len(r["first_losses"]) == ml.FIRST
        # step 0 is the untrained model: about ln(vocab), i.e. no better than a uniform guess
        assert abs(r["held_out_curve"][0][1] - math.log(ml.VOCAB)) < 0.05


def test_each_rung_changes_one_thing_at_matched_size():
    models = [ml.build(rung, ml.matched_d_ff(rung)) for rung in range(len(ml.RUNGS))]
    gpt, rms, no_bias, swiglu, rope, gqa = models
    block = [m.blocks[0] for m in models]
    assert type(gpt) is GPT and isinstance(block[0].norm1, nn.LayerNorm)
    assert isinstance(block[0].ffn, FeedForward) and block[0].attn.w_q.bias is not None
    assert isinstance(block[1].norm1, RMSNorm) and isinstance(rms.norm, RMSNorm)
    assert block[1].attn.w_q.bias is not None and block[1].ffn.linear1.bias is not None
    assert block[2].attn.w_q.bias is None and block[2].ffn.linear1.bias is None
    assert isinstance(block[2].ffn, FeedForward) and isinstance(block[3].ffn, SwiGLUFeedForward)
    assert hasattr(no_bias, "position_embedding") and hasattr(swiglu, "position_embedding")
    assert type(rope) is ModernLM and rope.config.num_kv_heads == ml.HEADS
    assert type(gqa) is ModernLM and gqa.config.num_kv_heads == 2
    n_gpt = ml.count(gpt)
    for model, row in zip(models, TABLE["settings"], strict=True):
        assert ml.count(model) == row["parameters"]
        assert abs(row["parameters"] - n_gpt) / n_gpt < 0.005  # matched to 0.5 %


def test_the_off_ladder_setting_is_gpt_with_rope_and_nothing_else():
    """GPT + RoPE: rung 0's norms, FFN and biases; no position parameters; q and k rotated (the
    scores of a query and a key depend only on their distance); matched in size to GPT."""
    model = ml.build(ml.GPT_ROPE, ml.matched_d_ff(ml.GPT_ROPE)).eval()
    block = model.blocks[0]
    assert type(model) is GPT and isinstance(block.norm1, nn.LayerNorm)
    assert isinstance(block.ffn, FeedForward) and block.ffn.linear1.bias is not None
    assert block.attn.w_q.bias is not None and block.attn.qk_transform is not None
    assert not list(model.position_embedding.parameters())
    (row,) = TABLE["off_ladder"]
    assert ml.count(model) == row["parameters"]
    assert abs(row["parameters"] - row_gpt()) / row_gpt() < 0.005  # matched to 0.5 %
    # no position table: one token repeated gives the same logits at every position
    with torch.no_grad():
        logits = model(torch.full((1, 8), 5))
    assert torch.allclose(logits, logits[:, :1].expand_as(logits), atol=1e-5)


def row_gpt() -> int:
    return TABLE["settings"][0]["parameters"]


def test_the_stored_checkpoint_is_the_rope_rung_of_seed_0():
    ckpt = torch.load(ml.CHECKPOINT, weights_only=True)
    model = ml.build(ml.ROPE, ml.matched_d_ff(ml.ROPE)).eval()
    missing, unexpected = model.load_state_dict(
        {k: v.float() for k, v in ckpt["state_dict"].items()}, strict=False
    )
    assert missing == ["lm_head.weight"] and not unexpected
    loss = evaluate_lm(model, lm_corpus(ml.VOCAB).held_out_ids, block=ml.CONTEXT)
    assert abs(loss - stored(ml.RUNGS[ml.ROPE], ml.LR, 0)["held_out"]) < 0.01  # float16 weights


def _rerun(rung: int, lr: float, seed: int) -> None:
    record, _ = ml.run(rung, seed, lr, TABLE["config"]["steps"], stop_after=ml.FIRST)
    old = stored(ml.NAMES[rung], lr, seed)
    assert (
        max(abs(a - b) for a, b in zip(record["first_losses"], old["first_losses"], strict=True))
        < 1e-5
    )
    assert abs(record["held_out_curve"][0][1] - old["held_out_curve"][0][1]) < 1e-5


@pytest.mark.parametrize("rung", [0, ml.GQA, ml.GPT_ROPE], ids=["GPT", "ModernLM", "GPT+RoPE"])
def test_the_first_steps_reproduce_the_stored_run(rung):
    _rerun(rung, ml.LR, 0)


@pytest.mark.slow
@pytest.mark.parametrize(
    "rung, lr, seed",
    [(rung, ml.LR, 1) for rung in range(len(ml.NAMES))]
    + [(0, ml.HIGH_LR, 2), (ml.GQA, ml.HIGH_LR, 2)],
)
def test_the_first_steps_of_every_rung_reproduce_the_stored_run(rung, lr, seed):
    _rerun(rung, lr, seed)
