"""Maintainer's tool: ``transformers``' logits and greedy tokens for SmolLM2-135M-Instruct, stored
so that lecture 13 can compare the course's ModernLM with them without loading ``transformers``'
copy (14 s on this machine, more on a busy one, plus importing transformers).

    python -m tools.training.smollm2_reference        # writes course_lib/data/smollm2_reference.json

For each prompt of ``PROMPTS``: ``LlamaForCausalLM.from_pretrained(dir, gguf_file=...)`` (the
same GGUF file as :func:`course_lib.pretrained.load_smollm2`, float32, one thread) gives the
logits at every position; the file keeps the prompt's ids, the logits of ``PROBE_IDS`` at every
position and the 10 largest logits of the last position (ids and values), the largest
difference from the course's model over *all* positions and the whole vocabulary (measured
here), and ``transformers``' greedy continuation of ``NEW_TOKENS`` tokens with the KV cache.
Deterministic: a rerun gives the same file. ``tests/test_smollm2.py`` (slow tier) holds the
stored values to a fresh ``transformers`` run.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

from course_lib import generate, seed_everything
from course_lib.pretrained import load_smollm2, smollm2_path

OUT = Path(__file__).resolve().parents[2] / "course_lib" / "data" / "smollm2_reference.json"
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Attention is all you need because",
]
PROBE_IDS = [0, 1, 2, 28, 504, 1604, 3575, 12345, 30000, 49151]  # fixed token ids
NEW_TOKENS = 24


def reference(model, tokenizer, hf_model) -> list[dict]:
    """The stored record of each prompt (see the module docstring)."""
    rows = []
    for prompt in PROMPTS:
        ids = torch.tensor([tokenizer.encode(prompt)])
        with torch.no_grad():
            theirs = hf_model(ids).logits[0]  # (n, vocab)
            ours = model(ids)[0]
        top = theirs[-1].topk(10)
        greedy = hf_model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS, do_sample=False, use_cache=True, pad_token_id=2,
        )  # fmt: skip
        rows.append({
            "prompt": prompt,
            "ids": ids[0].tolist(),
            "probe_logits": theirs[:, PROBE_IDS].tolist(),  # (n, len(PROBE_IDS))
            "top_ids": top.indices.tolist(),
            "top_logits": top.values.tolist(),
            "max_abs_diff_all_logits": float((ours - theirs).abs().max()),
            "greedy_ids": greedy[0, ids.shape[1]:].tolist(),
            "course_greedy_ids": generate(model, ids, NEW_TOKENS, temperature=0)[0, ids.shape[1]:].tolist(),
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    seed_everything(0, threads=1)
    from transformers import LlamaForCausalLM, __version__
    from transformers.utils import logging

    logging.set_verbosity_error()
    model, tokenizer = load_smollm2()
    path = smollm2_path()
    hf_model = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name).eval()
    result = {
        "reference": f"transformers {__version__} LlamaForCausalLM.from_pretrained(gguf_file=...), float32",
        "probe_ids": PROBE_IDS,
        "prompts": reference(model, tokenizer, hf_model),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}; largest logit difference "
          f"{max(r['max_abs_diff_all_logits'] for r in result['prompts']):.2e}")  # fmt: skip


if __name__ == "__main__":
    main()
