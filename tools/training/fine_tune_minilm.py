"""Maintainer's tool: lecture 12's fine-tuned MiniLM topic classifier and its comparison table.

    python -m tools.training.fine_tune_minilm       # writes course_lib/data/minilm_topics.pt (~10 MB)
    python -m tools.training.fine_tune_minilm --only random-init   # stage 4 alone, into the same file
    python -m tools.training.fine_tune_minilm --only full          # stage 3 alone, into the same file
    torchrun --standalone --nproc_per_node=2 -m tools.training.fine_tune_minilm --out /tmp/m.pt

Data: :mod:`course_lib.data.docstrings` (six topics of standard-library docstring sentences).
The *labelled budget* is what lecture 12 trains on: ``BUDGET`` sentences per topic of the
training split for training and ``VALIDATION`` per topic of the validation split for every
choice (regularisation, learning rate, epoch); the whole test split (2,550 sentences) is used
once per model. MiniLM's weights run in the course's own
:class:`~course_lib.models.bert_encoder.BertEncoder`.

1. One pass of the frozen encoder over every sentence gives the *frozen features* ([CLS] and
   mean pooling of the last layer; a logistic regression on them) and caches the output of
   layer ``6 - TOP``. The mean-pooled features of the whole training split ship with the
   checkpoint, for the lecture's learning curve.
2. *Top-layer fine-tuning* (shipped, twice): the top ``TOP`` layers + pooler + linear head on
   [CLS] are trained on the cached states at each learning rate of a small sweep for the layer (the
   freshly initialised head gets its own, larger rate ``--head-lr``: layer-wise rates); the
   epoch and rate with the best validation accuracy are kept and evaluated once on test.
   The same recipe, at the chosen rate, is also run on the *whole* training split (3,322
   sentences); both fine-tuned layers ship (``state_dicts["budget"]`` and ``["all"]``), with
   the script's test predictions of each, so the lecture and the tests can check them.
3. *Full fine-tuning* (reported, not shipped: 22M parameters, ~45 MB even in float16): every
   layer and the embeddings trained end to end on the budget, BERT's recipe, same head; the
   epoch with the best validation accuracy is evaluated once on test. Its test predictions
   ship (``test_predictions["full"]``), for the lecture's paired test.
4. *The control* (reported, not shipped; its test predictions ship): MiniLM's architecture
   (6 layers x 384, its WordPiece vocabulary) from BERT's random initialisation, every
   parameter trained on the same budget with the same loop as 3, at each rate of a small sweep
   (one rate for all parameters: nothing is pretrained), the rate and epoch chosen on the same
   validation sample. What the pretrained weights are worth, everything else equal.

Deterministic: one thread, fixed seeds and steps. Stored in float16, loaded with
``weights_only=True`` by :func:`course_lib.pretrained.load_topic_classifier`.

Under ``torchrun`` (``tools/training/distributed.py``) every process takes its rows of each
global batch of ``--batch-size`` sentences and computes every evaluation alike; rank 0 writes.
Dropout (the encoder's and the head's) draws its masks per process, so such a run is another
draw of the same training, not the shipped bits; without dropout two processes give one
process's weights to rounding (``tests/test_distributed_training.py``).
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from course_lib import seed_everything
from course_lib.configs import current_names
from course_lib.data.docstrings import TOPICS, load_topic_sentences
from course_lib.models.classifier import (
    BertClassifier,
    accuracy_ci,
    encode_sentences,
    fine_tune,
    frozen_pass,
    predict_classes,
    top_layer_classifier,
)
from course_lib.pretrained import load_minilm_encoder
from course_lib.training import learning_rate_at
from tools.training.distributed import (
    ONE_PROCESS,
    Ranks,
    add_device_argument,
    check_batch_size,
    cpu_only,
    finish,
    mean_over_ranks,
    my_rows,
    start_run,
    wrap,
)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "course_lib" / "data" / "minilm_topics.pt"
TOP = 1  # encoder layers fine-tuned (and shipped)
MAX_LENGTH = 64
BUDGET = 64  # labelled training sentences per topic
VALIDATION = 32  # labelled validation sentences per topic
C_GRID = (0.1, 1.0, 10.0)


def logistic(train_x, train_y, val_x, val_y):
    """``(validation accuracy, C, classifier)`` of the C of :data:`C_GRID` best on validation."""
    from sklearn.linear_model import LogisticRegression

    best = None
    for c in C_GRID:
        clf = LogisticRegression(C=c, max_iter=3000).fit(train_x, train_y)
        acc = float((clf.predict(val_x) == val_y).mean())
        if best is None or acc > best[0]:
            best = (acc, c, clf)
    return best


def fine_tune_top(encoder, middle, y, val_middle, val_y, lr, head_lr, epochs, batch_size,
                  ranks: Ranks = ONE_PROCESS, head_dropout: float = 0.1):  # fmt: skip
    """Top ``TOP`` layers + head trained on cached states; ``(best, sweep rows)``.

    Under torchrun each process takes its rows of every batch (:func:`course_lib.fine_tune`'s
    ``rows``); every process evaluates alike (no collective), so all keep the same best epoch.
    ``head_dropout``: the head's (:class:`BertClassifier`'s default 0.1; dropout draws its masks
    per process, so the equality test runs without it). The sweep rows' losses are rank 0's."""
    check_batch_size(batch_size, ranks)
    seed_everything(0, threads=1)  # before the head's random weights are drawn
    model = top_layer_classifier(encoder, TOP, len(TOPICS))
    model.dropout.p = head_dropout
    several = ranks.world_size > 1  # one process: fine_tune as it was (no rows, no wrapper)
    log = fine_tune(model, middle, y, val_middle, val_y, lr=lr, head_lr=head_lr, epochs=epochs,
                    batch_size=batch_size, seed=0, keep_best=True,
                    rows=(lambda b: my_rows(b, ranks)) if several else None,
                    trained=wrap(model, ranks) if several else None)  # fmt: skip
    steps = len(log["losses"]) // epochs
    rows = [{"lr": lr, "epoch": e + 1, "validation": v, "loss": log["losses"][(e + 1) * steps - 1]}
            for e, v in enumerate(log["validation"])]  # fmt: skip
    for row in rows if ranks.is_main else []:
        print(row, flush=True)
    best = dict(max(rows, key=lambda r: r["validation"]))  # the first of equals, as fine_tune
    best["state"] = copy.deepcopy(model.state_dict())
    best["model"] = model
    return best, rows


def fine_tune_full(tokenizer, make_encoder, pooler, budget, val, test, lrs, head_lr, epochs,
                   batch_size, first_steps=0, stop=False, ranks: Ranks = ONE_PROCESS,
                   head_dropout: float = 0.1):  # fmt: skip
    """Every layer and the embeddings trained with a head on [CLS], at each rate of ``lrs``.

    ``make_encoder()`` builds the encoder (a copy of MiniLM, or random weights) after the seed
    is set; ``pooler`` (or None) is copied into the head. The rate and epoch with the best
    validation accuracy are kept and evaluated once on test. Returns ``{"row": the table's
    row, "predictions": test predictions, "first_losses": the first rate's first
    ``first_steps`` training losses}``; with ``stop``, only those losses (and ``"modules"``:
    the encoder and head), after as many steps (tests/test_fine_tuning.py checks them against
    the shipped run). Under torchrun every process encodes the same global batch and keeps its
    rows (the same padding as one process); the encoder and the head each run in
    ``DistributedDataParallel``; every process evaluates alike. ``head_dropout``: as
    :func:`fine_tune_top`.
    """

    @torch.no_grad()
    def predict(full, head, split_texts):
        full.eval()
        head.eval()
        order, batches = encode_sentences(tokenizer, split_texts, MAX_LENGTH)
        preds = []
        for b in batches:
            out = full(b["input_ids"], b["token_type_ids"], b["attention_mask"])
            preds += head(out.last_hidden_state, b["attention_mask"]).argmax(-1).tolist()
        return np.array(preds)[np.argsort(order)]

    texts, y_train = budget[0], torch.from_numpy(budget[1])
    steps_per_epoch = len(texts) // batch_size
    sweep, best, first_losses, c0 = [], None, [], time.process_time()
    for lr in lrs:
        seed_everything(0, threads=1)
        rng = np.random.default_rng(0)
        full = make_encoder().train()
        head = BertClassifier([], full.config.hidden_size, len(TOPICS), dropout=head_dropout)
        if pooler is not None:
            with torch.no_grad():
                head.pooler.load_state_dict(pooler.state_dict())
        rates = (lr, lr if head_lr is None else head_lr)
        opt = torch.optim.AdamW(
            [{"params": full.parameters()}, {"params": head.parameters()}],
            lr=lr, weight_decay=0.01,
        )  # fmt: skip
        total, step = steps_per_epoch * epochs, 0
        if ranks.world_size > 1:  # MiniLM's own pooler is not in the loss (the head has its
            full.pooler = None  # own), and DDP waits for a gradient of every parameter it holds
        full_t, head_t = wrap(full, ranks), wrap(head, ranks)
        for epoch in range(epochs):
            full.train()
            head.train()
            perm = rng.permutation(len(texts))
            for k in range(steps_per_epoch):
                idx = perm[k * batch_size : (k + 1) * batch_size]
                # encode_sentences sorts the rows by length: reorder the labels alike
                order, (b,) = encode_sentences(
                    tokenizer, [texts[i] for i in idx], MAX_LENGTH, 10**6
                )
                for g, rate in zip(opt.param_groups, rates, strict=True):
                    g["lr"] = learning_rate_at(step, total, rate, total // 10)
                ids, types, mask, labels = my_rows(
                    (b["input_ids"], b["token_type_ids"], b["attention_mask"], y_train[idx][order]),
                    ranks,
                )  # this process's rows (one process: the whole batch)
                out = full_t(ids, types, mask)
                logits = head_t(out.last_hidden_state, mask)
                loss = F.cross_entropy(logits, labels)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if lr == lrs[0] and step < first_steps:
                    first_losses.append(mean_over_ranks(loss, ranks))
                step += 1
                if stop and step == first_steps:
                    return {"first_losses": first_losses, "modules": (full, head)}
            v = float((predict(full, head, val[0]) == val[1]).mean())
            sweep.append({"lr": lr, "epoch": epoch + 1, "validation": v,
                          "loss": mean_over_ranks(loss, ranks)})  # fmt: skip
            if ranks.is_main:
                print(sweep[-1], f"{time.process_time() - c0:.0f} CPU s", flush=True)
            if best is None or v > best["validation"]:
                best = {"lr": lr, "epoch": epoch + 1, "validation": v,
                        "state": (copy.deepcopy(full.state_dict()),
                                  copy.deepcopy(head.state_dict()))}  # fmt: skip
    train_cpu = time.process_time() - c0
    full.load_state_dict(best["state"][0])
    head.load_state_dict(best["state"][1])
    preds = predict(full, head, test[0])
    row = {
        "test": accuracy_ci(preds == test[1]),
        "validation": best["validation"],
        "lr": best["lr"],
        "head_lr": head_lr,
        "epochs": best["epoch"],
        "cpu_seconds": round(train_cpu, 1),
        "epochs_trained": epochs,
        "sweep": sweep if len(lrs) > 1 else [{k: v for k, v in r.items() if k != "lr"}
                                              for r in sweep],
    }  # fmt: skip
    return {"row": row, "predictions": preds, "first_losses": first_losses}


RANDOM_INIT = "MiniLM's architecture, random weights, all layers trained"
FULL = "MiniLM, fully fine-tuned + head on [CLS]"


def full_stage(args, tokenizer, encoder, budget, val, test, table, test_predictions,
               ranks: Ranks = ONE_PROCESS):  # fmt: skip
    """Stage 3: every layer of MiniLM fine-tuned on the budget (reported; predictions shipped).

    Run alone (``--only full``) on a file that already has the row, the run must reproduce it
    (the same validation choice and test accuracy); the stored row, with its CPU time, stays.
    """
    got = fine_tune_full(
        tokenizer, lambda: copy.deepcopy(encoder), encoder.pooler, budget, val, test,
        [args.full_lr], args.head_lr, args.full_epochs, args.batch_size, ranks=ranks,
    )  # fmt: skip
    row, stored = got["row"], table.get(FULL)
    if stored is not None:
        same = {k: (row[k], stored[k]) for k in ("validation", "epochs", "lr")}
        if any(a != b for a, b in same.values()) or not np.allclose(row["test"], stored["test"]):
            raise SystemExit(f"the re-run does not reproduce the stored row: {same}, "
                             f"test {row['test']} vs {stored['test']}")  # fmt: skip
    else:
        table[FULL] = row
    test_predictions["full"] = torch.from_numpy(got["predictions"].astype(np.int8))
    if ranks.is_main:
        print({k: v for k, v in row.items() if k != "sweep"}, flush=True)


def random_encoder(config):
    """MiniLM's architecture with BERT's random initialisation (N(0, 0.02), zero biases)."""
    from course_lib.models.bert import TinyBert
    from course_lib.models.bert_encoder import BertEncoder

    model = BertEncoder(config, add_pooler=False)  # the head has its own pooler
    model.apply(TinyBert._init_weights)  # the same rule as lecture 08's tiny BERT
    return model


def random_init_stage(args, tokenizer, encoder, budget, val, test, table, test_predictions,
                      ranks: Ranks = ONE_PROCESS):  # fmt: skip
    """Stage 4: the same architecture, no pretraining, trained on the budget (reported)."""
    got = fine_tune_full(
        tokenizer, lambda: random_encoder(encoder.config), None, budget, val, test,
        args.random_lrs, None, args.random_epochs, args.batch_size, first_steps=3, ranks=ranks,
    )  # fmt: skip
    row = got["row"]
    row["head_lr"] = "the same as lr"
    row["first_losses"] = got["first_losses"]  # tests/test_fine_tuning.py reruns these steps
    table[RANDOM_INIT] = row
    test_predictions["random_init"] = torch.from_numpy(got["predictions"].astype(np.int8))
    if ranks.is_main:
        print({k: v for k, v in row.items() if k != "sweep"}, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lrs", type=float, nargs="+", default=[3e-5, 1e-4, 3e-4])
    parser.add_argument("--head-lr", type=float, default=1e-3, help="pooler + linear head")
    parser.add_argument("--all-epochs", type=int, default=4, help="top layer, whole split")
    parser.add_argument("--full-epochs", type=int, default=8)
    parser.add_argument("--full-lr", type=float, default=5e-5)
    parser.add_argument("--random-epochs", type=int, default=15, help="the random-init control")
    parser.add_argument("--random-lrs", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--only",
        choices=["random-init", "full"],
        help="run only this stage, adding its row (and test predictions) to --out",
    )
    add_device_argument(parser)
    args = parser.parse_args()
    cpu_only(args.device, "fine_tune_minilm")
    ranks = start_run(args.device)
    check_batch_size(args.batch_size, ranks)  # before anything slow (stage 2b: twice as many)
    say = print if ranks.is_main else lambda *a, **k: None

    seed_everything(0, threads=1)
    tokenizer, encoder = load_minilm_encoder()
    budget = load_topic_sentences("train", per_topic=BUDGET)
    pool = load_topic_sentences("train")
    val = load_topic_sentences("validation", per_topic=VALIDATION)
    test = load_topic_sentences("test")
    table = {}
    random_settings = {"random_lrs": args.random_lrs, "random_epochs": args.random_epochs}
    if args.only:  # the other stages' results stay as they are in --out
        ckpt = current_names(torch.load(args.out, map_location="cpu", weights_only=True))
        stage = random_init_stage if args.only == "random-init" else full_stage
        stage(args, tokenizer, encoder, budget, val, test, ckpt["table"],
              ckpt["test_predictions"], ranks)  # fmt: skip
        if args.only == "random-init":
            ckpt["training"].update(random_settings)
        if ranks.is_main:
            torch.save(ckpt, args.out)
            print(f"saved {args.out}", flush=True)
        finish(ranks)
        return

    # 1. One frozen pass over every sentence: features and the cache below the top layer(s).
    c0 = time.process_time()
    splits = [("pool", pool), ("validation", val), ("test", test)]
    frozen = {
        name: frozen_pass(tokenizer, encoder, texts, MAX_LENGTH, TOP) for name, (texts, _) in splits
    }
    embed_cpu = time.process_time() - c0
    say(f"frozen pass {embed_cpu:.0f} CPU s", flush=True)
    where = {t: i for i, t in enumerate(pool[0])}
    pick = np.array([where[t] for t in budget[0]])  # the budget's rows in the pool
    for kind in ("cls", "mean") if ranks.is_main else ():  # the table is rank 0's
        c1 = time.process_time()
        train_x, val_x = frozen["pool"][kind][pick], frozen["validation"][kind]
        val_acc, c, clf = logistic(train_x, budget[1], val_x, val[1])
        table[f"frozen MiniLM, {kind} + logistic regression"] = {
            "test": accuracy_ci(clf.predict(frozen["test"][kind]) == test[1]),
            "validation": val_acc,
            "C": c,
            "cpu_seconds": round(embed_cpu + time.process_time() - c1, 1),
        }
        print(kind, table[f"frozen MiniLM, {kind} + logistic regression"], flush=True)

    # 2. Top-layer fine-tuning on the budget, with a small learning-rate sweep.
    middle = [frozen["pool"]["below_top"][i] for i in pick]
    val_middle, test_middle = frozen["validation"]["below_top"], frozen["test"]["below_top"]
    sweep, best = [], None
    c1 = time.process_time()
    for lr in args.lrs:
        got, rows = fine_tune_top(encoder, middle, budget[1], val_middle, val[1], lr,
                                  args.head_lr, args.epochs, args.batch_size, ranks)  # fmt: skip
        sweep += rows
        if best is None or got["validation"] > best["validation"]:
            best = got
    test_preds = predict_classes(best["model"], test_middle)
    name = f"MiniLM, top {TOP} layer fine-tuned + head on [CLS]"
    table[name] = {
        "test": accuracy_ci(test_preds == test[1]),
        "validation": best["validation"],
        "lr": best["lr"],
        "head_lr": args.head_lr,
        "epochs": best["epoch"],
        "cpu_seconds_all_sweep": round(time.process_time() - c1, 1),
    }
    say(table[name], flush=True)
    shipped = {"budget": {k: v.half() for k, v in best["state"].items()}}
    test_predictions = {"budget": torch.from_numpy(test_preds.astype(np.int8))}

    def save():
        if not ranks.is_main:
            return
        args.out.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "state_dicts": shipped,  # {"budget": ..., "all": ...}
                # mean-pooled frozen features of the whole training split, in file order: the
                # lecture's learning curve (it checks a few against a live pass)
                "train_mean_features": torch.from_numpy(frozen["pool"]["mean"]).half(),
                "test_predictions": test_predictions,
                "top_layers": TOP,
                "topics": list(TOPICS),
                "max_length": MAX_LENGTH,
                "budget": {"train_per_topic": BUDGET, "validation_per_topic": VALIDATION},
                "C_grid": list(C_GRID),
                "table": table,
                "sweep": sweep,
                "training": {
                    "epochs": args.epochs,
                    "lrs": args.lrs,
                    "head_lr": args.head_lr,
                    "batch_size": args.batch_size,
                    "seed": 0,
                    "threads": 1,
                    "all_epochs": args.all_epochs,
                    "full_epochs": args.full_epochs,
                    "full_lr": args.full_lr,
                    **random_settings,
                },  # fmt: skip
            },
            args.out,
        )
        print(f"saved {args.out}", flush=True)

    save()  # the shipped part first; the reported-only rows are added when they are done

    # 2b. The same recipe on the whole training split (reported): what more labels buy.
    c1 = time.process_time()
    got, rows = fine_tune_top(encoder, frozen["pool"]["below_top"], pool[1], val_middle, val[1],
                              best["lr"], args.head_lr, args.all_epochs,
                              args.batch_size * 2, ranks)  # fmt: skip
    all_preds = predict_classes(got["model"], test_middle)
    shipped["all"] = {k: v.half() for k, v in got["state"].items()}
    test_predictions["all"] = torch.from_numpy(all_preds.astype(np.int8))
    table[f"MiniLM, top {TOP} layer fine-tuned, all {len(pool[1]):,} training sentences"] = {
        "test": accuracy_ci(all_preds == test[1]),
        "validation": got["validation"],
        "lr": best["lr"],
        "epochs": got["epoch"],
        "cpu_seconds": round(time.process_time() - c1, 1),
        "sweep": rows,
    }
    save()

    # 3. Full fine-tuning (every layer and the embeddings) on the budget, reported only.
    if args.full_epochs:
        full_stage(args, tokenizer, encoder, budget, val, test, table, test_predictions, ranks)
        save()

    # 4. The control: MiniLM's architecture from random weights, the same budget and choice.
    random_init_stage(args, tokenizer, encoder, budget, val, test, table, test_predictions,
                      ranks)  # fmt: skip
    save()
    finish(ranks)


if __name__ == "__main__":
    main()
