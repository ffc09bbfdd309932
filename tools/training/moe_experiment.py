"""Maintainer's tool: lecture 16's experiment, a dense model against mixtures of experts.

    python -m tools.training.moe_experiment                 # writes course_lib/data/moe_experiment.json
    python -m tools.training.moe_experiment --steps 40 --seeds 0 --out /tmp/moe.json   # a quick trial
    torchrun --standalone --nproc_per_node=2 -m tools.training.moe_experiment --steps 40 --seeds 0 \
        --out /tmp/moe.json                       # two processes (see run() on the auxiliary loss)

Four settings of lecture 13's ModernLM (D = 64, 4 heads, 2 KV heads, 2 layers, tied
embeddings, a 64-token context, lecture 11's corpus and byte-level BPE of 512 tokens); only the
feed-forward differs:

    dense               SwiGLU, d_ff = 128
    MoE (same active)   8 SwiGLU experts of d_ff = 64, top-2, renormalised (as Mixtral): per
                        token the same FFN parameters as the dense model (2 x 64 = 128)
    dense (same total)  SwiGLU, d_ff = 512: as many FFN parameters as all 8 experts
    MoE, no aux loss    the MoE without the load-balancing loss

The MoE runs add 0.01 x the load-balancing loss (Switch Transformer's coefficient) to the
language-modelling loss. Every run of one seed sees the same batches (paired comparison), the
same number of steps, the same learning-rate schedule; the seed also sets the initial weights.
Recorded per run: held-out nats/token (lecture 11's held-out text), the training curve, the first
training losses exactly (``tests/test_moe_experiment.py`` re-runs them), CPU and wall-clock
seconds per training step (one thread, on a shared machine: the wall clock includes waiting), and
for the MoE runs the share of the held-out tokens' top-2 slots each expert gets, per layer.

Deterministic: one thread, fixed seeds, a fixed number of steps. Budget: the whole script is
sized to stay under 12 CPU-minutes on this machine's CPU (it prints what it took).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from course_lib import ModernConfig, ModernLM, lm_loss, router_logits, seed_everything
from course_lib.configs import MoEConfig
from course_lib.data.language_modeling import evaluate_lm, lm_corpus, random_windows
from course_lib.nn import load_balancing_loss
from course_lib.training import learning_rate_at, train_step
from tools.training.distributed import (
    ONE_PROCESS,
    Ranks,
    add_device_argument,
    check_batch_size,
    finish,
    mean_over_ranks,
    my_rows,
    start_run,
    unwrap,
    wrap,
)

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "course_lib" / "data" / "moe_experiment.json"

VOCAB, D, HEADS, KV_HEADS, LAYERS, CONTEXT = 512, 64, 4, 2, 2, 64
BATCH, STEPS, WARMUP, LR = 16, 800, 50, 3e-3
EXPERTS, TOP_K, EXPERT_FF = 8, 2, 64
AUX_COEF = 0.01  # Switch Transformer's alpha
SEEDS = (0, 1, 2)
BLOCK = 50  # the training curve is the mean loss of each block of BLOCK steps
FIRST = 20  # the first FIRST training losses are stored exactly (the test re-runs them)

SETTINGS = {
    "dense": dict(d_ff=TOP_K * EXPERT_FF, moe=False, aux=0.0),
    "MoE (same active)": dict(d_ff=TOP_K * EXPERT_FF, moe=True, aux=AUX_COEF),
    "dense (same total)": dict(d_ff=EXPERTS * EXPERT_FF, moe=False, aux=0.0),
    "MoE, no aux loss": dict(d_ff=TOP_K * EXPERT_FF, moe=True, aux=0.0),
}


def build(setting: str, vocab_size: int = VOCAB) -> ModernLM:
    """The model of ``setting`` (a key of :data:`SETTINGS`), initialised as lecture 13's."""
    s = SETTINGS[setting]
    moe = MoEConfig(EXPERTS, TOP_K, EXPERT_FF) if s["moe"] else None
    config = ModernConfig(vocab_size, D, HEADS, KV_HEADS, LAYERS, s["d_ff"], tie_weights=True,
                          context_length=CONTEXT, moe=moe)  # fmt: skip
    return ModernLM(config)


def parameters(model: ModernLM) -> dict:
    """Total parameters, and those one token uses (the router, ``k`` experts of each MoE layer)."""
    total = sum(p.numel() for p in model.parameters())
    idle = 0
    for block in model.blocks:
        if hasattr(block.ffn, "experts"):
            per_expert = sum(p.numel() for p in block.ffn.experts[0].parameters())
            idle += (len(block.ffn.experts) - block.ffn.router.top_k) * per_expert
    return {"total": total, "active": total - idle}


def batch(seed: int, step: int, train_ids: torch.Tensor) -> torch.Tensor:
    """The batch of step ``step`` for seed ``seed``: the same for every setting (paired runs)."""
    gen = torch.Generator().manual_seed(100_003 * seed + step)
    return random_windows(train_ids, BATCH, CONTEXT, gen)


def loss_with_aux(coef: float):
    """``lm_loss + coef * load_balancing_loss`` (just ``lm_loss`` for a dense model)."""

    def loss(model: ModernLM, ids: torch.Tensor) -> torch.Tensor:
        lm = lm_loss(model, ids)
        if model.config.moe is None or coef == 0:
            return lm
        return lm + coef * load_balancing_loss(router_logits(model), model.config.moe.top_k)

    return loss


@torch.no_grad()
def expert_load(model: ModernLM, ids: torch.Tensor) -> list[list[float]]:
    """Per MoE layer, the share of the top-k slots of the tokens of ``ids`` each expert gets
    (sums to 1; ``1 / E`` each when balanced)."""
    counts = None
    model.eval()
    for start in range(0, len(ids) - 1, CONTEXT):
        model(ids[start : start + CONTEXT][None])
        chosen = [logits.topk(TOP_K, dim=-1).indices.flatten() for logits in router_logits(model)]
        new = torch.stack([torch.bincount(c, minlength=EXPERTS) for c in chosen])  # (layers, E)
        counts = new if counts is None else counts + new
    return (counts / counts.sum(dim=1, keepdim=True)).tolist()


def run(setting: str, seed: int, steps: int = STEPS, stop_after: int | None = None,
        corpus=None, ranks: Ranks = ONE_PROCESS) -> dict:  # fmt: skip
    """Train ``setting`` with ``seed``; returns its record. ``stop_after`` stops early but keeps
    the learning-rate schedule of ``steps`` steps (the test re-runs the first steps this way).
    ``ranks``: this process's place under torchrun (its rows of every batch). The
    load-balancing loss is a product of two batch means, not a mean over rows: under torchrun
    each process balances its own rows (as Switch Transformer's implementation does per device),
    so the MoE settings with the auxiliary loss differ from one process in more than rounding."""
    corpus = corpus or lm_corpus(VOCAB)
    seed_everything(seed, threads=1)
    model = wrap(build(setting, corpus.vocab_size), ranks,
                 find_unused_parameters=SETTINGS[setting]["moe"])  # fmt: skip
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    loss_fn = loss_with_aux(SETTINGS[setting]["aux"])
    losses = []
    cpu, wall = time.process_time(), time.perf_counter()
    model.train()
    for step in range(steps if stop_after is None else stop_after):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(step, steps, LR, WARMUP, "cosine")
        ids = my_rows(batch(seed, step, corpus.train_ids), ranks)
        loss = train_step(model, optimizer, loss_fn, ids, 1.0, step=step)
        losses.append(mean_over_ranks(loss, ranks))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    record = {"setting": setting, "seed": seed, "first_losses": losses[:FIRST]}
    if stop_after is not None:
        return record
    model, held = unwrap(model), corpus.held_out_ids.to(ranks.device)
    record |= {
        "held_out": evaluate_lm(model, held, block=CONTEXT),
        "train_curve": [statistics.fmean(losses[i : i + BLOCK]) for i in range(0, steps, BLOCK)],
        "cpu_ms_per_step": round(1000 * cpu / steps, 2),
        "wall_ms_per_step": round(1000 * wall / steps, 2),
    }
    if model.config.moe is not None:
        record["expert_load"] = expert_load(model, held)
    return record


def summarise(runs: list[dict]) -> list[dict]:
    """Per setting: the seeds' held-out losses (mean, sample std, min, max) and ms per step."""
    out = []
    for setting in SETTINGS:
        rs = [r for r in runs if r["setting"] == setting]
        if not rs:
            continue
        v = [r["held_out"] for r in rs]
        out.append({
            "setting": setting, "seeds": len(v), "mean": statistics.fmean(v),
            "std": statistics.stdev(v) if len(v) > 1 else 0.0, "min": min(v), "max": max(v),
            "cpu_ms_per_step": statistics.fmean(r["cpu_ms_per_step"] for r in rs),
            "wall_ms_per_step": statistics.fmean(r["wall_ms_per_step"] for r in rs),
        })  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS))
    parser.add_argument("--out", type=Path, default=TABLE)
    add_device_argument(parser)
    args = parser.parse_args()
    ranks = start_run(args.device)
    check_batch_size(BATCH, ranks, "BATCH (tools/training/moe_experiment.py)")

    total = time.process_time()
    corpus = lm_corpus(VOCAB)
    runs = []
    for seed in args.seeds:
        for setting in args.settings:
            record = run(setting, seed, args.steps, corpus=corpus, ranks=ranks)
            runs.append(record)
            if ranks.is_main:
                print(f"{setting:20s} seed {seed}: held-out {record['held_out']:.4f}, "
                      f"{record['cpu_ms_per_step']:.1f} CPU-ms/step", flush=True)  # fmt: skip
    table = {
        "about": "lecture 16: dense vs mixture of experts; python -m tools.training.moe_experiment",
        "config": {
            "vocab_size": corpus.vocab_size,
            "d_model": D,
            "num_heads": HEADS,
            "num_kv_heads": KV_HEADS,
            "num_layers": LAYERS,
            "context": CONTEXT,
            "batch": BATCH,
            "steps": args.steps,
            "warmup": WARMUP,
            "lr": LR,
            "schedule": "cosine",
            "weight_decay": 0.0,
            "clip_grad": 1.0,
            "experts": EXPERTS,
            "top_k": TOP_K,
            "expert_d_ff": EXPERT_FF,
            "aux_coef": AUX_COEF,
            "train_block": BLOCK,
            "threads": 1,
            "torch": torch.__version__,
        },  # fmt: skip
        "held_out_tokens": len(corpus.held_out_ids),
        "parameters": {s: parameters(build(s, corpus.vocab_size)) for s in SETTINGS},
        "summary": summarise(runs),
        "runs": runs,
        "cpu_seconds": round(time.process_time() - total, 1),
    }
    if ranks.is_main:
        args.out.write_text(json.dumps(table, indent=1) + "\n")
        print(f"wrote {args.out} ({table['cpu_seconds']:.0f} CPU-seconds in all)")
    finish(ranks)


if __name__ == "__main__":
    main()
