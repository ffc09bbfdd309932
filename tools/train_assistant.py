"""Maintainer's tool: make lecture 14's assistants from lecture 11's GPT and save them.

    python -m tools.train_assistant                     # writes course_lib/data/assistant_*.pt
    python -m tools.train_assistant --steps 200 --dpo-steps 20 --out-dir /tmp/a   # a quick trial

Four runs, one thread each, fixed seeds and step counts (settings in ``SETTINGS``):

1. **instruction tuning** (full fine-tuning) of lecture 11's shipped GPT with the chat tokens
   added, response-only loss (:func:`course_lib.response_loss`), on
   :func:`course_lib.data.instructions.training_instructions` -> ``assistant_tuned.pt``;
2. the same budget from a **random initialisation** (same architecture): the control that shows
   what pretraining contributes (its scores are stored in the tuned checkpoint; no weights);
3. **LoRA** on lecture 11's GPT (adapters on the attention and feed-forward maps, the rest
   frozen), the same data -> ``assistant_lora.pt`` (adapters only);
4. **DPO** on the tuned model with LoRA adapters, reference = the tuned model, pairs from
   :func:`course_lib.data.instructions.preference_pair` on training instructions ->
   ``assistant_dpo.pt`` (adapters only).

Every checkpoint stores float16 weights, the settings, its CPU time, its held-out scores and its
greedy replies to the first held-out prompts (a test checks that loading it reproduces them).
"""

from __future__ import annotations

import argparse
import copy
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from course_lib import load_tiny_gpt, seed_everything
from course_lib.configs import GPTConfig
from course_lib.data.chat import BASE_VOCAB_SIZE, load_chat_tokenizer, render_chat
from course_lib.data.instructions import (
    FAMILIES,
    HELD_OUT_KINDS,
    exact_match,
    held_out_instructions,
    preference_pair,
    training_instructions,
)
from course_lib.models.assistant import (
    ASSISTANT_CHECKPOINTS,
    add_chat_tokens,
    chat_batch,
    generate_replies,
    load_assistant,
    response_loss,
    sequence_logprobs,
)
from course_lib.models.dpo import dpo_loss
from course_lib.models.gpt import GPT
from course_lib.models.lora import apply_lora, trainable_parameter_count
from course_lib.training import train

SETTINGS = {
    "seed": 0,
    "threads": 1,
    "batch_size": 32,
    "sft_steps": 2200,
    "sft_lr": 1e-3,
    "dropout": 0.0,
    "random_lr": 1e-3,
    "lora_steps": 1500,
    "lora_lr": 3e-3,
    "lora_r": 8,
    "lora_alpha": 16,
    "lora_targets": ["w_q", "w_k", "w_v", "w_o", "linear1", "linear2"],
    "dpo_steps": 150,
    "dpo_lr": 2e-5,
    "dpo_beta": 0.1,
    "dpo_pairs": 16,
    "stored_every": 30,  # every 30th held-out reply is stored (10 per kind, 2 per family)
}


def conversations(tokenizer, instructions) -> list[tuple[list[int], list[bool]]]:
    return [
        render_chat(
            [{"role": "user", "content": x.prompt}, {"role": "assistant", "content": x.answer}],
            tokenizer,
        )  # fmt: skip
        for x in instructions
    ]


def evaluate(model, tokenizer, per_family: int | None = None) -> dict:
    """Exact-match per held-out kind and family: ``{kind: {family: [0/1, ...]}}`` + replies."""
    scores, replies = {}, {}
    for kind in HELD_OUT_KINDS:
        items = held_out_instructions(kind) if per_family is None else held_out_instructions(
            kind, per_family)  # fmt: skip
        got = generate_replies(model, tokenizer, [x.prompt for x in items], max_new_tokens=40)
        scores[kind] = {
            f: [int(exact_match(r, x.answer)) for r, x in zip(got, items, strict=True)
                if x.family == f]
            for f in FAMILIES
        }  # fmt: skip
        replies[kind] = got
    return {"correct": scores, "replies": replies}


def summary(result: dict) -> str:
    rows = []
    for kind, fam in result["correct"].items():
        one = [c for f in ("first", "last", "count") for c in fam[f]]
        parts = " ".join(f"{f} {np.mean(c):.2f}" for f, c in fam.items())
        rows.append(f"  {kind:17s} one-answer {np.mean(one):.3f} | {parts}")
    return "\n".join(rows)


def sft(model, tokenizer, steps: int, lr: float, cfg: dict, desc: str):
    data = conversations(tokenizer, training_instructions(steps * cfg["batch_size"], cfg["seed"]))
    b = cfg["batch_size"]

    def batches(step: int):
        return chat_batch(data[step * b : (step + 1) * b])

    start = time.process_time()
    log = train(model, batches, lambda m, batch: response_loss(m, *batch), steps=steps, lr=lr,
                warmup=min(100, steps // 10), schedule="cosine", weight_decay=0.0,
                seed=cfg["seed"], threads=cfg["threads"], desc=desc)  # fmt: skip
    return log, time.process_time() - start


@torch.no_grad()
def margins(model, tokenizer, pairs) -> torch.Tensor:
    """``log p(chosen) - log p(rejected)`` per held-out pair (nats)."""
    chosen, rejected = pairs
    return sequence_logprobs(model, *chosen) - sequence_logprobs(model, *rejected)


def preference_tensors(tokenizer, instructions):
    chosen, rejected = [], []
    for x in instructions:
        good, bad = preference_pair(x)
        user = {"role": "user", "content": x.prompt}
        chosen.append(render_chat([user, {"role": "assistant", "content": good}], tokenizer))
        rejected.append(render_chat([user, {"role": "assistant", "content": bad}], tokenizer))
    return chat_batch(chosen), chat_batch(rejected)


def lora_state(model) -> dict:
    """The adapters, and the token embedding when its chat-token rows were trained."""
    keep = (
        ("lora_", "token_embedding") if model.token_embedding.weight.requires_grad else ("lora_",)
    )
    return {k: v.detach().half() for k, v in model.state_dict().items()
            if any(part in k for part in keep)}  # fmt: skip


def train_new_token_rows(model, n_old: int) -> int:
    """Make the embedding rows of the chat tokens trainable (as peft's
    ``trainable_token_indices``): the other rows get a zero gradient, so AdamW (no weight decay)
    leaves them exactly as they were. Returns the number of trainable parameters."""
    weight = model.token_embedding.weight
    weight.requires_grad_(True)
    keep = torch.zeros_like(weight)
    keep[n_old:] = 1.0
    weight.register_hook(lambda grad: grad * keep)
    return trainable_parameter_count(model) - n_old * weight.shape[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=SETTINGS["sft_steps"])
    parser.add_argument("--lora-steps", type=int, default=SETTINGS["lora_steps"])
    parser.add_argument("--dpo-steps", type=int, default=SETTINGS["dpo_steps"])
    parser.add_argument("--eval-per-family", type=int, default=None)
    parser.add_argument("--out-dir", type=Path, default=ASSISTANT_CHECKPOINTS["tuned"].parent)
    parser.add_argument("--skip", nargs="*", default=[], help="runs to skip: random lora dpo")
    parser.add_argument(
        "--reuse-tuned",
        action="store_true",
        help="load assistant_tuned.pt from --out-dir instead of stages 0-2",
    )
    args = parser.parse_args()
    cfg = dict(SETTINGS, sft_steps=args.steps, lora_steps=args.lora_steps,
               dpo_steps=args.dpo_steps)  # fmt: skip
    args.out_dir.mkdir(parents=True, exist_ok=True)
    seed_everything(cfg["seed"], threads=cfg["threads"])
    total_start = time.process_time()
    tok = load_chat_tokenizer()
    base, _ = load_tiny_gpt()
    add_chat_tokens(base, len(tok))
    config = GPTConfig(**dict(asdict(base.config), dropout=cfg["dropout"]))
    pretrained = GPT(config)
    pretrained.load_state_dict(base.state_dict())
    ev = args.eval_per_family
    lora_settings = {"r": cfg["lora_r"], "alpha": cfg["lora_alpha"],
                     "target_names": cfg["lora_targets"]}  # fmt: skip

    def save_and_score(name: str, payload: dict, state: dict) -> dict:
        """Save, load back as the lecture does (float16, adapters merged), score that model and
        store its scores and first replies in the same file."""
        path = args.out_dir / ASSISTANT_CHECKPOINTS[name].name
        payload = dict(payload, config=asdict(config), training=cfg, state_dict=state, replies={})
        torch.save(payload, path)
        model, _ = load_assistant(name, path)
        result = evaluate(model, tok, ev)
        payload["scores"] = result["correct"]
        payload["replies"] = {k: v[:: cfg["stored_every"]] for k, v in result["replies"].items()}
        torch.save(payload, path)
        print(f"saved {path} ({path.stat().st_size / 1e6:.2f} MB)\n{summary(result)}", flush=True)
        return result

    def tuned_and_control() -> GPT:
        # 0. the base model, as it is
        base_result = evaluate(pretrained, tok, ev)
        print(f"base model\n{summary(base_result)}", flush=True)

        # 1. instruction tuning, full fine-tuning
        tuned = copy.deepcopy(pretrained)
        log, seconds = sft(tuned, tok, cfg["sft_steps"], cfg["sft_lr"], cfg, "instruction tuning")
        print(f"tuned: {seconds:.0f} CPU-s, last loss {np.mean(log.losses[-50:]):.3f}", flush=True)
        extra = {"base_scores": base_result["correct"], "cpu_seconds": {"tuned": seconds},
                 "trainable_parameters": trainable_parameter_count(tuned),
                 "losses": log.smoothed(50)[::10]}  # fmt: skip

        # 2. the random-init control (scores only; stored with the tuned model)
        if "random" not in args.skip:
            seed_everything(cfg["seed"] + 1, threads=cfg["threads"])
            scratch = GPT(config)
            log_r, seconds_r = sft(
                scratch, tok, cfg["sft_steps"], cfg["random_lr"], cfg, "random init"
            )
            random_result = evaluate(scratch, tok, ev)
            print(f"random init: {seconds_r:.0f} CPU-s, last loss {np.mean(log_r.losses[-50:]):.3f}\n"
                  f"{summary(random_result)}", flush=True)  # fmt: skip
            extra["random_init_scores"] = random_result["correct"]
            extra["cpu_seconds"]["random_init"] = seconds_r
        state = {k: v.half() for k, v in tuned.state_dict().items() if k != "lm_head.weight"}
        save_and_score("tuned", extra, state)
        return load_assistant("tuned", args.out_dir / ASSISTANT_CHECKPOINTS["tuned"].name)[0]

    if args.reuse_tuned:  # stages 0-2 were run before: they are deterministic, reuse them
        tuned, _ = load_assistant("tuned", args.out_dir / ASSISTANT_CHECKPOINTS["tuned"].name)
    else:
        tuned = tuned_and_control()

    # 3. LoRA on the pretrained model
    if "lora" not in args.skip:
        seed_everything(cfg["seed"], threads=cfg["threads"])
        lora_model = copy.deepcopy(pretrained)
        apply_lora(lora_model, cfg["lora_r"], cfg["lora_alpha"], cfg["lora_targets"])
        n_trainable = train_new_token_rows(lora_model, BASE_VOCAB_SIZE)
        log_l, seconds_l = sft(lora_model, tok, cfg["lora_steps"], cfg["lora_lr"], cfg, "LoRA")
        print(f"LoRA: {n_trainable} trainable parameters, {seconds_l:.0f} CPU-s", flush=True)
        save_and_score("lora", {"base": "pretrained", "lora": lora_settings,
                                "trainable_parameters": n_trainable, "cpu_seconds": seconds_l,
                                "losses": log_l.smoothed(50)[::10]}, lora_state(lora_model))  # fmt: skip

    # 4. DPO with LoRA adapters on the tuned model; the reference is the tuned model
    if "dpo" not in args.skip:
        seed_everything(cfg["seed"], threads=cfg["threads"])
        held_pairs = preference_tensors(tok, held_out_instructions("new_combinations"))
        before = margins(tuned, tok, held_pairs)
        reference = copy.deepcopy(tuned).eval()
        policy = copy.deepcopy(tuned)
        apply_lora(policy, cfg["lora_r"], cfg["lora_alpha"], cfg["lora_targets"])
        n = cfg["dpo_pairs"]
        items = training_instructions(cfg["dpo_steps"] * n, cfg["seed"] + 7)
        pairs = [preference_tensors(tok, items[s * n : (s + 1) * n])
                 for s in range(cfg["dpo_steps"])]  # fmt: skip
        with torch.no_grad():
            refs = [(sequence_logprobs(reference, *c), sequence_logprobs(reference, *r))
                    for c, r in pairs]  # fmt: skip

        def dpo_step_loss(model, batch):
            (chosen, rejected), (ref_c, ref_r) = batch
            losses, _, _ = dpo_loss(sequence_logprobs(model, *chosen),
                                    sequence_logprobs(model, *rejected), ref_c, ref_r,
                                    beta=cfg["dpo_beta"])  # fmt: skip
            return losses.mean()

        start = time.process_time()
        log_d = train(policy, lambda s: (pairs[s], refs[s]), dpo_step_loss,
                      steps=cfg["dpo_steps"], lr=cfg["dpo_lr"], warmup=10, schedule="cosine",
                      seed=cfg["seed"], threads=cfg["threads"], desc="DPO")  # fmt: skip
        seconds_d = time.process_time() - start
        path = args.out_dir / ASSISTANT_CHECKPOINTS["dpo"].name
        save_and_score("dpo", {"base": "tuned", "lora": lora_settings, "cpu_seconds": seconds_d,
                               "losses": log_d.losses}, lora_state(policy))  # fmt: skip
        after = margins(load_assistant("dpo", path)[0], tok, held_pairs)
        ckpt = torch.load(path, weights_only=True)
        ckpt["margins"] = {"before": before.tolist(), "after": after.tolist()}
        torch.save(ckpt, path)
        print(f"DPO: {seconds_d:.0f} CPU-s; held-out margin {before.mean():.2f} -> "
              f"{after.mean():.2f} nats", flush=True)  # fmt: skip
    print(f"total CPU time {time.process_time() - total_start:.0f} s")


if __name__ == "__main__":
    main()
