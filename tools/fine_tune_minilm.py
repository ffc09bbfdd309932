"""Maintainer's tool: lecture 12's fine-tuned MiniLM topic classifier and its comparison table.

    python -m tools.fine_tune_minilm       # writes course_lib/data/minilm_topics.pt (~10 MB)

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
   epoch with the best validation accuracy is evaluated once on test.

Deterministic: one thread, fixed seeds and steps. Stored in float16, loaded with
``weights_only=True`` by :func:`course_lib.pretrained.load_topic_classifier`.
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
from course_lib.data.docstrings import TOPICS, load_topic_sentences
from course_lib.models.classifier import BertClassifier, accuracy_ci, encode_sentences, mean_pool
from course_lib.pretrained import load_minilm_encoder
from course_lib.training import learning_rate_at

ROOT = Path(__file__).resolve().parents[1]
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


def frozen_pass(tokenizer, encoder, texts):
    """``(cls (N, H), mean (N, H), middle)``: middle[i] = layer ``6 - TOP`` output, real tokens."""
    n_layers = encoder.config.num_hidden_layers
    order, batches = encode_sentences(tokenizer, texts, MAX_LENGTH)
    cls_rows, mean_rows, mid_rows = [], [], []
    with torch.no_grad():
        for b in batches:
            out = encoder(b["input_ids"], b["token_type_ids"], b["attention_mask"])
            cls_rows += list(out.last_hidden_state[:, 0])
            mean_rows += list(mean_pool(out.last_hidden_state, b["attention_mask"]))
            mid = out.hidden_states[n_layers - TOP]
            mid_rows += [
                mid[j, : int(b["attention_mask"][j].sum())].clone() for j in range(len(mid))
            ]
    back = np.argsort(order)
    return (torch.stack(cls_rows).numpy()[back], torch.stack(mean_rows).numpy()[back],
            [mid_rows[k] for k in back])  # fmt: skip


def padded(rows):
    """``(hidden (b, n, H), mask (b, n))`` from a list of ``(n_i, H)`` tensors."""
    n = max(len(r) for r in rows)
    h = torch.zeros(len(rows), n, rows[0].shape[-1])
    m = torch.zeros(len(rows), n, dtype=torch.long)
    for j, r in enumerate(rows):
        h[j, : len(r)] = r
        m[j, : len(r)] = 1
    return h, m


@torch.no_grad()
def predict_top(model, middle):
    model.eval()
    preds = [model(*padded(middle[i : i + 64])).argmax(-1) for i in range(0, len(middle), 64)]
    return torch.cat(preds).numpy()


def fine_tune_top(encoder, middle, y, val_middle, val_y, lr, head_lr, epochs, batch_size):
    """Top ``TOP`` layers + head trained on cached states; ``(best, sweep rows)``."""
    n_layers = encoder.config.num_hidden_layers
    seed_everything(0, threads=1)
    rng = np.random.default_rng(0)
    model = BertClassifier(
        [copy.deepcopy(encoder.encoder.layers[i]) for i in range(n_layers - TOP, n_layers)],
        encoder.config.hidden_size, len(TOPICS),
    )  # fmt: skip
    with torch.no_grad():
        model.pooler.load_state_dict(encoder.pooler.state_dict())
    rates = (lr, head_lr)
    opt = torch.optim.AdamW(
        [{"params": model.layers.parameters()},
         {"params": list(model.pooler.parameters()) + list(model.classifier.parameters())}],
        lr=lr, weight_decay=0.01,
    )  # fmt: skip
    y_t = torch.from_numpy(y)
    steps_per_epoch = len(y) // batch_size
    total, step, rows, best = steps_per_epoch * epochs, 0, [], None
    for epoch in range(epochs):
        perm = rng.permutation(len(y))
        model.train()
        for k in range(steps_per_epoch):
            idx = perm[k * batch_size : (k + 1) * batch_size]
            for g, rate in zip(opt.param_groups, rates, strict=True):
                g["lr"] = learning_rate_at(step, total, rate, total // 10)
            loss = F.cross_entropy(model(*padded([middle[i] for i in idx])), y_t[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
        val = float((predict_top(model, val_middle) == val_y).mean())
        rows.append({"lr": lr, "epoch": epoch + 1, "validation": val, "loss": loss.item()})
        print(rows[-1], flush=True)
        if best is None or val > best["validation"]:
            best = {"lr": lr, "epoch": epoch + 1, "validation": val,
                    "state": copy.deepcopy(model.state_dict())}  # fmt: skip
    model.load_state_dict(best["state"])
    best["model"] = model
    return best, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lrs", type=float, nargs="+", default=[3e-5, 1e-4, 3e-4])
    parser.add_argument("--head-lr", type=float, default=1e-3, help="pooler + linear head")
    parser.add_argument("--all-epochs", type=int, default=4, help="top layer, whole split")
    parser.add_argument("--full-epochs", type=int, default=8)
    parser.add_argument("--full-lr", type=float, default=5e-5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    seed_everything(0, threads=1)
    tokenizer, encoder = load_minilm_encoder()
    budget = load_topic_sentences("train", per_topic=BUDGET)
    pool = load_topic_sentences("train")
    val = load_topic_sentences("validation", per_topic=VALIDATION)
    test = load_topic_sentences("test")
    table = {}

    # 1. One frozen pass over every sentence: features and the cache below the top layer(s).
    c0 = time.process_time()
    frozen = {name: frozen_pass(tokenizer, encoder, texts)
              for name, (texts, _) in [("pool", pool), ("validation", val), ("test", test)]}  # fmt: skip
    embed_cpu = time.process_time() - c0
    print(f"frozen pass {embed_cpu:.0f} CPU s", flush=True)
    where = {t: i for i, t in enumerate(pool[0])}
    pick = np.array([where[t] for t in budget[0]])  # the budget's rows in the pool
    for k, kind in enumerate(("cls", "mean")):
        c1 = time.process_time()
        val_acc, c, clf = logistic(frozen["pool"][k][pick], budget[1], frozen["validation"][k],
                                   val[1])  # fmt: skip
        table[f"frozen MiniLM, {kind} + logistic regression"] = {
            "test": accuracy_ci(clf.predict(frozen["test"][k]) == test[1]),
            "validation": val_acc,
            "C": c,
            "cpu_seconds": round(embed_cpu + time.process_time() - c1, 1),
        }
        print(kind, table[f"frozen MiniLM, {kind} + logistic regression"], flush=True)

    # 2. Top-layer fine-tuning on the budget, with a small learning-rate sweep.
    middle = [frozen["pool"][2][i] for i in pick]
    sweep, best = [], None
    c1 = time.process_time()
    for lr in args.lrs:
        got, rows = fine_tune_top(encoder, middle, budget[1], frozen["validation"][2], val[1], lr,
                                  args.head_lr, args.epochs, args.batch_size)  # fmt: skip
        sweep += rows
        if best is None or got["validation"] > best["validation"]:
            best = got
    test_preds = predict_top(best["model"], frozen["test"][2])
    name = f"MiniLM, top {TOP} layer fine-tuned + head on [CLS]"
    table[name] = {
        "test": accuracy_ci(test_preds == test[1]),
        "validation": best["validation"],
        "lr": best["lr"],
        "head_lr": args.head_lr,
        "epochs": best["epoch"],
        "cpu_seconds_all_sweep": round(time.process_time() - c1, 1),
    }
    print(table[name], flush=True)
    shipped = {"budget": {k: v.half() for k, v in best["state"].items()}}
    test_predictions = {"budget": torch.from_numpy(test_preds.astype(np.int8))}

    def save():
        args.out.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "state_dicts": shipped,  # {"budget": ..., "all": ...}
                # mean-pooled frozen features of the whole training split, in file order: the
                # lecture's learning curve (it checks a few against a live pass)
                "train_mean_features": torch.from_numpy(frozen["pool"][1]).half(),
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
                },  # fmt: skip
            },
            args.out,
        )
        print(f"saved {args.out}", flush=True)

    save()  # the shipped part first; the reported-only rows are added when they are done

    # 2b. The same recipe on the whole training split (reported): what more labels buy.
    c1 = time.process_time()
    got, rows = fine_tune_top(encoder, frozen["pool"][2], pool[1], frozen["validation"][2],
                              val[1], best["lr"], args.head_lr, args.all_epochs,
                              args.batch_size * 2)  # fmt: skip
    all_preds = predict_top(got["model"], frozen["test"][2])
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
        seed_everything(0, threads=1)
        rng = np.random.default_rng(0)
        full = copy.deepcopy(encoder).train()
        head = BertClassifier([], encoder.config.hidden_size, len(TOPICS))
        with torch.no_grad():
            head.pooler.load_state_dict(encoder.pooler.state_dict())
        rates = (args.full_lr, args.head_lr)
        opt = torch.optim.AdamW(
            [{"params": full.parameters()}, {"params": head.parameters()}],
            lr=args.full_lr, weight_decay=0.01,
        )  # fmt: skip
        texts, y_train = budget[0], torch.from_numpy(budget[1])

        @torch.no_grad()
        def predict_full(split_texts):
            full.eval()
            head.eval()
            order, batches = encode_sentences(tokenizer, split_texts, MAX_LENGTH)
            preds = []
            for b in batches:
                out = full(b["input_ids"], b["token_type_ids"], b["attention_mask"])
                preds += head(out.last_hidden_state, b["attention_mask"]).argmax(-1).tolist()
            return np.array(preds)[np.argsort(order)]

        steps_per_epoch = len(texts) // args.batch_size
        total, step, c2 = steps_per_epoch * args.full_epochs, 0, time.process_time()
        full_sweep, best_full = [], None
        for epoch in range(args.full_epochs):
            full.train()
            head.train()
            perm = rng.permutation(len(texts))
            for k in range(steps_per_epoch):
                idx = perm[k * args.batch_size : (k + 1) * args.batch_size]
                # encode_sentences sorts the rows by length: reorder the labels alike
                order, (b,) = encode_sentences(
                    tokenizer, [texts[i] for i in idx], MAX_LENGTH, 10**6
                )
                for g, rate in zip(opt.param_groups, rates, strict=True):
                    g["lr"] = learning_rate_at(step, total, rate, total // 10)
                out = full(b["input_ids"], b["token_type_ids"], b["attention_mask"])
                logits = head(out.last_hidden_state, b["attention_mask"])
                loss = F.cross_entropy(logits, y_train[idx][order])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
            v = float((predict_full(val[0]) == val[1]).mean())
            full_sweep.append({"epoch": epoch + 1, "validation": v, "loss": loss.item()})
            print(full_sweep[-1], f"{time.process_time() - c2:.0f} CPU s", flush=True)
            if best_full is None or v > best_full["validation"]:
                best_full = {"epoch": epoch + 1, "validation": v,
                             "state": (copy.deepcopy(full.state_dict()),
                                       copy.deepcopy(head.state_dict()))}  # fmt: skip
        train_cpu = time.process_time() - c2
        full.load_state_dict(best_full["state"][0])
        head.load_state_dict(best_full["state"][1])
        table["MiniLM, fully fine-tuned + head on [CLS]"] = {
            "test": accuracy_ci(predict_full(test[0]) == test[1]),
            "validation": best_full["validation"],
            "lr": args.full_lr,
            "head_lr": args.head_lr,
            "epochs": best_full["epoch"],
            "cpu_seconds": round(train_cpu, 1),
            "epochs_trained": args.full_epochs,
            "sweep": full_sweep,
        }
        print(table["MiniLM, fully fine-tuned + head on [CLS]"], flush=True)
        save()


if __name__ == "__main__":
    main()
