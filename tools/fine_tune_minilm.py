"""Maintainer's tool: lecture 12's fine-tuned MiniLM topic classifier and its comparison table.

    python -m tools.fine_tune_minilm       # writes course_lib/data/minilm_topics.pt (~5 MB)

Data: :mod:`course_lib.data.docstrings` (six topics of standard-library docstring sentences).
MiniLM's weights run in the course's own :class:`~course_lib.models.bert_encoder.BertEncoder`.

1. One pass of the frozen encoder over every sentence gives the *frozen features* ([CLS] and
   mean pooling of the last layer, each with a logistic regression whose C is chosen on the
   validation split) and caches the output of layer ``6 - TOP``.
2. *Top-layer fine-tuning* (shipped): the top ``TOP`` layers + pooler + linear head on [CLS] are
   trained on the cached states for a few epochs at each learning rate of a small sweep for
   the layer (the freshly initialised head gets its own, larger rate ``--head-lr``: layer-wise
   rates); the epoch and rate with the best validation accuracy are kept and evaluated once on
   test.
3. *Full fine-tuning* (reported, not shipped: 22M parameters, ~45 MB even in float16): every
   layer and the embeddings trained end to end, the recipe of BERT's paper, same head (again
   with ``--head-lr`` for the head); the epoch with the best validation accuracy is evaluated
   once on test, and its accuracy and CPU time go into the checkpoint's table.

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
MAX_LEN = 64


def unsort(order, rows):
    out = [None] * len(order)
    for k, i in enumerate(order):
        out[i] = rows[k]
    return out


def logistic(train_x, train_y, val_x, val_y):
    from sklearn.linear_model import LogisticRegression

    best = None
    for c in (0.1, 1.0, 10.0):
        clf = LogisticRegression(C=c, max_iter=2000).fit(train_x, train_y)
        acc = (clf.predict(val_x) == val_y).mean()
        if best is None or acc > best[0]:
            best = (acc, c, clf)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-4, 3e-4])
    parser.add_argument("--head-lr", type=float, default=1e-3, help="pooler + linear head")
    parser.add_argument("--full-epochs", type=int, default=2)
    parser.add_argument("--full-lr", type=float, default=5e-5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--limit", type=int, default=0, help="smoke test: sentences per split")
    args = parser.parse_args()

    seed_everything(0, threads=1)
    tokenizer, encoder = load_minilm_encoder()
    n_layers = encoder.config.num_hidden_layers
    data = {s: load_topic_sentences(s) for s in ("train", "validation", "test")}
    if args.limit:
        data = {s: (t[:: len(t) // args.limit][: args.limit], y[:: len(y) // args.limit][: args.limit])
                for s, (t, y) in data.items()}  # fmt: skip
    table = {}

    # 1. One frozen pass: features and the cache of layer n_layers - TOP.
    t0, c0 = time.perf_counter(), time.process_time()
    feats, cache = {}, {}
    with torch.no_grad():
        for split, (texts, _) in data.items():
            order, batches = encode_sentences(tokenizer, texts, MAX_LEN)
            cls_rows, mean_rows, cache_rows = [], [], []
            for b in batches:
                out = encoder(b["input_ids"], b["token_type_ids"], b["attention_mask"])
                last = out.last_hidden_state
                cls_rows += list(last[:, 0])
                mean_rows += list(mean_pool(last, b["attention_mask"]))
                mid = out.hidden_states[n_layers - TOP]
                for j in range(len(mid)):
                    n = int(b["attention_mask"][j].sum())
                    cache_rows.append(mid[j, :n].clone())
            feats[split] = {
                "cls": torch.stack(unsort(order, cls_rows)).numpy(),
                "mean": torch.stack(unsort(order, mean_rows)).numpy(),
            }
            cache[split] = unsort(order, cache_rows)
    embed_cpu = time.process_time() - c0
    print(f"frozen pass {time.perf_counter() - t0:.0f} s ({embed_cpu:.0f} CPU s)", flush=True)
    for kind in ("cls", "mean"):
        c1 = time.process_time()
        val_acc, c, clf = logistic(
            feats["train"][kind], data["train"][1], feats["validation"][kind],
            data["validation"][1],
        )  # fmt: skip
        correct = clf.predict(feats["test"][kind]) == data["test"][1]
        table[f"frozen MiniLM, {kind} + logistic regression"] = {
            "test": accuracy_ci(correct),
            "validation": float(val_acc),
            "C": c,
            "cpu_seconds": round(embed_cpu + time.process_time() - c1, 1),
        }
        print(kind, table[f"frozen MiniLM, {kind} + logistic regression"], flush=True)

    def batches_of(split, idx):
        rows = [cache[split][i] for i in idx]
        n = max(len(r) for r in rows)
        h = torch.zeros(len(rows), n, rows[0].shape[-1])
        m = torch.zeros(len(rows), n, dtype=torch.long)
        for j, r in enumerate(rows):
            h[j, : len(r)] = r
            m[j, : len(r)] = 1
        return h, m

    @torch.no_grad()
    def predict(model, split):
        model.eval()
        preds = []
        for i in range(0, len(cache[split]), 64):
            h, m = batches_of(split, range(i, min(i + 64, len(cache[split]))))
            preds.append(model(h, m).argmax(-1))
        return torch.cat(preds).numpy()

    # 2. Top-layer fine-tuning with a small learning-rate sweep (validation picks).
    sweep, best = [], None
    y_train = torch.from_numpy(data["train"][1])
    steps_per_epoch = len(y_train) // args.batch_size
    for lr in args.lrs:
        seed_everything(0, threads=1)
        rng = np.random.default_rng(0)
        model = BertClassifier(
            [copy.deepcopy(encoder.encoder.layers[i]) for i in range(n_layers - TOP, n_layers)],
            encoder.config.hidden_size, len(TOPICS),
        )  # fmt: skip
        with torch.no_grad():
            model.pooler.load_state_dict(encoder.pooler.state_dict())
        rates = (lr, args.head_lr)
        opt = torch.optim.AdamW(
            [{"params": model.layers.parameters()},
             {"params": list(model.pooler.parameters()) + list(model.classifier.parameters())}],
            lr=lr, weight_decay=0.01,
        )  # fmt: skip
        total = steps_per_epoch * args.epochs
        c1, step = time.process_time(), 0
        for epoch in range(args.epochs):
            perm = rng.permutation(len(y_train))
            model.train()
            for k in range(steps_per_epoch):
                idx = perm[k * args.batch_size : (k + 1) * args.batch_size]
                for g, rate in zip(opt.param_groups, rates, strict=True):
                    g["lr"] = learning_rate_at(step, total, rate, total // 10)
                h, m = batches_of("train", idx)
                loss = F.cross_entropy(model(h, m), y_train[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
            val = float((predict(model, "validation") == data["validation"][1]).mean())
            sweep.append({"lr": lr, "epoch": epoch + 1, "validation": val, "loss": loss.item()})
            print(sweep[-1], flush=True)
            if best is None or val > best["validation"]:
                best = {"lr": lr, "epoch": epoch + 1, "validation": val,
                        "state": copy.deepcopy(model.state_dict())}  # fmt: skip
        print(f"lr {lr}: {time.process_time() - c1:.0f} CPU s", flush=True)
    ft_cpu = time.process_time() - c0
    model.load_state_dict(best["state"])
    correct = predict(model, "test") == data["test"][1]
    table[f"MiniLM, top {TOP} layers fine-tuned + head on [CLS]"] = {
        "test": accuracy_ci(correct),
        "validation": best["validation"],
        "lr": best["lr"],
        "head_lr": args.head_lr,
        "epochs": best["epoch"],
        "cpu_seconds_all_sweep": round(ft_cpu, 1),
    }
    print(table[f"MiniLM, top {TOP} layers fine-tuned + head on [CLS]"], flush=True)
    shipped = {k: v.half() for k, v in best["state"].items()}

    def save():
        args.out.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "state_dict": shipped,
                # mean-pooled frozen features of the training split, so the lecture need not
                # recompute them (it checks a few against a live pass)
                "train_mean_features": torch.from_numpy(feats["train"]["mean"]).half(),
                "logistic_C": table["frozen MiniLM, mean + logistic regression"]["C"],
                "top_layers": TOP,
                "topics": list(TOPICS),
                "max_len": MAX_LEN,
                "table": table,
                "sweep": sweep,
                "training": {
                    "epochs": args.epochs,
                    "lrs": args.lrs,
                    "head_lr": args.head_lr,
                    "batch_size": args.batch_size,
                    "seed": 0,
                    "threads": 1,
                    "full_epochs": args.full_epochs,
                    "full_lr": args.full_lr,
                },  # fmt: skip
            },
            args.out,
        )
        print(f"saved {args.out}", flush=True)

    save()  # the shipped part first; the full fine-tuning row is added when it is done

    # 3. Full fine-tuning (every layer and the embeddings), reported only.
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
        texts = data["train"][0]

        @torch.no_grad()
        def predict_full(split):
            full.eval()
            head.eval()
            order, batches = encode_sentences(tokenizer, data[split][0], MAX_LEN)
            preds = []
            for b in batches:
                out = full(b["input_ids"], b["token_type_ids"], b["attention_mask"])
                preds += head(out.last_hidden_state, b["attention_mask"]).argmax(-1).tolist()
            return np.array(unsort(order, preds))

        total, step, c2 = steps_per_epoch * args.full_epochs, 0, time.process_time()
        full_sweep, best_full = [], None
        for epoch in range(args.full_epochs):
            full.train()
            head.train()
            perm = rng.permutation(len(texts))
            for k in range(steps_per_epoch):
                idx = perm[k * args.batch_size : (k + 1) * args.batch_size]
                # encode_sentences sorts the rows by length: reorder the labels alike
                order, (b,) = encode_sentences(tokenizer, [texts[i] for i in idx], MAX_LEN, 10**6)
                for g, rate in zip(opt.param_groups, rates, strict=True):
                    g["lr"] = learning_rate_at(step, total, rate, total // 10)
                out = full(b["input_ids"], b["token_type_ids"], b["attention_mask"])
                logits = head(out.last_hidden_state, b["attention_mask"])
                loss = F.cross_entropy(logits, y_train[idx][order])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
                if step % 20 == 0:
                    print(f"full step {step}/{total} loss {loss.item():.3f}", flush=True)
            val = float((predict_full("validation") == data["validation"][1]).mean())
            full_sweep.append({"epoch": epoch + 1, "validation": val, "loss": loss.item()})
            print(full_sweep[-1], f"{time.process_time() - c2:.0f} CPU s", flush=True)
            if best_full is None or val > best_full["validation"]:
                best_full = {"epoch": epoch + 1, "validation": val,
                             "test": accuracy_ci(predict_full("test") == data["test"][1])}  # fmt: skip
        table["MiniLM, fully fine-tuned + head on [CLS]"] = {
            "test": best_full["test"],
            "validation": best_full["validation"],
            "lr": args.full_lr,
            "head_lr": args.head_lr,
            "epochs": best_full["epoch"],
            "cpu_seconds": round(time.process_time() - c2, 1),
            "epochs_trained": args.full_epochs,
            "sweep": full_sweep,
        }
        print(table["MiniLM, fully fine-tuned + head on [CLS]"], flush=True)
        save()


if __name__ == "__main__":
    main()
