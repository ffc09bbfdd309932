"""Maintainer's tool: make lecture 17's GRPO assistant from lecture 14's tuned model.

    python -m tools.training.train_rl                       # writes course_lib/data/assistant_grpo.pt
    python -m tools.training.train_rl --validation-only     # the candidates on the validation split only
    python -m tools.training.train_rl --steps 4 --out-dir /tmp/g --quick   # a trial of the plumbing
    torchrun --standalone --nproc_per_node=2 -m tools.training.train_rl --steps 4 --out-dir /tmp/g --quick

**Targets, stated before any held-out set was scored** (issue 45): GRPO raises the rewrite
families' (reverse, commas) exact match on **unseen words** (50.0 % for the tuned model) by at
least 10 points, while the one-answer families (first, last, count) end no lower than 2 points
below the tuned model on each held-out kind. If the run misses them, lecture 17 says what it
measured and why.

One thread, fixed seeds and step counts (``SETTINGS``). Stages:

1. **candidates on the validation split**: each trains LoRA adapters (rank 8, as lecture 14's
   DPO) on the tuned model with :func:`course_lib.grpo_train`, on training prompts and phrasings
   only (:func:`course_lib.data.instructions.training_instructions`), rewarded by the
   exact-match checker; each is scored by greedy exact match on
   :func:`course_lib.data.instructions.validation_instructions` (training words and phrasings,
   lists no training or held-out set uses). :func:`choose` picks one by a rule fixed in advance;
   the held-out sets are scored once, for the chosen run only (**the shipped run**; its CPU time
   is stored);
2. **pass@1 vs pass@G**: ``G`` samples (temperature 1) per held-out prompt (20 per family and
   kind), from the tuned and from the GRPO model: the per-prompt pass rates;
3. **reward hacking**: the chosen settings, from the tuned model again, rewarded by a
   format-only reward (one word, :func:`course_lib.one_word_rewards`); its held-out replies are
   scored by exact match and by the fraction that are one word.

The checkpoint stores float16 adapters, the settings, CPU times, the held-out scores, greedy
replies to every 30th held-out prompt (a test reproduces them), the validation table, the
pass@G samples and the reward-hacking run.

Under ``torchrun`` (``tools/training/distributed.py``) every process samples every rollout with
the same seed (the completions one process samples) and trains on its rows of it
(:func:`course_lib.grpo_train`'s ``rows``; the DAPO loss stays the mean over the whole rollout's
tokens); rank 0 alone scores, chooses (and tells the others) and writes. Two processes give one
process's weights to rounding (``tests/test_distributed_training.py``), not its bits; a
sampled token can flip on that rounding over a long run.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np
import torch

from course_lib import apply_lora, load_chat_tokenizer, seed_everything
from course_lib.data.instructions import (
    FAMILIES,
    HELD_OUT_KINDS,
    ONE_ANSWER_FAMILIES,
    held_out_instructions,
    training_instructions,
    validation_instructions,
)
from course_lib.models.assistant import ASSISTANT_CHECKPOINTS, load_assistant
from course_lib.models.rl import exact_match_rewards, grpo_train, one_word_rewards, sample_group
from tools.training.distributed import (
    ONE_PROCESS,
    Ranks,
    add_device_argument,
    check_batch_size,
    cpu_only,
    finish,
    from_main,
    my_rows,
    start_run,
    wrap,
)
from tools.training.train_assistant import as_shipped, evaluate, lora_state, score_items, summary

REWRITE_FAMILIES = ("reverse", "commas")

SETTINGS = {
    "seed": 0,
    "threads": 1,
    "group_size": 8,  # G completions per prompt
    "prompts_per_rollout": 8,
    "iterations": 2,  # gradient steps per rollout (TRL's num_iterations, the paper's mu)
    "steps": 300,  # gradient steps: 150 rollouts of 8 prompts x 8 completions
    "epsilon_low": 0.2,
    "epsilon_high": 0.2,
    "beta": 0.0,  # TRL's default: no reference model
    "loss_type": "dapo",  # TRL's default
    "scale_rewards": "group",
    "temperature": 1.0,
    "max_new_tokens": 40,
    "lora_r": 8,
    "lora_alpha": 16,
    "lora_targets": ["w_q", "w_k", "w_v", "w_o", "linear1", "linear2"],
    # Tried on the validation split, never on the held-out sets (choose picks one): the
    # learning rate, and which training prompts: all five families, or the two rewrite ones.
    "candidates": [
        {"lr": lr, "families": families} for families in ("all", "rewrites") for lr in (3e-4, 1e-3)
    ],
    "validation_per_family": 100,
    # the rule, fixed before the held-out sets are scored (see choose)
    "max_one_answer_drop": 1.0,  # points of one-answer exact match on validation
    # the targets of the issue, on the held-out sets (checked and printed, never tuned on)
    "target_rewrite_unseen_gain": 10.0,  # points
    "target_one_answer_max_drop": 2.0,  # points, on each held-out kind
    "pass_per_family": 20,  # held-out prompts per family and kind for pass@G
    "hacking_steps": 60,
    "stored_every": 30,  # every 30th held-out reply is stored (10 per kind, 2 per family)
}


def task_stream(cfg: dict, families: str, seed: int):
    """``tasks(i) -> (prompts, answers)`` of rollout ``i``: training instructions (training
    words and phrasings), of all families or of the rewrite families only."""
    n = cfg["prompts_per_rollout"]
    rollouts = -(-cfg["steps"] // cfg["iterations"]) + cfg["hacking_steps"]
    keep = FAMILIES if families == "all" else REWRITE_FAMILIES
    pool = [x for x in training_instructions(3 * n * rollouts, seed) if x.family in keep]

    def tasks(i: int) -> tuple[list[str], list[str]]:
        batch = pool[i * n : (i + 1) * n]
        return [x.prompt for x in batch], [x.answer for x in batch]

    return tasks


def lora_policy(tuned, cfg: dict):
    policy = copy.deepcopy(tuned)
    apply_lora(policy, cfg["lora_r"], cfg["lora_alpha"], cfg["lora_targets"])
    return policy


def run_grpo(tuned, tok, cfg: dict, lr: float, families: str, steps: int, reward,
             ranks: Ranks = ONE_PROCESS):  # fmt: skip
    """LoRA adapters on a copy of ``tuned`` trained with GRPO: ``(policy, GRPOLog)``.

    Under torchrun every process samples every rollout (the same seed: the same completions as
    one process) and trains on its rows of it, in ``DistributedDataParallel``."""
    rollout = cfg["prompts_per_rollout"] * cfg["group_size"]
    check_batch_size(rollout, ranks, "prompts_per_rollout x group_size")
    seed_everything(cfg["seed"], threads=cfg["threads"])
    policy = lora_policy(tuned, cfg)
    several = ranks.world_size > 1  # one process: grpo_train as it was (no rows, no wrapper)
    log = grpo_train(policy, tok, task_stream(cfg, families, cfg["seed"] + 17), steps=steps,
                     group_size=cfg["group_size"], iterations=cfg["iterations"], lr=lr,
                     epsilon_low=cfg["epsilon_low"], epsilon_high=cfg["epsilon_high"],
                     beta=cfg["beta"], loss_type=cfg["loss_type"],
                     scale_rewards=cfg["scale_rewards"], reward=reward,
                     temperature=cfg["temperature"], max_new_tokens=cfg["max_new_tokens"],
                     seed=cfg["seed"], threads=cfg["threads"], progress=ranks.is_main,
                     rows=(lambda t: my_rows(t, ranks)) if several else None,
                     trained=wrap(policy, ranks) if several else None)  # fmt: skip
    return policy, log


def pooled(correct: dict, families) -> float:
    """Exact match (%) pooled over ``families`` of ``{family: [0/1, ...]}``."""
    return 100 * float(np.mean([c for f in families for c in correct[f]]))


def choose(tried: list[dict], cfg: dict) -> int:
    """The rule that picks the settings from validation numbers only (index into ``tried``).

    Acceptable: a one-answer drop of at most ``max_one_answer_drop`` points against the tuned
    model on the validation split. Among those, the highest validation rewrite exact match; if
    none is acceptable, the smallest one-answer drop.
    """
    ok = [i for i, t in enumerate(tried) if t["one_answer_drop"] <= cfg["max_one_answer_drop"]]
    if ok:
        return max(ok, key=lambda i: tried[i]["rewrites"])
    print("no candidate keeps the one-answer families on validation", flush=True)
    return min(range(len(tried)), key=lambda i: tried[i]["one_answer_drop"])


@torch.no_grad()
def pass_counts(model, tok, cfg: dict, seed: int) -> dict:
    """``{kind: {family: [right samples of G, ...]}}`` on ``pass_per_family`` held-out prompts
    per family, ``G`` samples each at temperature 1."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for kind in HELD_OUT_KINDS:
        items = held_out_instructions(kind, cfg["pass_per_family"])
        _, _, replies = sample_group(model, tok, [x.prompt for x in items], cfg["group_size"],
                                     cfg["max_new_tokens"], 1.0, g)  # fmt: skip
        right = exact_match_rewards(replies, [x.answer for x in items
                                              for _ in range(cfg["group_size"])])  # fmt: skip
        per_prompt = right.view(len(items), cfg["group_size"]).sum(dim=1).int().tolist()
        out[kind] = {f: [c for c, x in zip(per_prompt, items, strict=True) if x.family == f]
                     for f in FAMILIES}  # fmt: skip
    return out


def check_targets(tuned_scores: dict, scores: dict, cfg: dict) -> dict:
    gain = pooled(scores["unseen_words"], REWRITE_FAMILIES) - pooled(
        tuned_scores["unseen_words"], REWRITE_FAMILIES)  # fmt: skip
    drops = {k: pooled(tuned_scores[k], ONE_ANSWER_FAMILIES) - pooled(scores[k], ONE_ANSWER_FAMILIES)
             for k in HELD_OUT_KINDS}  # fmt: skip
    met = {"rewrite_unseen_gain": gain, "one_answer_drops": drops,
           "gain_met": gain >= cfg["target_rewrite_unseen_gain"],
           "drops_met": all(d <= cfg["target_one_answer_max_drop"] for d in drops.values())}  # fmt: skip
    print(f"targets: rewrites on unseen words {gain:+.1f} points (target >= "
          f"+{cfg['target_rewrite_unseen_gain']:g}): {'met' if met['gain_met'] else 'MISSED'}; "
          f"one-answer drops {', '.join(f'{k} {d:+.1f}' for k, d in drops.items())} (limit "
          f"{cfg['target_one_answer_max_drop']:g}): {'met' if met['drops_met'] else 'MISSED'}",
          flush=True)  # fmt: skip
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=SETTINGS["steps"])
    parser.add_argument("--out-dir", type=Path, default=ASSISTANT_CHECKPOINTS["grpo"].parent)
    parser.add_argument("--validation-only", action="store_true",
                        help="train and score the candidates on the validation split, save nothing")  # fmt: skip
    parser.add_argument("--quick", action="store_true",
                        help="a plumbing trial: 1 candidate, few prompts, few steps")  # fmt: skip
    add_device_argument(parser)
    args = parser.parse_args()
    cpu_only(args.device, "train_rl")
    ranks = start_run(args.device)
    check_batch_size(SETTINGS["prompts_per_rollout"] * SETTINGS["group_size"], ranks,
                     "prompts_per_rollout x group_size")  # fmt: skip
    main_rank = ranks.is_main  # rank 0 scores, chooses and saves; every process trains
    cfg = dict(SETTINGS, steps=args.steps)
    if args.quick:
        cfg.update(candidates=cfg["candidates"][:1], validation_per_family=4, pass_per_family=2,
                   hacking_steps=2)  # fmt: skip
    seed_everything(cfg["seed"], threads=cfg["threads"])
    total_start = time.process_time()
    tok = load_chat_tokenizer()
    tuned_path = ASSISTANT_CHECKPOINTS["tuned"]  # the shipped tuned model (lecture 14)
    tuned, tuned_meta = load_assistant("tuned", tuned_path)
    lora_settings = {"r": cfg["lora_r"], "alpha": cfg["lora_alpha"],
                     "target_names": cfg["lora_targets"]}  # fmt: skip

    # 1. the candidates, on the validation split only
    val_items = validation_instructions(cfg["validation_per_family"])
    val_tuned = score_items(tuned, tok, val_items) if main_rank else None
    if main_rank:
        print(f"validation ({len(val_items)} prompts): tuned one-answer "
              f"{pooled(val_tuned, ONE_ANSWER_FAMILIES):.1f} %, rewrites "
              f"{pooled(val_tuned, REWRITE_FAMILIES):.1f} %", flush=True)  # fmt: skip
    tried, runs = [], []
    for candidate in cfg["candidates"]:
        policy, log = run_grpo(tuned, tok, cfg, candidate["lr"], candidate["families"],
                               cfg["steps"], exact_match_rewards, ranks)  # fmt: skip
        runs.append((policy, log))
        if not main_rank:
            continue
        shipped = as_shipped(policy, tuned_path, tuned.config, lora_settings, "grpo")
        val = score_items(shipped, tok, val_items)
        tried.append(dict(candidate, one_answer=pooled(val, ONE_ANSWER_FAMILIES),
                          rewrites=pooled(val, REWRITE_FAMILIES),
                          one_answer_drop=pooled(val_tuned, ONE_ANSWER_FAMILIES)
                          - pooled(val, ONE_ANSWER_FAMILIES),
                          cpu_seconds=log.cpu_seconds,
                          first_rewards=float(np.mean(log.rewards[:10])),
                          last_rewards=float(np.mean(log.rewards[-10:]))))  # fmt: skip
        t = tried[-1]
        print(f"  {candidate}: validation one-answer {t['one_answer']:.1f} % (drop "
              f"{t['one_answer_drop']:+.1f}), rewrites {t['rewrites']:.1f} %; reward "
              f"{t['first_rewards']:.2f} -> {t['last_rewards']:.2f} ({log.cpu_seconds:.0f} CPU-s)",
              flush=True)  # fmt: skip
    chosen = from_main(choose(tried, cfg) if main_rank else None, ranks)
    policy, log = runs[chosen]
    if main_rank:
        print(f"chosen on validation: {cfg['candidates'][chosen]}", flush=True)
    if args.validation_only:
        if main_rank:
            print(f"total CPU time {time.process_time() - total_start:.0f} s")
        finish(ranks)
        return
    if main_rank:
        payload, model = held_out_and_pass(args, cfg, tok, tuned, tuned_meta, tuned_path,
                                           lora_settings, val_items, val_tuned, tried, chosen,
                                           policy, log)  # fmt: skip

    # 3. reward hacking: a format-only reward, the chosen settings, from the tuned model
    hacked, hack_log = run_grpo(tuned, tok, cfg, cfg["candidates"][chosen]["lr"], "all",
                                cfg["hacking_steps"],
                                lambda replies, answers: one_word_rewards(replies),
                                ranks)  # fmt: skip
    if main_rank:
        hacking(args, cfg, tok, tuned, tuned_path, lora_settings, payload, hacked, hack_log,
                total_start)  # fmt: skip
    finish(ranks)


def held_out_and_pass(args, cfg, tok, tuned, tuned_meta, tuned_path, lora_settings, val_items,
                      val_tuned, tried, chosen, policy, log):  # fmt: skip
    """Rank 0: the chosen run saved and scored once on the held-out sets; pass@1 vs pass@G."""
    # the held-out sets, once, for the chosen run (the shipped run)
    path = args.out_dir / ASSISTANT_CHECKPOINTS["grpo"].name
    payload = {"base": "tuned", "lora": lora_settings, "config": tuned_meta["config"],
               "training": cfg, "grpo": cfg["candidates"][chosen],
               "cpu_seconds": log.cpu_seconds, "rewards": log.rewards,
               "clip_fractions": log.clip_fractions, "losses": log.losses,
               "validation": {"items": len(val_items), "tuned": val_tuned, "tried": tried,
                              "chosen": chosen},
               "state_dict": lora_state(policy), "replies": {}}  # fmt: skip
    torch.save(payload, path)
    model, _ = load_assistant("grpo", path)
    result = evaluate(model, tok)
    payload["scores"] = result["correct"]
    payload["replies"] = {k: v[:: cfg["stored_every"]] for k, v in result["replies"].items()}
    payload["targets"] = check_targets(tuned_meta["scores"], result["correct"], cfg)
    print(f"GRPO: {log.cpu_seconds:.0f} CPU-s\n{summary(result)}", flush=True)

    # 2. pass@1 vs pass@G, before and after
    payload["pass_counts"] = {"tuned": pass_counts(tuned, tok, cfg, cfg["seed"] + 5),
                              "grpo": pass_counts(model, tok, cfg, cfg["seed"] + 5)}  # fmt: skip

    return payload, model


def hacking(args, cfg, tok, tuned, tuned_path, lora_settings, payload, hacked, hack_log,
            total_start):  # fmt: skip
    """Rank 0: the reward-hacking run scored, and the checkpoint's last save."""
    path = args.out_dir / ASSISTANT_CHECKPOINTS["grpo"].name
    hacked = as_shipped(hacked, tuned_path, tuned.config, lora_settings, "grpo")
    hack = evaluate(hacked, tok, 20)
    one_word = {kind: float(np.mean([len(r.split()) == 1 for r in replies]))
                for kind, replies in hack["replies"].items()}  # fmt: skip
    payload["hacking"] = {"steps": cfg["hacking_steps"], "rewards": hack_log.rewards,
                          "cpu_seconds": hack_log.cpu_seconds, "scores": hack["correct"],
                          "one_word": one_word,
                          "replies": {k: v[::10] for k, v in hack["replies"].items()}}  # fmt: skip
    print(f"reward hacking: format reward {hack_log.rewards[0]:.2f} -> "
          f"{np.mean(hack_log.rewards[-5:]):.2f}; one-word replies {one_word}\n{summary(hack)}",
          flush=True)  # fmt: skip
    payload["total_cpu_seconds"] = time.process_time() - total_start
    torch.save(payload, path)
    print(f"saved {path} ({path.stat().st_size / 1e6:.2f} MB); total CPU time "
          f"{payload['total_cpu_seconds']:.0f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
