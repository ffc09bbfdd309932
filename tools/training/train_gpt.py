"""Maintainer's tool: train lecture 11's tiny GPT on the Python-docs corpus and save it.

    python -m tools.training.train_gpt                          # writes course_lib/data/tiny_gpt.pt
    python -m tools.training.train_gpt --steps 300 --out /tmp/x.pt   # a quick trial
    torchrun --standalone --nproc_per_node=2 -m tools.training.train_gpt --steps 300 --out /tmp/x.pt

What it does (settings in ``course_lib.configs.TINY_GPT_CONFIG`` / ``TINY_GPT_TRAINING``):

* tokens: the byte-level BPE of ``course_lib.data.language_modeling`` (learned from the training
  documents); every 10th *training* document is set aside as a validation set, the rest is
  what the model learns from; the held-out documents (every 10th document of the corpus) are
  never used for any choice;
* AdamW with warm-up, cosine decay, weight decay and dropout (the corpus is small and a 4-layer
  model overfits it within minutes); random windows of ``context_length + 1`` tokens;
* the validation loss every ``eval_every`` steps; the weights of the best validation step are
  kept and saved in float16 (~1.8 MB), with the validation and held-out history.

Deterministic: one thread, fixed seeds and a fixed number of steps, so the same command on the
same machine gives bit-identical weights (another CPU may change the last bits). Under
``torchrun`` (``tools/training/distributed.py``) each process takes its rows of the same global
batch of ``--batch-size`` windows; the model's dropout draws its masks per process, so such a
run is another draw of the same training, not the shipped bits. The lecture
loads the result with ``torch.load(..., weights_only=True)`` via
:func:`course_lib.models.gpt.load_tiny_gpt`.
"""

from __future__ import annotations

import argparse
import copy
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from course_lib import seed_everything
from course_lib.configs import TINY_GPT_CONFIG, TINY_GPT_TRAINING
from course_lib.data.language_modeling import (
    bits_per_char,
    encode_documents,
    evaluate_lm,
    lm_corpus,
    lm_documents,
    random_windows,
)
from course_lib.data.pretraining import split_documents
from course_lib.models.gpt import GPT, GPT_CHECKPOINT, lm_loss
from course_lib.training import train
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


def train_tiny_gpt(config=TINY_GPT_CONFIG, training=TINY_GPT_TRAINING,
                   ranks: Ranks = ONE_PROCESS) -> tuple[GPT, dict, list[dict]]:  # fmt: skip
    """Train ``GPT(config)`` with ``training``'s settings; ``(model, best, history)``.

    Under torchrun each process computes its rows of every global batch; rank 0 evaluates and
    keeps ``best`` (the validation-best step's row and weights) and ``history`` (empty on the
    other ranks). The returned model holds the last step's weights.
    """
    cfg = asdict(training)
    check_batch_size(cfg["batch_size"], ranks)
    seed_everything(cfg["seed"], threads=1)
    corpus = lm_corpus(config.vocab_size)
    fit_docs, val_docs = split_documents(lm_documents()[0], every=10)
    fit_ids = encode_documents(corpus.tokenizer, fit_docs)
    val_ids = encode_documents(corpus.tokenizer, val_docs).to(ranks.device)
    held_out_ids = corpus.held_out_ids.to(ranks.device)
    say = print if ranks.is_main else lambda *a, **k: None
    say(f"tokens: fit {len(fit_ids)}, validation {len(val_ids)}, held-out "
        f"{len(held_out_ids)}", flush=True)  # fmt: skip

    model = wrap(GPT(config), ranks)
    window_gen = torch.Generator().manual_seed(cfg["seed"])
    history: list[dict] = []
    best: dict = {"val_loss": float("inf")}
    losses: list[float] = []
    start = time.process_time()

    def evaluate(step: int) -> None:
        if not ranks.is_main:
            return
        val = evaluate_lm(unwrap(model), val_ids)
        held = evaluate_lm(unwrap(model), held_out_ids)
        n_held = len(held_out_ids) - 1
        row = {
            "step": step,
            "train_loss": sum(losses[-100:]) / max(1, len(losses[-100:])),
            "val_loss": val,
            "held_out_loss": held,
            "held_out_bits_per_char": bits_per_char(held, n_held, corpus.held_out_chars),
            "cpu_seconds": time.process_time() - start,
        }
        history.append(row)
        print({k: round(v, 4) for k, v in row.items()}, flush=True)
        if val < best["val_loss"]:
            best.update(row, state=copy.deepcopy(unwrap(model).state_dict()))
        model.train()

    def batches(step: int):
        if step and step % cfg["eval_every"] == 0:
            evaluate(step)
        global_batch = random_windows(fit_ids, cfg["batch_size"], config.context_length,
                                      window_gen)  # fmt: skip
        return my_rows(global_batch, ranks)

    def loss_fn(model, batch):
        loss = lm_loss(model, batch)
        losses.append(mean_over_ranks(loss, ranks))  # the global batch's loss, for the log
        return loss

    train(model, batches, loss_fn, steps=cfg["steps"], lr=cfg["lr"], warmup=cfg["warmup"],
          schedule=cfg["schedule"], weight_decay=cfg["weight_decay"], seed=cfg["seed"],
          progress=ranks.is_main, desc="tiny GPT")  # fmt: skip
    evaluate(cfg["steps"])
    return unwrap(model), best, history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=TINY_GPT_TRAINING.steps)
    parser.add_argument("--batch-size", type=int, default=TINY_GPT_TRAINING.batch_size,
                        help="the global batch (split over torchrun's processes)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=GPT_CHECKPOINT)
    add_device_argument(parser)
    args = parser.parse_args()
    ranks = start_run(args.device)
    check_batch_size(args.batch_size, ranks)  # before anything slow
    training = replace(TINY_GPT_TRAINING, steps=args.steps, batch_size=args.batch_size)
    _, best, history = train_tiny_gpt(TINY_GPT_CONFIG, training, ranks)
    if ranks.is_main:
        state = {k: v.half().cpu() for k, v in best.pop("state").items()
                 if k != "lm_head.weight"}  # fmt: skip
        torch.save(
            {
                "config": asdict(TINY_GPT_CONFIG),
                "training": asdict(training),
                "best": best,
                "history": history,
                "state_dict": state,
            },
            args.out,
        )
        print(f"saved {args.out} ({args.out.stat().st_size / 1e6:.2f} MB); best step "
              f"{best['step']}")  # fmt: skip
    finish(ranks)


if __name__ == "__main__":
    main()
