"""Maintainer's tool: lecture 13's comparison, from GPT to ModernLM one change at a time.

    python -m tools.training.modern_ladder                 # writes course_lib/data/modern_ladder.json
                                                  # and course_lib/data/modern_lm.pt
    python -m tools.training.modern_ladder --steps 60 --seeds 0 --out /tmp/ladder.json   # a quick trial
    torchrun --standalone --nproc_per_node=2 -m tools.training.modern_ladder --steps 60 --seeds 0 \
        --out /tmp/ladder.json --checkpoint /tmp/modern_lm.pt     # two processes, the same numbers

The ladder (each rung keeps every change above it, so each row differs from the row above in
exactly one thing):

    GPT           lecture 11's GPT-2 block: pre-LN LayerNorm, GELU FFN, biases, learned positions
    + RMSNorm     every LayerNorm becomes an RMSNorm (no centring, no shift)
    + no biases   the linear maps of attention and FFN lose their biases (Llama has none)
    + SwiGLU      the GELU FFN becomes SwiGLU
    + RoPE        the learned position table goes; q and k are rotated   (= ModernLM, 4 KV heads)
    + GQA         2 key/value heads for the 4 query heads                 (= ModernLM, 2 KV heads)

Off the ladder, one more setting: ``GPT + RoPE``, lecture 11's GPT with only its positions changed
(no position table; q and k rotated), so that RoPE's effect on plain GPT can be compared with its
rung's effect on top of three other changes. ``--add-off-ladder`` trains just that setting and
adds it to an existing table (its runs are the ones the whole script would make).

Pre-norm is not a rung: GPT-2 is already pre-norm. Every model has D = 64, 4 heads, 2 layers,
tied embeddings, a 64-token context; the FFN width of each rung is chosen so that its parameter
count is the closest to GPT's (the table lists both). All runs of one seed see the same batches
(paired comparison); the seed also sets the initial weights. GPT and ModernLM (the last rung) are
also trained at a higher learning rate.

Deterministic: one thread, fixed seeds, a fixed number of steps; the same command on the same
machine gives the same numbers (another CPU may change the last bits). ``tests/test_modern_ladder.py``
re-runs the first steps of the stored runs and checks the table against itself.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

from course_lib import GPT, GPTConfig, ModernConfig, ModernLM, lm_loss, seed_everything
from course_lib._validation import inner_checks_off
from course_lib.data.language_modeling import evaluate_lm, lm_corpus, random_windows
from course_lib.models.ngram import bigram_lm, unigram_lm
from course_lib.nn import FeedForward, MultiHeadAttention, RMSNorm, SwiGLUFeedForward
from course_lib.nn.rope import rope_qk_unchecked
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
TABLE = ROOT / "course_lib" / "data" / "modern_ladder.json"
CHECKPOINT = ROOT / "course_lib" / "data" / "modern_lm.pt"

RUNGS = ("GPT", "+ RMSNorm", "+ no biases", "+ SwiGLU", "+ RoPE", "+ GQA")
CHANGES = (
    "lecture 11's GPT-2 block: pre-LN LayerNorm, GELU FFN, biases, learned positions",
    "LayerNorm -> RMSNorm (no centring, no shift)",
    "no biases in the linear maps",
    "GELU FFN -> SwiGLU FFN",
    "learned positions -> RoPE (= ModernLM, 4 KV heads)",
    "4 -> 2 key/value heads (= ModernLM with GQA)",
)
RMS, NO_BIAS, SWIGLU, ROPE, GQA = range(1, 6)
OFF_LADDER = "GPT + RoPE"  # rung 0 with RoPE instead of the position table, nothing else
OFF_LADDER_CHANGE = "lecture 11's GPT with learned positions -> RoPE, nothing else changed"
GPT_ROPE = len(RUNGS)  # its index for build(), run() and matched_d_ff()
NAMES = (*RUNGS, OFF_LADDER)

VOCAB, D, HEADS, LAYERS, CONTEXT = 512, 64, 4, 2, 64
BATCH, STEPS, WARMUP, LR = 32, 1200, 100, 3e-3
HIGH_LR = 1e-2  # the second learning rate, for the two ends of the ladder
SEEDS = (0, 1, 2)
EVAL_EVERY = 100  # held-out loss every EVAL_EVERY steps (and at step 0)
BLOCK = 50  # the training curve is the mean loss of each block of BLOCK steps
FIRST = 20  # the first FIRST training losses are stored exactly (the test re-runs them)
BIGRAM_BETA = 30.0  # lecture 11's bigram (3.548 nats/token on the held-out text)


def _init_like_gpt2(model: nn.Module) -> None:
    """GPT-2's (and ModernLM's) initialisation: N(0, 0.02), zero biases, and the two maps that
    write into the residual stream scaled by 1/sqrt(2 * layers)."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    for block in model.blocks:
        out = block.ffn.down if isinstance(block.ffn, SwiGLUFeedForward) else block.ffn.linear2
        for lin in (block.attn.w_o, out):
            nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * len(model.blocks)))


class _NoPositions(nn.Module):
    """Stands in for GPT's position table when RoPE gives the positions: adds nothing."""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(positions), self.d_model, device=positions.device)  # (T, D)


class _RoPEAttention(MultiHeadAttention):
    """GPT's causal self-attention (four maps with biases) with q and k rotated by RoPE, called
    as GPT's block calls its attention: ``attn(x, cache)``."""

    def __init__(self):
        super().__init__(D, HEADS, bias=True, qk_transform=rope_qk_unchecked)

    def forward(self, x: torch.Tensor, cache=None) -> torch.Tensor:
        return super().forward(x, causal=True, cache=cache)


def build(rung: int, d_ff: int, vocab_size: int = VOCAB) -> nn.Module:
    """The model of rung ``rung`` (an index into :data:`NAMES`) with FFN width ``d_ff``.

    Rungs 0-3 are lecture 11's ``GPT`` with its norms, attention and FFN swapped in place (its
    ``forward`` is unchanged: ``x = x + attn(norm1(x))``, ``x = x + ffn(norm2(x))``); rungs 4-5
    are ``ModernLM`` itself; ``GPT_ROPE`` (off the ladder) is ``GPT`` with its position table
    replaced by nothing and its attention rotating q and k.
    """
    if rung == GPT_ROPE:
        model = GPT(GPTConfig(vocab_size, CONTEXT, d_model=D, num_heads=HEADS, num_layers=LAYERS,
                              d_ff=d_ff))  # fmt: skip
        model.position_embedding = _NoPositions(D)
        for block in model.blocks:
            block.attn = _RoPEAttention()
        _init_like_gpt2(model)
        inner_checks_off(model)
        return model
    if rung >= ROPE:
        kv_heads = 2 if rung >= GQA else HEADS
        config = ModernConfig(vocab_size, D, HEADS, kv_heads, LAYERS, d_ff, tie_weights=True,
                              context_length=CONTEXT)  # fmt: skip
        return ModernLM(config)
    model = GPT(GPTConfig(vocab_size, CONTEXT, d_model=D, num_heads=HEADS, num_layers=LAYERS,
                          d_ff=d_ff))  # fmt: skip
    if rung == 0:
        return model
    for block in model.blocks:
        block.norm1, block.norm2 = RMSNorm(D), RMSNorm(D)
        if rung >= NO_BIAS:
            for name in ("w_q", "w_k", "w_v", "w_o"):  # the attention's four maps
                setattr(block.attn, name, nn.Linear(D, D, bias=False))
            block.ffn = FeedForward(D, d_ff, bias=False, activation="gelu_new")
        if rung >= SWIGLU:
            block.ffn = SwiGLUFeedForward(D, d_ff)
    model.norm = RMSNorm(D)
    _init_like_gpt2(model)
    inner_checks_off(model)
    return model


def count(model: nn.Module) -> int:
    """Parameters, a tied matrix counted once."""
    return sum(p.numel() for p in model.parameters())


def matched_d_ff(rung: int) -> int:
    """The FFN width that brings rung ``rung``'s parameter count closest to GPT's (4D FFN)."""
    if rung == 0:
        return 4 * D
    target = count(build(0, 4 * D))
    a, b = count(build(rung, 100)), count(build(rung, 101))  # linear in d_ff
    return max(1, round(100 + (target - a) / (b - a)))


def batch(seed: int, step: int, train_ids: torch.Tensor) -> torch.Tensor:
    """The batch of step ``step`` for seed ``seed``: the same for every rung (paired runs)."""
    gen = torch.Generator().manual_seed(100_003 * seed + step)
    return random_windows(train_ids, BATCH, CONTEXT, gen)


def run(rung: int, seed: int, lr: float = LR, steps: int = STEPS, stop_after: int | None = None,
        corpus=None, ranks: Ranks = ONE_PROCESS) -> tuple[dict, nn.Module]:  # fmt: skip
    """Train rung ``rung`` with ``seed``; returns its record and the model.

    ``stop_after`` stops early but keeps the learning-rate schedule of ``steps`` steps (the test
    re-runs the first steps of a stored run this way). ``ranks``: this process's place under
    torchrun (each process computes its rows of every batch; the record's losses are the whole
    batch's).
    """
    corpus = corpus or lm_corpus(VOCAB)
    d_ff = matched_d_ff(rung)
    seed_everything(seed, threads=1)
    model = wrap(build(rung, d_ff, corpus.vocab_size), ranks)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    held = corpus.held_out_ids.to(ranks.device)
    losses, held_curve = [], [(0, evaluate_lm(unwrap(model), held, block=CONTEXT))]
    start = time.process_time()
    model.train()
    for step in range(steps if stop_after is None else stop_after):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(step, steps, lr, WARMUP, "cosine")
        ids = my_rows(batch(seed, step, corpus.train_ids), ranks)
        loss = train_step(model, optimizer, lm_loss, ids, 1.0, step=step)
        losses.append(mean_over_ranks(loss, ranks))
        if (step + 1) % EVAL_EVERY == 0:
            held_curve.append((step + 1, evaluate_lm(unwrap(model), held, block=CONTEXT)))
    model.eval()
    record = {
        "setting": NAMES[rung],
        "lr": lr,
        "seed": seed,
        "held_out": held_curve[-1][1],
        "held_out_curve": held_curve,
        "train_curve": [
            sum(losses[i : i + BLOCK]) / len(losses[i : i + BLOCK])
            for i in range(0, len(losses), BLOCK)
        ],
        "first_losses": losses[:FIRST],
        "cpu_seconds": round(time.process_time() - start, 1),
    }
    return record, unwrap(model)


def summarise(runs: list[dict]) -> list[dict]:
    """Per (setting, lr): the seeds' held-out losses, their mean, sample std, min and max."""
    groups: dict[tuple[str, float], list[float]] = {}
    for r in runs:
        groups.setdefault((r["setting"], r["lr"]), []).append(r["held_out"])
    return [
        {"setting": s, "lr": lr, "seeds": len(v), "mean": statistics.fmean(v),
         "std": statistics.stdev(v) if len(v) > 1 else 0.0, "min": min(v), "max": max(v)}
        for (s, lr), v in groups.items()
    ]  # fmt: skip


def save_checkpoint(model: ModernLM, path: Path) -> None:
    """float16 weights (the tied head is the embedding: stored once) and the config."""
    state = {k: v.half() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    torch.save({"config": asdict(model.config), "state_dict": state}, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--out", type=Path, default=TABLE)
    parser.add_argument("--checkpoint", type=Path, default=CHECKPOINT)
    parser.add_argument("--add-off-ladder", action="store_true",
                        help=f"train only {OFF_LADDER!r} and add it to the table --out")  # fmt: skip
    add_device_argument(parser)
    args = parser.parse_args()
    if args.add_off_ladder:
        add_off_ladder(args)
        return
    ranks = start_run(args.device)
    check_batch_size(BATCH, ranks, "BATCH (tools/training/modern_ladder.py)")

    total = time.process_time()
    corpus = lm_corpus(VOCAB)
    bigram = bigram_lm(corpus.train_ids, corpus.vocab_size, beta=BIGRAM_BETA).nll(
        corpus.held_out_ids
    )
    unigram = unigram_lm(corpus.train_ids, corpus.vocab_size).nll(corpus.held_out_ids)
    settings = []
    for rung, (name, change) in enumerate(zip(RUNGS, CHANGES, strict=True)):
        d_ff = matched_d_ff(rung)
        settings.append({"setting": name, "change": change, "d_ff": d_ff,
                         "parameters": count(build(rung, d_ff, corpus.vocab_size))})  # fmt: skip
    plan = [(rung, LR) for rung in range(len(RUNGS))] + [(0, HIGH_LR), (GQA, HIGH_LR)]
    plan.append((GPT_ROPE, LR))
    runs = []
    for rung, lr in plan:
        for seed in args.seeds:
            record, model = run(rung, seed, lr, args.steps, corpus=corpus, ranks=ranks)
            runs.append(record)
            if not ranks.is_main:
                continue
            print(f"{NAMES[rung]:12s} lr {lr:g} seed {seed}: held-out {record['held_out']:.4f} "
                  f"({record['cpu_seconds']:.0f} CPU-s)", flush=True)  # fmt: skip
            if rung == ROPE and lr == LR and seed == args.seeds[0]:
                save_checkpoint(model, args.checkpoint)
    table = {
        "about": "lecture 13: GPT -> ModernLM one change at a time; python -m tools.training.modern_ladder",
        "config": {
            "vocab_size": corpus.vocab_size,
            "d_model": D,
            "num_heads": HEADS,
            "num_layers": LAYERS,
            "context": CONTEXT,
            "batch": BATCH,
            "steps": args.steps,
            "warmup": WARMUP,
            "schedule": "cosine",
            "weight_decay": 0.0,
            "clip_grad": 1.0,
            "eval_every": EVAL_EVERY,
            "train_block": BLOCK,
            "threads": 1,
            "torch": torch.__version__,
        },
        "held_out_tokens": len(corpus.held_out_ids),
        "bigram": bigram,
        "unigram": unigram,
        "settings": settings,
        "off_ladder": [off_ladder_setting(corpus.vocab_size)],
        "summary": summarise(runs),
        "runs": runs,
        "cpu_seconds": round(time.process_time() - total, 1),
    }
    if ranks.is_main:
        args.out.write_text(json.dumps(table, indent=1) + "\n")
        print(f"wrote {args.out} ({table['cpu_seconds']:.0f} CPU-seconds in all)")
    finish(ranks)


def off_ladder_setting(vocab_size: int) -> dict:
    d_ff = matched_d_ff(GPT_ROPE)
    return {"setting": OFF_LADDER, "change": OFF_LADDER_CHANGE, "d_ff": d_ff,
            "parameters": count(build(GPT_ROPE, d_ff, vocab_size))}  # fmt: skip


def add_off_ladder(args: argparse.Namespace) -> None:
    """Train the off-ladder setting (one process) and put its runs into the table ``args.out``."""
    table = json.loads(args.out.read_text())
    if table["config"]["steps"] != args.steps:
        raise SystemExit(
            f"--steps {args.steps} differs from the table's {table['config']['steps']}"
        )
    start, corpus = time.process_time(), lm_corpus(VOCAB)
    runs = [r for r in table["runs"] if r["setting"] != OFF_LADDER]
    for seed in args.seeds:
        record, _ = run(GPT_ROPE, seed, LR, args.steps, corpus=corpus)
        runs.append(record)
        print(f"{OFF_LADDER} lr {LR:g} seed {seed}: held-out {record['held_out']:.4f} "
              f"({record['cpu_seconds']:.0f} CPU-s)", flush=True)  # fmt: skip
    table["off_ladder"] = [off_ladder_setting(corpus.vocab_size)]
    table["runs"], table["summary"] = runs, summarise(runs)
    table["cpu_seconds"] = round(table["cpu_seconds"] + time.process_time() - start, 1)
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"added {OFF_LADDER} to {args.out}")


if __name__ == "__main__":
    main()
