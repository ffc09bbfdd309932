"""The course's scorer against lm-evaluation-harness 0.4.13 end to end (slow tier: ~20 s).

lm-eval runs two tasks built from the shipped items (ARC-Easy 5-shot, HellaSwag 0-shot) through
a local task YAML (``dataset_path: json``: nothing downloaded) on an in-memory tiny Llama
(``HFLM(pretrained=model)``); every per-choice log-likelihood must equal the course's
``loglikelihood`` to 1e-4 and every item's ``acc`` and ``acc_norm`` decision must be the same.
The 5-shot contexts are longer than the model's window of 128 tokens: left truncation is
exercised on every ARC item.
"""

from __future__ import annotations

import json

import pytest
import torch

from course_lib.evaluation import (
    choice_requests,
    fewshot_prompt,
    is_correct,
    load_benchmark,
    loglikelihood,
)

pytestmark = pytest.mark.slow

YAML = """task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
  cache_dir: {cache}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{context}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{gold}}}}"
metric_list:
  - metric: acc
  - metric: acc_norm
"""


def test_scores_and_decisions_equal_lm_eval(tmp_path, monkeypatch):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from course_lib.data.language_modeling import lm_tokenizer

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bpe = lm_tokenizer(1024)
    tk = Tokenizer(models.BPE(vocab=dict(bpe.vocab), merges=[tuple(m) for m in bpe.merges]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tk, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(bpe), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
    )  # fmt: skip
    model = LlamaForCausalLM(config).eval()

    arc = load_benchmark("arc_easy")
    tasks = {
        "course_arc_easy_5shot": [
            {**it, "context": fewshot_prompt(arc["shots"], it["query"])}
            for it in arc["items"][:200]
        ],
        "course_hellaswag": [
            {**it, "context": it["query"]} for it in load_benchmark("hellaswag")["items"][:100]
        ],
    }
    for task, items in tasks.items():
        data = tmp_path / f"{task}.jsonl"
        data.write_text("".join(json.dumps(it) + "\n" for it in items), encoding="utf-8")
        (tmp_path / f"{task}.yaml").write_text(
            YAML.format(task=task, data=data, cache=tmp_path / "cache"), encoding="utf-8"
        )
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=16, device="cpu")
    out = lm_eval.simple_evaluate(
        model=lm, tasks=list(tasks), task_manager=TaskManager(include_path=str(tmp_path)),
        log_samples=True, num_fewshot=0,
    )  # fmt: skip

    worst, decisions, n_choices = 0.0, 0, 0
    for task, items in tasks.items():
        samples = sorted(out["samples"][task], key=lambda s: s["doc_id"])
        assert len(samples) == len(items)
        for sample, item in zip(samples, items, strict=True):
            ours = loglikelihood(
                model, tokenizer, choice_requests(item["context"], item["choices"])
            )
            theirs = [float(r[0][0]) for r in sample["resps"]]
            worst = max(worst, *(abs(o[0] - t) for o, t in zip(ours, theirs, strict=True)))
            n_choices += len(theirs)
            lls = [o[0] for o in ours]
            for rule in ("acc", "acc_norm"):
                assert float(is_correct(lls, item["choices"], item["gold"], rule)) == sample[rule]
                decisions += 1
    assert worst <= 1e-4, worst
    assert decisions == 2 * 300
    assert n_choices == sum(len(it["choices"]) for items in tasks.values() for it in items)
