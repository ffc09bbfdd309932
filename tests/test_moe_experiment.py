"""Lecture 16's experiment table (``course_lib/data/moe_experiment.json``) is what
``python -m tools.training.moe_experiment`` computes, and agrees with itself.

The whole script takes about ten CPU-minutes; these tests re-run the first steps of the stored
runs of one seed (same batches, same schedule) and compare the losses to 1e-5, check the models'
sizes, and check that the summary is computed from the runs.
"""

from __future__ import annotations

import json
import math
import statistics

import pytest

from course_lib.data.language_modeling import lm_corpus
from course_lib.nn import MixtureOfExperts, SwiGLUFeedForward
from tools.training import moe_experiment as me

TABLE = json.loads(me.TABLE.read_text())
RUNS = TABLE["runs"]


def stored(setting: str, seed: int) -> dict:
    (run,) = [r for r in RUNS if (r["setting"], r["seed"]) == (setting, seed)]
    return run


def test_every_setting_has_its_seeds():
    keys = [(r["setting"], r["seed"]) for r in RUNS]
    assert len(keys) == len(set(keys))
    assert {s for s, _ in keys} == set(me.SETTINGS)
    for setting in me.SETTINGS:
        assert sorted(seed for s, seed in keys if s == setting) == list(me.SEEDS)
    assert len(me.SEEDS) >= 3
    assert TABLE["config"]["steps"] == me.STEPS and TABLE["config"]["threads"] == 1


def test_the_summary_is_computed_from_the_runs():
    assert [row["setting"] for row in TABLE["summary"]] == list(me.SETTINGS)
    for row in TABLE["summary"]:
        runs = [r for r in RUNS if r["setting"] == row["setting"]]
        values = [r["held_out"] for r in runs]
        assert row["seeds"] == len(values) >= 3
        assert math.isclose(row["mean"], statistics.fmean(values), rel_tol=1e-12)
        assert math.isclose(row["std"], statistics.stdev(values), rel_tol=1e-12)
        assert (row["min"], row["max"]) == (min(values), max(values))
        cpu = statistics.fmean(r["cpu_ms_per_step"] for r in runs)
        assert math.isclose(row["cpu_ms_per_step"], cpu, rel_tol=1e-12)


def test_the_settings_are_matched_as_described():
    models = {s: me.build(s) for s in me.SETTINGS}
    counts = {s: me.parameters(m) for s, m in models.items()}
    assert counts == TABLE["parameters"]
    dense, moe, big = (models[s].blocks[0].ffn for s in ("dense", "MoE (same active)",
                                                            "dense (same total)"))  # fmt: skip
    assert isinstance(dense, SwiGLUFeedForward) and isinstance(moe, MixtureOfExperts)
    size = sum(p.numel() for p in dense.parameters())
    expert = sum(p.numel() for p in moe.experts[0].parameters())
    assert me.TOP_K * expert == size  # same FFN parameters per token
    assert sum(p.numel() for p in big.parameters()) == me.EXPERTS * expert  # same in total
    assert counts["MoE (same active)"]["active"] - counts["dense"]["active"] == (
        me.LAYERS * me.D * me.EXPERTS  # the routers
    )


def test_curves_and_loads_are_whole():
    for r in RUNS:
        assert len(r["first_losses"]) == me.FIRST
        assert len(r["train_curve"]) == me.STEPS // me.BLOCK
        assert r["held_out"] < math.log(me.VOCAB) - 1  # it learned something
        if me.SETTINGS[r["setting"]]["moe"]:
            assert len(r["expert_load"]) == me.LAYERS
            for layer in r["expert_load"]:
                assert len(layer) == me.EXPERTS and math.isclose(sum(layer), 1.0, rel_tol=1e-6)
        else:
            assert "expert_load" not in r


@pytest.mark.parametrize("setting", list(me.SETTINGS))
def test_first_steps_reproduce_the_stored_run(setting):
    corpus = lm_corpus(me.VOCAB)
    again = me.run(setting, 0, me.STEPS, stop_after=me.FIRST, corpus=corpus)
    for got, want in zip(again["first_losses"], stored(setting, 0)["first_losses"], strict=True):
        assert abs(got - want) < 1e-5, (setting, got, want)
