"""SmolLM2-135M-Instruct's stored benchmark scores (lecture 18): the runs the scoring tool
documents, and agreement with lm-eval 0.4.13 run through ``transformers``' own load of the same
GGUF file (a pipeline that shares nothing with the course's but the file)."""

import numpy as np

from course_lib.evaluation import choose, item_requests, load_benchmark, load_stored_scores

#: float32 sums of a few dozen tokens' log-probabilities, computed by two implementations
TOL_SMOLLM2 = 2e-4  # measured: 6e-5 at most


def test_stored_scores_hold_the_documented_runs():
    from tools.training.smollm2_benchmarks import RUNS

    stored = load_stored_scores("smollm2")
    assert stored["settings"]["scale"] == 1.0
    assert set(stored["runs"]) == set(RUNS)
    for name, (task_name, n_items, options) in RUNS.items():
        run = stored["runs"][name]
        assert (run["task"], run["options"], len(run["ll"])) == (task_name, options, n_items)
        task = load_benchmark(task_name)
        for k, item in enumerate(task["items"][:n_items]):
            requests, _, gold = item_requests(task, item, **options)
            assert len(run["ll"][k]) == len(run["greedy"][k]) == len(requests)
            assert run["gold"][k] == gold
    assert stored["cpu_seconds"]["total"] <= 15 * 60  # the budget of the shared machine


def test_smollm2_scores_equal_lm_eval_through_transformers():
    """Two pipelines that share nothing but the GGUF file: the course's reader, dequantiser,
    tokenizer and loglikelihood; transformers' loader and tokenizer with lm-eval's HFLM."""
    stored, reference = load_stored_scores("smollm2"), load_stored_scores("smollm2_lm_eval")
    n_decisions = 0
    for task_name, ref in reference["runs"].items():
        task = load_benchmark(task_name)
        for k in range(ref["items"]):
            ours, theirs = stored["runs"][task_name]["ll"][k], ref["ll"][k]
            np.testing.assert_allclose(ours, theirs, atol=TOL_SMOLLM2)
            for rule in ("acc", "acc_norm"):
                choices = task["items"][k]["choices"]
                assert choose(ours, choices, rule) == choose(theirs, choices, rule)
                n_decisions += 1
    assert n_decisions == 80
