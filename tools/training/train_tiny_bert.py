"""Maintainer's tool: pretrain the lecture-08 tiny BERT (MLM + NSP) and save its checkpoint.

    python -m tools.training.train_tiny_bert                    # writes course_lib/data/tiny_bert.pt
    python -m tools.training.train_tiny_bert --steps 500 --out /tmp/x.pt   # a quick trial

Deterministic: one thread, fixed seeds and a fixed number of steps, so the same command on
the same machine gives bit-identical weights (another CPU may change the last bits). The
lecture loads the result with ``torch.load(..., weights_only=True)`` via
:func:`course_lib.models.bert.load_tiny_bert`, because a few minutes of CPU training do not fit
in the notebook's 90-second budget; the notebook still trains a fresh model live for a short run.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

from course_lib import seed_everything
from course_lib.configs import TINY_BERT_CONFIG, TINY_BERT_TRAINING
from course_lib.data.pretraining import (
    PretrainingData,
    load_pretraining_corpus,
    pretraining_tokenizer,
    split_documents,
)
from course_lib.models.bert import TinyBert, pretraining_accuracy, pretraining_loss
from course_lib.training import train

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "course_lib" / "data" / "tiny_bert.pt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=TINY_BERT_TRAINING.steps)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--eval-every", type=int, default=TINY_BERT_TRAINING.eval_every)
    args = parser.parse_args()

    cfg = asdict(replace(TINY_BERT_TRAINING, steps=args.steps))
    rng = seed_everything(cfg["seed"], threads=1)
    tokenizer = pretraining_tokenizer(TINY_BERT_CONFIG.vocab_size)
    train_docs, held_docs = split_documents(load_pretraining_corpus())
    data = PretrainingData(tokenizer, train_docs, seq_len=TINY_BERT_CONFIG.context_length)
    held = PretrainingData(tokenizer, held_docs, seq_len=TINY_BERT_CONFIG.context_length)
    eval_batches = [held.batch(64, np.random.default_rng(1000 + i)) for i in range(16)]

    model = TinyBert(replace(TINY_BERT_CONFIG, vocab_size=len(tokenizer)))
    history = []

    def evaluate(step: int) -> None:
        acc = pretraining_accuracy(model, eval_batches)  # no_grad, eval mode, no random draws
        history.append({"step": step, "loss": float(np.mean(log_losses[-200:] or [0.0])), **acc})
        print(history[-1], flush=True)
        model.train()

    log_losses: list[float] = []

    def batches(step: int):
        # Held-out accuracy every --eval-every steps, computed between two training steps.
        if step and step % args.eval_every == 0:
            evaluate(step)
        return data.batch(cfg["batch_size"], rng)

    def loss_fn(model, batch):
        loss = pretraining_loss(model, batch)
        log_losses.append(loss.item())
        return loss

    log = train(
        model, batches, loss_fn, steps=cfg["steps"], lr=cfg["lr"], warmup=cfg["warmup"],
        seed=cfg["seed"], threads=1, desc="tiny BERT",
    )  # fmt: skip
    evaluate(cfg["steps"])
    model.eval()

    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "config": {k: v for k, v in asdict(model.config).items() if k != "vocab_size"},
            "training": cfg,
            "vocab_size": len(tokenizer),
            "history": history,
            "seconds": round(log.seconds, 1),
            "state_dict": model.state_dict(),
        },
        args.out,
    )
    print(f"saved {args.out} after {log.seconds:.0f} s")


if __name__ == "__main__":
    main()
