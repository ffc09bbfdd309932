"""Generation speed with and without the KV cache: tokens per second and the speed-up.

    python benchmarks/bench_kv_cache.py                  # prompts of 16 and 256, 256 new tokens
    python benchmarks/bench_kv_cache.py --prompts 16 --new 64 --repeats 1

The model is lecture 11's tiny GPT shape (4 layers, d = 128, 4 heads, vocabulary 512) with a
context of 512 so that a 256-token prompt plus 256 new tokens fit; random weights (speed does
not depend on them). Greedy decoding (``temperature=0``) with
:func:`course_lib.generate`, ``use_cache=True`` and ``use_cache=False``; both give the same
tokens, which the script checks. One thread (``--threads``).

* time: best of ``--repeats`` runs (the minimum is the least disturbed by other processes);
* tokens/s: new tokens divided by that time; speed-up: cached tokens/s / uncached tokens/s.

Without the cache, step ``t`` runs the whole model on ``prompt + t`` tokens (its cost grows with
the length, and attention's quadratically); with it, the prompt is processed once and every
step runs on one token, attending to the cached keys and values. Writes
``benchmarks/results/kv_cache.json`` and prints a table. A benchmark, not a test: it asserts
only that both ways give the same tokens.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import torch

from course_lib import GPT, GPTConfig, generate, seed_everything

RESULTS = Path(__file__).resolve().parent / "results"


def best_time(fn, repeats: int) -> tuple[float, torch.Tensor]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--new", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS / "kv_cache.json")
    args = parser.parse_args()

    seed_everything(0, threads=args.threads)
    context = max(args.prompts) + args.new
    model = GPT(
        GPTConfig(vocab_size=512, context_length=context, d_model=128, num_heads=4, num_layers=4)
    )
    model.eval()
    rows = []
    print(f"{'prompt':>6} {'new':>5} {'no cache tok/s':>15} {'cache tok/s':>12} {'speed-up':>9}")
    for n in args.prompts:
        ids = torch.randint(0, 512, (1, n), generator=torch.Generator().manual_seed(n))

        def run(use_cache: bool, ids=ids):
            return generate(model, ids, args.new, temperature=0, use_cache=use_cache)

        t_off, out_off = best_time(lambda: run(False), args.repeats)
        t_on, out_on = best_time(lambda: run(True), args.repeats)
        if not torch.equal(out_on, out_off):
            raise AssertionError("cache on and off generated different tokens")
        row = {
            "prompt": n,
            "new_tokens": args.new,
            "no_cache_tokens_per_s": args.new / t_off,
            "cache_tokens_per_s": args.new / t_on,
            "speedup": t_off / t_on,
        }
        rows.append(row)
        print(f"{n:>6} {args.new:>5} {row['no_cache_tokens_per_s']:>15.1f} "
              f"{row['cache_tokens_per_s']:>12.1f} {row['speedup']:>8.2f}x", flush=True)  # fmt: skip
    meta = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": args.threads,
        "repeats": args.repeats,
        "model": {
            "d_model": 128,
            "num_layers": 4,
            "num_heads": 4,
            "vocab": 512,
            "context": context,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
