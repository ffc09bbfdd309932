"""Generation speed on a real model: the course's ``generate`` + ``ModernLM`` vs ``transformers``.

    python benchmarks/bench_smollm2_generate.py            # 64 new tokens, best of 3, 1 thread
    python benchmarks/bench_smollm2_generate.py --new 32 --repeats 1

Both hold the same SmolLM2-135M-Instruct weights: ours from :func:`course_lib.pretrained.
load_smollm2`, theirs ``LlamaForCausalLM.from_pretrained(dir, gguf_file=...)`` from the same
GGUF file (float32; loading it is not timed). Greedy decoding with the KV
cache, one prompt, ``--new`` new tokens, one thread; the script checks that both give the same
tokens. Time: best of ``--repeats`` runs after one warm-up. Prints tokens per second and the
ratio ``transformers time / our time`` (> 1: ours is faster). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import platform

import torch

from course_lib import generate, seed_everything
from course_lib.pretrained import load_smollm2, smollm2_path
from course_lib.timing import best_time

PROMPT = "The three most important ideas in the history of science are"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    seed_everything(0, threads=args.threads)

    from transformers import LlamaForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    model, tokenizer = load_smollm2()
    path = smollm2_path()
    reference = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name).eval()
    ids = torch.tensor([tokenizer.encode(PROMPT)])

    def ours():
        return generate(model, ids, args.new, temperature=0, use_cache=True)

    def theirs():
        with torch.no_grad():
            return reference.generate(
                ids, attention_mask=torch.ones_like(ids), max_new_tokens=args.new,
                min_new_tokens=args.new, do_sample=False, use_cache=True, pad_token_id=2,
            )  # fmt: skip

    same = torch.equal(ours(), theirs())
    if not same:
        raise AssertionError("the course's generate and transformers' gave different tokens")
    t_ours = best_time(ours, args.repeats)
    t_theirs = best_time(theirs, args.repeats)
    print(f"SmolLM2-135M-Instruct, prompt {ids.shape[1]} tokens, {args.new} new tokens, greedy, "
          f"KV cache, {args.threads} thread(s), best of {args.repeats}; {platform.processor() or platform.machine()}, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'':>14} {'seconds':>8} {'tokens/s':>9}")
    print(f"{'course':>14} {t_ours:8.3f} {args.new / t_ours:9.1f}")
    print(f"{'transformers':>14} {t_theirs:8.3f} {args.new / t_theirs:9.1f}")
    print(f"ratio transformers / course: {t_theirs / t_ours:.2f} (> 1: the course's is faster); "
          f"same tokens: {same}")  # fmt: skip


if __name__ == "__main__":
    main()
