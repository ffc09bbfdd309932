"""Maintainer's tool: lm-evaluation-harness 0.4.13 on SmolLM2-135M-Instruct, on a sample of
lecture 18's items, through a pipeline that shares nothing with the course's:

    python -m tools.training.smollm2_lm_eval_sample     # writes course_lib/data/smollm2_lm_eval_sample.json

``transformers`` loads the model and its tokenizer from the same GGUF file itself
(``from_pretrained(folder, gguf_file=...)``: its own reader, its own dequantiser, its own
tokenizer), and lm-eval's ``HFLM(pretrained=model, tokenizer=tokenizer)`` scores the requests
of the first 20 ARC-Easy, 10 HellaSwag and 10 PIQA items with its own ``loglikelihood``. The
lecture compares these numbers with the course's (its GGUF reader, its dequantiser, its
tokenizer, its ``loglikelihood``). One thread; about two CPU-minutes, most of it the load.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from course_lib import seed_everything
from course_lib.evaluation import item_requests, load_benchmark
from course_lib.pretrained import smollm2_path

OUT = Path(__file__).resolve().parents[2] / "course_lib" / "data" / "smollm2_lm_eval_sample.json"
SAMPLE = {"arc_easy": 20, "hellaswag": 10, "piqa": 10}


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    seed_everything(0, threads=1)
    import lm_eval
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoTokenizer, LlamaForCausalLM

    start = time.process_time()
    path = smollm2_path()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name).eval()
    load_seconds = time.process_time() - start
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=1, device="cpu")
    runs = {}
    for task_name, n in SAMPLE.items():
        task = load_benchmark(task_name)
        requests, sizes = [], []
        for item in task["items"][:n]:
            reqs, _, _ = item_requests(task, item)
            requests += reqs
            sizes.append(len(reqs))
        instances = [
            Instance("loglikelihood", {}, pair, i, metadata=(task_name, i, 1))
            for i, pair in enumerate(requests)
        ]
        scores = lm.loglikelihood(instances, disable_tqdm=True)
        ll, at = [], 0
        for k in sizes:
            ll.append([round(s[0], 5) for s in scores[at : at + k]])
            at += k
        runs[task_name] = {"items": n, "ll": ll}
    out = {
        "reference": f"lm-eval {lm_eval.__version__} HFLM(pretrained=LlamaForCausalLM.from_"
        "pretrained(gguf_file=...)), transformers' own tokenizer from the same GGUF file",
        "tokenizer_adds": tokenizer.encode("a") != tokenizer.encode("a", add_special_tokens=False),
        "cpu_seconds": {
            "load": round(load_seconds, 1),
            "total": round(time.process_time() - start, 1),
        },  # fmt: skip
        "runs": runs,
    }
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {out['cpu_seconds']}, tokenizer adds specials: {out['tokenizer_adds']}")


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
    else:
        main()
