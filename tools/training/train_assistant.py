"""Maintainer's tool: make lecture 14's assistants from lecture 11's GPT and save them.

    python -m tools.training.train_assistant                     # writes course_lib/data/assistant_*.pt
    python -m tools.training.train_assistant --steps 200 --dpo-steps 20 --out-dir /tmp/a   # a quick trial
    torchrun --standalone --nproc_per_node=2 -m tools.training.train_assistant --steps 200 \
        --dpo-steps 20 --out-dir /tmp/a     # the same training on two CPU processes (DDP, gloo)

Four runs, one thread each, fixed seeds and step counts (settings in ``SETTINGS``):

1. **instruction tuning** (full fine-tuning) of lecture 11's shipped GPT with the chat tokens
   added, response-only loss (:func:`course_lib.response_loss`), on
   :func:`course_lib.data.instructions.training_instructions` -> ``assistant_tuned.pt``;
2. the same budget from a **random initialisation** (same architecture): the control that shows
   what pretraining contributes (its scores are stored in the tuned checkpoint; no weights);
3. **LoRA** on lecture 11's GPT (adapters on the attention and feed-forward maps, the rest
   frozen), the same data -> ``assistant_lora.pt`` (adapters only);
4. **DPO** on the tuned model with LoRA adapters, reference = the tuned model, on
   **on-policy** pairs: the tuned model's own wrong greedy replies to ``SETTINGS["dpo_pool"]``
   training-side prompts (:func:`course_lib.data.instructions.training_instructions`, a seed of
   their own) are the rejected answers, the right answers the chosen ones ->
   ``assistant_dpo.pt`` (adapters only). Its settings (learning rate, beta, and the weight of an
   NLL term on the chosen answers, as RPO / "DPO+NLL") are **chosen on the validation split**
   (:func:`course_lib.data.instructions.validation_instructions`, carved from the training
   side) among ``SETTINGS["dpo_candidates"]`` by the rule of :func:`choose_dpo`; the held-out
   sets are scored once, for the chosen one only. (An earlier version used the rule-made
   pairs of :func:`course_lib.data.instructions.preference_pair`, mistakes the tuned model
   already avoided: the margin grew, no answer improved.)

    python -m tools.training.train_assistant --dpo-only          # rerun stage 4 alone (about 6 CPU-min)

Every checkpoint stores float16 weights, the settings, its CPU time, its held-out scores and its
greedy replies to the first held-out prompts (a test checks that loading it reproduces them).

Under ``torchrun`` (``tools/training/distributed.py``) every process takes its rows of each
global batch (``batch_size`` conversations, ``dpo_pairs`` pairs): the response-only loss and
DPO's NLL term are means over the whole batch's reply tokens; every process makes the same
on-policy pairs; rank 0 alone evaluates, chooses and writes (the others wait for the tuned
checkpoint and read it back). Two processes give one process's weights to rounding
(``tests/test_distributed_training.py``), not its bits.
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
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
    ONE_ANSWER_FAMILIES,
    exact_match,
    held_out_instructions,
    preference_pair,
    training_instructions,
    validation_instructions,
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
from course_lib.models.dpo import dpo_loss, dpo_nll_loss
from course_lib.models.gpt import GPT
from course_lib.models.lora import apply_lora, trainable_parameter_count
from course_lib.training import train
from tools.training.distributed import (
    ONE_PROCESS,
    Ranks,
    add_device_argument,
    as_global_mean,
    check_batch_size,
    cpu_only,
    finish,
    mean_over_ranks,
    my_rows,
    start_run,
    wait_for_main,
    wrap,
)

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
    "dpo_pairs": 16,
    # on-policy pairs: the tuned model's greedy replies to this many training-side prompts
    # (training words and phrasings, new lists); each wrong reply is a rejected answer
    "dpo_pool": 12000,
    # Tried on the validation split, never on the held-out sets (choose_dpo picks one):
    # lr, beta, the weight of the NLL term on the chosen answers (0 = plain DPO), steps.
    "dpo_candidates": [
        *(
            {"lr": lr, "beta": 0.1, "nll": nll, "steps": 150}
            for nll in (0.0, 1.0)
            for lr in (3e-5, 1e-4, 3e-4)
        ),
        {"lr": 1e-4, "beta": 0.5, "nll": 0.0, "steps": 150},
    ],
    # the rule, fixed before the held-out sets are scored (see choose_dpo)
    "dpo_max_accuracy_drop": 1.0,  # points of one-answer exact match, on validation prompts
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


def sft(model, tokenizer, steps: int, lr: float, cfg: dict, desc: str,
        ranks: Ranks = ONE_PROCESS):  # fmt: skip
    """Response-only training of ``model`` (in place) on ``steps`` batches of ``batch_size``
    training conversations; under torchrun each process takes its rows of every batch and the
    loss is the mean over the whole batch's reply tokens (:func:`as_global_mean`)."""
    check_batch_size(cfg["batch_size"], ranks, "batch_size")
    data = conversations(tokenizer, training_instructions(steps * cfg["batch_size"], cfg["seed"]))
    b = cfg["batch_size"]

    def batches(step: int):
        return my_rows(chat_batch(data[step * b : (step + 1) * b]), ranks)

    def loss_fn(m, batch):
        ids, loss_mask = batch  # the reply tokens of these rows are the loss's items
        return as_global_mean(response_loss(m, ids, loss_mask), loss_mask[:, 1:].sum(), ranks)

    start = time.process_time()
    log = train(wrap(model, ranks), batches, loss_fn, steps=steps, lr=lr,
                warmup=min(100, steps // 10), schedule="cosine", weight_decay=0.0,
                seed=cfg["seed"], threads=cfg["threads"], progress=ranks.is_main,
                desc=desc)  # fmt: skip
    return log, time.process_time() - start


@torch.no_grad()
def margins(model, tokenizer, pairs) -> torch.Tensor:
    """``log p(chosen) - log p(rejected)`` per pair (nats)."""
    chosen, rejected = pairs
    return sequence_logprobs(model, *chosen) - sequence_logprobs(model, *rejected)


def pair_tensors(tokenizer, triples) -> tuple:
    """``(chosen, rejected)`` batches of rendered conversations from ``(instruction, chosen
    answer, rejected answer)`` triples."""
    chosen, rejected = [], []
    for x, good, bad in triples:
        user = {"role": "user", "content": x.prompt}
        chosen.append(render_chat([user, {"role": "assistant", "content": good}], tokenizer))
        rejected.append(render_chat([user, {"role": "assistant", "content": bad}], tokenizer))
    return chat_batch(chosen), chat_batch(rejected)


def preference_tensors(tokenizer, instructions):
    """The rule-made pairs (:func:`preference_pair`) of ``instructions``, as tensors."""
    return pair_tensors(tokenizer, [(x, *preference_pair(x)) for x in instructions])


def on_policy_triples(model, tokenizer, instructions) -> list:
    """DPO's on-policy pairs: ``(instruction, right answer, the model's own wrong greedy
    reply)`` for every instruction ``model`` answers wrongly."""
    got = generate_replies(model, tokenizer, [x.prompt for x in instructions], max_new_tokens=40)
    return [(x, x.answer, r) for x, r in zip(instructions, got, strict=True)
            if not exact_match(r, x.answer)]  # fmt: skip


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


def one_answer_accuracy(correct: dict) -> float:
    """Exact match (%) pooled over the one-answer families of ``{family: [0/1, ...]}``."""
    return 100 * float(np.mean([c for f in ONE_ANSWER_FAMILIES for c in correct[f]]))


def score_items(model, tokenizer, items) -> dict:
    """``{family: [0/1, ...]}``: greedy exact match of ``model`` on ``items``."""
    got = generate_replies(model, tokenizer, [x.prompt for x in items], max_new_tokens=40)
    return {f: [int(exact_match(r, x.answer)) for r, x in zip(got, items, strict=True)
                if x.family == f]
            for f in FAMILIES}  # fmt: skip


def train_dpo(tuned, tokenizer, cfg: dict, candidate: dict, triples: list,
              ranks: Ranks = ONE_PROCESS):  # fmt: skip
    """LoRA adapters on a copy of ``tuned`` trained with DPO (reference = ``tuned``) on the
    on-policy ``triples`` (shuffled once, cycled), plus ``candidate["nll"]`` times the
    response-only loss on the chosen answers (RPO's NLL term; 0 = plain DPO).

    Returns ``(policy, log, cpu_seconds, trajectory)``; ``trajectory`` holds, per step, the
    batch's mean ``log pi - log pi_ref`` of the chosen and of the rejected answers (nats).
    Under torchrun each process takes its pairs of every batch (the reference's log-probabilities
    are computed on the whole batch, as one process does); the NLL term is the mean over the
    whole batch's chosen tokens (:func:`as_global_mean`)."""
    check_batch_size(cfg["dpo_pairs"], ranks, "dpo_pairs")
    seed_everything(cfg["seed"], threads=cfg["threads"])
    reference = copy.deepcopy(tuned).eval()
    policy = copy.deepcopy(tuned)
    apply_lora(policy, cfg["lora_r"], cfg["lora_alpha"], cfg["lora_targets"])
    n, steps = cfg["dpo_pairs"], candidate["steps"]
    order = np.random.default_rng(cfg["seed"] + 7).permutation(len(triples))
    order = np.concatenate([order] * (steps * n // len(order) + 1))[: steps * n]
    pairs = [pair_tensors(tokenizer, [triples[i] for i in order[s * n : (s + 1) * n]])
             for s in range(steps)]  # fmt: skip
    with torch.no_grad():
        refs = [(sequence_logprobs(reference, *c), sequence_logprobs(reference, *r))
                for c, r in pairs]  # fmt: skip
    trajectory = {"chosen": [], "rejected": []}

    def dpo_step_loss(model, batch):
        (chosen, rejected), (ref_c, ref_r) = batch
        pc, pr = sequence_logprobs(model, *chosen), sequence_logprobs(model, *rejected)
        trajectory["chosen"].append(mean_over_ranks((pc - ref_c).detach().mean(), ranks))
        trajectory["rejected"].append(mean_over_ranks((pr - ref_r).detach().mean(), ranks))
        tokens = chosen[1][:, 1:].sum(dim=1)
        if ranks.world_size == 1:
            return dpo_nll_loss(pc, pr, ref_c, ref_r, tokens, beta=candidate["beta"],
                                nll_weight=candidate["nll"])  # fmt: skip
        # several processes: the DPO term is a mean over pairs (equal slices), the NLL term a
        # mean over the chosen tokens of every process's pairs
        losses = dpo_loss(pc, pr, ref_c, ref_r, beta=candidate["beta"])[0]
        nll = as_global_mean(-pc.sum() / tokens.sum(), tokens.sum(), ranks)
        return losses.mean() + candidate["nll"] * nll

    start = time.process_time()
    log = train(wrap(policy, ranks), lambda s: my_rows((pairs[s], refs[s]), ranks),
                dpo_step_loss, steps=steps, lr=candidate["lr"], warmup=min(10, steps),
                schedule="cosine", seed=cfg["seed"], threads=cfg["threads"],
                progress=ranks.is_main, desc="DPO")  # fmt: skip
    return policy, log, time.process_time() - start, trajectory


def choose_dpo(tried: list[dict], cfg: dict) -> int:
    """The rule that picks DPO's settings from validation numbers only (index into ``tried``).

    Each entry holds ``accuracy_all`` (exact match over all five families, %) and
    ``accuracy_drop`` (points of one-answer exact match lost) on the validation split.
    Acceptable: a one-answer drop of at most ``dpo_max_accuracy_drop``. Among those, the
    highest ``accuracy_all`` (the on-policy errors are mostly rewrites, so all five families
    count); ties go to the earlier candidate (the smaller step). If none is acceptable, the
    smallest drop (the script says so).
    """
    good = [i for i, t in enumerate(tried) if t["accuracy_drop"] <= cfg["dpo_max_accuracy_drop"]]
    if good:
        return max(good, key=lambda i: (tried[i]["accuracy_all"], -i))
    print("no candidate meets the validation criterion", flush=True)
    return min(range(len(tried)), key=lambda i: tried[i]["accuracy_drop"])


def as_shipped(policy, tuned_path: Path, config, lora_settings: dict, name: str = "dpo") -> GPT:
    """``policy`` as the lecture will load it: saved in float16, loaded with
    :func:`load_assistant` (adapters merged into the tuned model), in a scratch folder.
    ``name``: the kind of adapters on the tuned model (``"dpo"``, ``"grpo"``)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / tuned_path.name).symlink_to(tuned_path.resolve())
        path = Path(folder) / ASSISTANT_CHECKPOINTS[name].name
        torch.save({"base": "tuned", "lora": lora_settings, "config": asdict(config),
                    "state_dict": lora_state(policy), "replies": {}}, path)  # fmt: skip
        return load_assistant(name, path)[0]


def all_accuracy(correct: dict) -> float:
    """Exact match (%) pooled over all five families of ``{family: [0/1, ...]}``."""
    return 100 * float(np.mean([c for f in FAMILIES for c in correct[f]]))


def dpo_stage(tuned, tok, cfg: dict, out_dir: Path, lora_settings: dict, save_and_score,
              validation_only: bool = False, ranks: Ranks = ONE_PROCESS) -> None:  # fmt: skip
    """Stage 4: on-policy pairs from the tuned model's own wrong answers on training-side
    prompts; every candidate on the validation split, the chosen one saved and scored once on
    the held-out sets (``validation_only``: stop before, save nothing). Under torchrun every
    process makes the same pairs and trains every candidate; rank 0 alone scores, chooses and
    saves."""
    pool = training_instructions(cfg["dpo_pool"], cfg["seed"] + 7)
    triples = on_policy_triples(tuned, tok, pool)
    if not ranks.is_main:
        for candidate in cfg["dpo_candidates"]:
            train_dpo(tuned, tok, cfg, candidate, triples, ranks)
        return
    by_family = {f: sum(x.family == f for x, _, _ in triples) for f in FAMILIES}
    print(f"on-policy pairs: the tuned model answers {len(triples)} of {len(pool)} training-side "
          f"prompts wrongly {by_family}", flush=True)  # fmt: skip
    val_items = validation_instructions()
    val_triples = on_policy_triples(tuned, tok, val_items)
    val_pairs = pair_tensors(tok, val_triples)
    val_before = margins(tuned, tok, val_pairs)
    val_scores = score_items(tuned, tok, val_items)
    val_accuracy, val_all = one_answer_accuracy(val_scores), all_accuracy(val_scores)
    print(f"validation ({len(val_items)} prompts, {len(val_triples)} on-policy pairs): tuned "
          f"one-answer {val_accuracy:.1f} %, all {val_all:.1f} %, pairs with the chosen answer "
          f"more probable {int((val_before > 0).sum())}", flush=True)  # fmt: skip
    tried, policies = [], []
    for candidate in cfg["dpo_candidates"]:
        policy, log, seconds, trajectory = train_dpo(tuned, tok, cfg, candidate, triples, ranks)
        shipped = as_shipped(policy, out_dir / ASSISTANT_CHECKPOINTS["tuned"].name,
                             tuned.config, lora_settings)  # fmt: skip
        after = margins(shipped, tok, val_pairs)
        scores = score_items(shipped, tok, val_items)
        accuracy = one_answer_accuracy(scores)
        tried.append(dict(candidate, margin_gain=float(after.mean() - val_before.mean()),
                          flipped=int((after > 0).sum()), accuracy=accuracy,
                          accuracy_all=all_accuracy(scores),
                          accuracy_drop=val_accuracy - accuracy, cpu_seconds=seconds,
                          trajectory=trajectory))  # fmt: skip
        policies.append((policy, log, seconds))
        t = tried[-1]
        print(f"  {candidate}: validation all {t['accuracy_all']:.1f} %, one-answer "
              f"{accuracy:.1f} %, margin {t['margin_gain']:+.2f} nats, flipped {t['flipped']} of "
              f"{len(val_triples)} ({seconds:.0f} CPU-s)", flush=True)  # fmt: skip
    chosen = choose_dpo(tried, cfg)
    policy, log, seconds = policies[chosen]
    print(f"chosen on validation: {cfg['dpo_candidates'][chosen]}", flush=True)
    if validation_only:
        return

    # the held-out sets, once, for the chosen settings
    held = {k: on_policy_triples(tuned, tok, held_out_instructions(k)) for k in HELD_OUT_KINDS}
    held_pairs = {k: pair_tensors(tok, t) for k, t in held.items() if t}
    rule_pairs = preference_tensors(tok, held_out_instructions("new_combinations"))
    before = {k: margins(tuned, tok, p) for k, p in held_pairs.items()}
    rule_before = margins(tuned, tok, rule_pairs)
    path = out_dir / ASSISTANT_CHECKPOINTS["dpo"].name
    save_and_score("dpo", {"base": "tuned", "lora": lora_settings, "cpu_seconds": seconds,
                           "losses": log.losses, "dpo": cfg["dpo_candidates"][chosen],
                           "pairs": {"pool": len(pool), "wrong": len(triples),
                                     "by_family": by_family,
                                     "examples": [[x.prompt, c, r] for x, c, r in triples[:12]]},
                           "validation": {"items": len(val_items), "pairs": len(val_triples),
                                          "tuned_accuracy": val_accuracy,
                                          "tuned_accuracy_all": val_all,
                                          "tuned_flipped": int((val_before > 0).sum()),
                                          "tried": tried, "chosen": chosen}},
                   lora_state(policy))  # fmt: skip
    model = load_assistant("dpo", path)[0]
    ckpt = torch.load(path, weights_only=True)
    ckpt["on_policy"] = {k: {"before": before[k].tolist(),
                             "after": margins(model, tok, p).tolist()}
                         for k, p in held_pairs.items()}  # fmt: skip
    ckpt["margins"] = {
        "before": rule_before.tolist(),
        "after": margins(model, tok, rule_pairs).tolist(),
    }
    torch.save(ckpt, path)
    for k, m in ckpt["on_policy"].items():
        print(
            f"held-out {k}: {len(m['before'])} on-policy pairs, chosen more probable "
            f"{sum(v > 0 for v in m['before'])} -> {sum(v > 0 for v in m['after'])}",
            flush=True,
        )
    print(f"DPO: {seconds:.0f} CPU-s", flush=True)


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
    parser.add_argument(
        "--dpo-only",
        action="store_true",
        help="rerun stage 4 alone (DPO; implies --reuse-tuned --skip random lora)",
    )
    parser.add_argument(
        "--dpo-candidates",
        type=json.loads,
        default=None,
        help='JSON list replacing SETTINGS["dpo_candidates"] (trials on the validation split)',
    )
    parser.add_argument(
        "--validation-only",
        action="store_true",
        help="stage 4: try the DPO candidates on the validation split, save and score nothing",
    )
    add_device_argument(parser)
    args = parser.parse_args()
    cpu_only(args.device, "train_assistant")
    ranks = start_run(args.device)
    check_batch_size(SETTINGS["batch_size"], ranks, "batch_size")  # before anything slow
    check_batch_size(SETTINGS["dpo_pairs"], ranks, "dpo_pairs")
    say = print if ranks.is_main else lambda *a, **k: None
    if args.dpo_only:
        args.reuse_tuned, args.skip = True, ["random", "lora"]
    cfg = dict(SETTINGS, sft_steps=args.steps, lora_steps=args.lora_steps,
               dpo_steps=args.dpo_steps)  # fmt: skip
    if args.dpo_candidates is not None:
        cfg["dpo_candidates"] = args.dpo_candidates
    if args.dpo_steps != SETTINGS["dpo_steps"]:  # a quick trial: every candidate that long
        cfg["dpo_candidates"] = [dict(c, steps=args.dpo_steps) for c in cfg["dpo_candidates"]]
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
        store its scores and first replies in the same file (rank 0 only)."""
        if not ranks.is_main:
            return None
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
        base_result = {"correct": None}  # the scores are rank 0's (it alone saves them)
        if ranks.is_main:
            base_result = evaluate(pretrained, tok, ev)
            print(f"base model\n{summary(base_result)}", flush=True)

        # 1. instruction tuning, full fine-tuning
        tuned = copy.deepcopy(pretrained)
        log, seconds = sft(tuned, tok, cfg["sft_steps"], cfg["sft_lr"], cfg, "instruction tuning",
                           ranks)  # fmt: skip
        say(f"tuned: {seconds:.0f} CPU-s, last loss {np.mean(log.losses[-50:]):.3f}", flush=True)
        extra = {"base_scores": base_result["correct"], "cpu_seconds": {"tuned": seconds},
                 "trainable_parameters": trainable_parameter_count(tuned),
                 "losses": log.smoothed(50)[::10]}  # fmt: skip

        # 2. the random-init control (scores only; stored with the tuned model)
        if "random" not in args.skip:
            seed_everything(cfg["seed"] + 1, threads=cfg["threads"])
            scratch = GPT(config)
            log_r, seconds_r = sft(
                scratch, tok, cfg["sft_steps"], cfg["random_lr"], cfg, "random init", ranks
            )
            if ranks.is_main:
                random_result = evaluate(scratch, tok, ev)
                print(f"random init: {seconds_r:.0f} CPU-s, last loss "
                      f"{np.mean(log_r.losses[-50:]):.3f}\n{summary(random_result)}",
                      flush=True)  # fmt: skip
                extra["random_init_scores"] = random_result["correct"]
            extra["cpu_seconds"]["random_init"] = seconds_r
        state = {k: v.half() for k, v in tuned.state_dict().items() if k != "lm_head.weight"}
        save_and_score("tuned", extra, state)
        wait_for_main(ranks)  # every process goes on from the file rank 0 wrote (float16)
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
        log_l, seconds_l = sft(lora_model, tok, cfg["lora_steps"], cfg["lora_lr"], cfg, "LoRA",
                               ranks)  # fmt: skip
        say(f"LoRA: {n_trainable} trainable parameters, {seconds_l:.0f} CPU-s", flush=True)
        save_and_score("lora", {"base": "pretrained", "lora": lora_settings,
                                "trainable_parameters": n_trainable, "cpu_seconds": seconds_l,
                                "losses": log_l.smoothed(50)[::10]}, lora_state(lora_model))  # fmt: skip

    # 4. DPO with LoRA adapters on the tuned model; the reference is the tuned model
    if "dpo" not in args.skip:
        dpo_stage(tuned, tok, cfg, args.out_dir, lora_settings, save_and_score,
                  validation_only=args.validation_only, ranks=ranks)  # fmt: skip
    say(f"total CPU time {time.process_time() - total_start:.0f} s")
    finish(ranks)


if __name__ == "__main__":
    main()
