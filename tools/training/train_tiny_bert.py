"""Maintainer's tool: pretrain the lecture-08 tiny BERT (MLM + NSP) and save its checkpoint.

    python -m tools.training.train_tiny_bert                    # writes course_lib/data/tiny_bert.pt
    python -m tools.training.train_tiny_bert --steps 500 --out /tmp/x.pt   # a quick trial
    torchrun --standalone --nproc_per_node=2 -m tools.training.train_tiny_bert --steps 500 --out /tmp/x.pt

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
    IGNORE_INDEX,
    PretrainingData,
    load_pretraining_corpus,
    pretraining_tokenizer,
    split_documents,
)
from course_lib.models.bert import (
    TinyBert,
    pretraining_accuracy,
    pretraining_loss,
    pretraining_losses,
)
from course_lib.training import train
from tools.training.distributed import (
    ONE_PROCESS,
    Ranks,
    add_device_argument,
    as_global_mean,
    check_batch_size,
    finish,
    mean_over_ranks,
    my_rows,
    start_run,
    unwrap,
    wrap,
)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "course_lib" / "data" / "tiny_bert.pt"


def pretrain(training=TINY_BERT_TRAINING, eval_every: int = TINY_BERT_TRAINING.eval_every,
             ranks: Ranks = ONE_PROCESS, config=TINY_BERT_CONFIG):  # fmt: skip
    """Pretrain a :class:`TinyBert`; ``(model, tokenizer, history, log)`` (history: rank 0's).

    Under torchrun each process takes its rows of every global batch; the MLM loss, a mean over
    the masked tokens (their number differs between rows), is rescaled to the whole batch's mean
    (``as_global_mean``), so N processes compute one process's gradient.
    """
    cfg = asdict(training)
    check_batch_size(cfg["batch_size"], ranks)
    rng = seed_everything(cfg["seed"], threads=1)
    tokenizer = pretraining_tokenizer(config.vocab_size)
    train_docs, held_docs = split_documents(load_pretraining_corpus())
    data = PretrainingData(tokenizer, train_docs, seq_len=config.context_length)
    held = PretrainingData(tokenizer, held_docs, seq_len=config.context_length)
    here = Ranks(device=ranks.device)  # all rows, on this process's device
    eval_batches = [my_rows(held.batch(64, np.random.default_rng(1000 + i)), here)
                    for i in range(16)]  # fmt: skip

    model = wrap(TinyBert(replace(config, vocab_size=len(tokenizer))), ranks)
    history = []

    def evaluate(step: int) -> None:
        if not ranks.is_main:
            return
        acc = pretraining_accuracy(unwrap(model), eval_batches)  # no_grad, eval mode, no draws
        history.append({"step": step, "loss": float(np.mean(log_losses[-200:] or [0.0])), **acc})
        print(history[-1], flush=True)
        model.train()

    log_losses: list[float] = []

    def batches(step: int):
        # Held-out accuracy every eval_every steps, computed between two training steps.
        if step and step % eval_every == 0:
            evaluate(step)
        return my_rows(data.batch(cfg["batch_size"], rng), ranks)

    def loss_fn(model, batch):
        if ranks.world_size == 1:
            loss = pretraining_loss(model, batch)
        else:
            mlm, nsp = pretraining_losses(model, batch)
            loss = as_global_mean(mlm, (batch["mlm_labels"] != IGNORE_INDEX).sum(), ranks) + nsp
        log_losses.append(mean_over_ranks(loss, ranks))
        return loss

    log = train(
        model, batches, loss_fn, steps=cfg["steps"], lr=cfg["lr"], warmup=cfg["warmup"],
        seed=cfg["seed"], threads=1, progress=ranks.is_main, desc="tiny BERT",
    )  # fmt: skip
    evaluate(cfg["steps"])
    model.eval()
    return unwrap(model), tokenizer, history, log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=TINY_BERT_TRAINING.steps)
    parser.add_argument("--batch-size", type=int, default=TINY_BERT_TRAINING.batch_size,
                        help="the global batch (split over torchrun's processes)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--eval-every", type=int, default=TINY_BERT_TRAINING.eval_every)
    add_device_argument(parser)
    args = parser.parse_args()
    ranks = start_run(args.device)
    check_batch_size(args.batch_size, ranks)  # before anything slow
    training = replace(TINY_BERT_TRAINING, steps=args.steps, batch_size=args.batch_size)
    model, tokenizer, history, log = pretrain(training, args.eval_every, ranks)
    if ranks.is_main:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "config": {k: v for k, v in asdict(model.config).items() if k != "vocab_size"},
                "training": asdict(training),
                "vocab_size": len(tokenizer),
                "history": history,
                "seconds": round(log.seconds, 1),
                "state_dict": {k: v.cpu() for k, v in model.state_dict().items()},
            },
            args.out,
        )
        print(f"saved {args.out} after {log.seconds:.0f} s")
    finish(ranks)


if __name__ == "__main__":
    main()
