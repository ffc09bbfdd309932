"""Maintainer's tool: train a masked-LM head for MiniLM (which ships without one).

    python -m tools.training.make_docstring_corpus --mlm /tmp/mlm_corpus.txt
    python -m tools.training.train_mlm_head --corpus /tmp/mlm_corpus.txt   # writes course_lib/data/minilm_mlm_head.pt
    torchrun --standalone --nproc_per_node=2 -m tools.training.train_mlm_head --corpus /tmp/mlm_corpus.txt
                      # each process takes its rows of every --batch-size batch (a mean over rows)

What it trains: BERT's MLM head only (:class:`course_lib.models.mlm_head.MlmHead`: dense, GELU,
LayerNorm, output tied to MiniLM's word embeddings, ~0.2M parameters). The encoder (MiniLM's
weights in the course's :class:`~course_lib.models.bert_encoder.BertEncoder`) stays frozen, so
its features are computed **once**: every sentence is masked (whole-word masking), run through
the encoder, and the vectors of the masked positions at layers ``--layers`` are cached on disk
(``--cache``, never in the repository). Thousands of head steps then cost only the head.

all-MiniLM-L6-v2 was fine-tuned for *sentence* embeddings, so its top layer may keep a token's
identity less well than the layers below: the script trains a short head on each candidate
layer, keeps the layer with the best validation top-5 on content words, and trains the final
head on it. Two things made the head learn at all (measured with 300-step heads): MiniLM's
vectors at a [MASK] share one large common part, so the head trains on standardised features
(folded into its dense layer afterwards); and with every masked token as a target the loss is
dominated by "the", ".", "," and the head only learns their frequencies (content-word top-5
0.015 against a baseline of 0.049), while training on the masked *content words* only (the
default ``--targets content``) gives 0.11 -- what :func:`~course_lib.pretrained.fill_mask` is
asked for: a word of meaning.

Data: single sentences of the Python documentation and numpy/scipy/scikit-learn docstrings.
Documents (one docstring) are split by a hash of their name: 1 in 20 for test, 1 in 20 for
validation, the rest for training; the fill-in-the-blank probes of
:data:`course_lib.pretrained.FILL_MASK_PROBES` are removed from the training text.
Masking: 15 % of the *words* (at least one per sentence), all WordPieces of a chosen word
together; in training 80 % [MASK], 10 % a random token, 10 % unchanged (BERT's recipe), each
training sentence masked ``--copies`` times; in validation and test every chosen piece is
[MASK] (how :func:`~course_lib.pretrained.fill_mask` is used). Reported on the test documents:
top-1/top-5 over all masked tokens and over *content words* (whole words of 3+ letters not in
a stop-word list), each against the most-frequent-token baseline.

Deterministic: one thread, fixed seeds, fixed steps. The checkpoint stores the head in float16
(~0.4 MB) and is loaded with ``weights_only=True`` by
:func:`course_lib.pretrained.load_minilm_mlm`.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from course_lib import seed_everything
from course_lib.models.mlm_head import MlmHead
from course_lib.pretrained import FILL_MASK_PROBES, load_minilm_encoder
from course_lib.training import learning_rate_at
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
DEFAULT_OUT = ROOT / "course_lib" / "data" / "minilm_mlm_head.pt"
STOP_WORDS = set(
    "a an the of to in on at by for from with and or not no is are be was were been it its this "
    "that these those as if then than so but can may must will would should which what who whom "
    "when where how all any each some such only also into out up down over under there their "
    "they them he she we you i do does did has have had".split()
)


def read_corpus(path: Path) -> list[tuple[str, list[str]]]:
    """``[(document name, [sentence, ...]), ...]`` from the '= name' blocks of the corpus."""
    docs: list[tuple[str, list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("= "):
            docs.append((line[2:], []))
        elif line.strip():
            docs[-1][1].append(line)
    return docs


def split_of(name: str) -> str:
    h = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % 20
    return "test" if h == 0 else "validation" if h == 1 else "train"


def is_content(token: str, next_token: str) -> bool:
    """A whole word (no '##' piece after it) of 3+ letters that is not a stop word."""
    return (
        token.isalpha()
        and len(token) >= 3
        and token not in STOP_WORDS
        and not next_token.startswith("##")
    )


def whole_word_mask(tokens, rng, vocab_size, mask_id, train, prob=0.15):
    """``(input ids, picked positions)`` for one sentence's WordPiece ``tokens`` (with [CLS]/[SEP]).

    Words are a piece plus the '##' pieces after it; ``max(1, round(prob * words))`` words are
    picked, and all their pieces masked together.
    """
    ids, words = list(tokens[0]), []
    pieces = tokens[1]
    for i in range(1, len(pieces) - 1):  # skip [CLS] and [SEP]
        if pieces[i].startswith("##") and words:
            words[-1].append(i)
        else:
            words.append([i])
    k = max(1, round(prob * len(words)))
    picked = sorted(i for w in rng.choice(len(words), size=k, replace=False) for i in words[w])
    chosen_words = [w for w in words if w[0] in picked]
    for w in chosen_words:
        u = rng.random() if train else 0.0
        for i in w:
            if u < 0.8:
                ids[i] = mask_id
            elif u < 0.9:
                ids[i] = int(rng.integers(999, vocab_size))  # a random ordinary token
    return ids, picked


def featurize(sentences, split, copies, tokenizer, encoder, layers, max_length, rng, batch=64):
    """Mask every sentence ``copies`` times and run the frozen encoder once over all of them.

    Returns ``{"x": (N, len(layers), H) float16, "y": (N,) targets, "content": (N,) bool}``
    for the N masked positions.
    """
    mask_id, vocab = tokenizer.mask_token_id, encoder.config.vocab_size
    rows = []
    for s in sentences:
        ids = tokenizer(s, truncation=True, max_length=max_length)["input_ids"]
        pieces = tokenizer.convert_ids_to_tokens(ids)
        for _ in range(copies):
            inputs, picked = whole_word_mask(
                (ids, pieces), rng, vocab, mask_id, train=split == "train"
            )
            content = [is_content(pieces[i], pieces[i + 1]) for i in picked]
            rows.append((inputs, picked, [ids[i] for i in picked], content))
    order = sorted(range(len(rows)), key=lambda r: len(rows[r][0]))  # little padding
    xs, ys, cs = [], [], []
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            chunk = [rows[r] for r in order[start : start + batch]]
            n = max(len(r[0]) for r in chunk)
            ids = torch.zeros(len(chunk), n, dtype=torch.long)
            for j, r in enumerate(chunk):
                ids[j, : len(r[0])] = torch.tensor(r[0])
            out = encoder(ids, attention_mask=(ids != 0).long())
            hidden = torch.stack([out.hidden_states[layer] for layer in layers], 2)  # (b, n, L, H)
            for j, r in enumerate(chunk):
                xs.append(hidden[j, r[1]].half())
                ys += r[2]
                cs += r[3]
    return {"x": torch.cat(xs), "y": torch.tensor(ys), "content": torch.tensor(cs)}


def evaluate(head, emb, feats, slot, counts, content_ids, standardize=lambda x: x):
    """Top-1/top-5 of ``head`` on cached features (layer ``slot``) against the baselines."""
    top_all = torch.from_numpy(np.argsort(-counts, kind="stable")[:5])
    c_counts = counts * content_ids
    top_content = torch.from_numpy(np.argsort(-c_counts, kind="stable")[:5])
    hit1, hit5 = [], []
    head.eval()
    with torch.no_grad():
        for i in range(0, len(feats["y"]), 1024):
            x = standardize(feats["x"][i : i + 1024, slot].float().to(emb.device))
            top = head(x, emb).topk(5, dim=-1).indices.cpu()
            y = feats["y"][i : i + 1024]
            hit1.append(top[:, 0] == y)
            hit5.append((top == y[:, None]).any(-1))
    hit1, hit5 = torch.cat(hit1), torch.cat(hit5)
    y, c = feats["y"], feats["content"]
    out = {
        "top1": hit1.float().mean(),
        "top5": hit5.float().mean(),
        "content_top1": hit1[c].float().mean(),
        "content_top5": hit5[c].float().mean(),
        "baseline_top1": (y == top_all[0]).float().mean(),
        "baseline_top5": torch.isin(y, top_all).float().mean(),
        "baseline_content_top1": (y[c] == top_content[0]).float().mean(),
        "baseline_content_top5": torch.isin(y[c], top_content).float().mean(),
    }
    out = {k: round(float(v), 4) for k, v in out.items()}
    return {**out, "n_tokens": len(y), "n_content": int(c.sum())}


def train_head(feats, slot, steps, batch, lr, counts, emb, cfg, rng, log_every=250, evals=(),
               ranks: Ranks = ONE_PROCESS):  # fmt: skip
    """Train a fresh head for ``steps`` steps on layer ``slot`` of the cached training features
    (``counts``: the frequencies of the training targets, the bias's starting point). Under
    torchrun each process computes its rows of every batch of ``batch`` masked tokens.

    MiniLM's vectors at the masked positions share one large common part (the norm of their
    mean is ~90 % of their norm), so the head trains on *standardised* features (per dimension:
    minus the training mean, divided by the training standard deviation); afterwards the
    standardisation is folded into the dense layer (``W / std``, ``b - W mean / std``), so the
    returned head is BERT's head shape and reads the encoder's vectors directly.
    """
    x_all, y_all = feats["x"], feats["y"]
    sample = x_all[:: max(1, len(y_all) // 20000), slot].float()
    mean, std = sample.mean(0).to(emb.device), sample.std(0).clamp(min=1e-3).to(emb.device)

    def standardize(x):
        return (x - mean) / std

    head = MlmHead(cfg.hidden_size, cfg.vocab_size, cfg.layer_norm_eps)
    with torch.no_grad():  # start the bias at the log unigram frequencies: a sane prior
        head.bias.copy_(torch.log(torch.from_numpy(counts + 1.0) / (counts.sum() + cfg.vocab_size)))
    head = wrap(head, ranks)
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=0.01)
    history, start = [], time.perf_counter()
    for step in range(steps):
        head.train()
        for g in opt.param_groups:
            g["lr"] = learning_rate_at(step, steps, lr, steps // 20)
        idx = my_rows(torch.from_numpy(rng.integers(0, len(y_all), batch)), ranks).cpu()
        x, y = my_rows((x_all[idx, slot].float(), y_all[idx]), Ranks(device=ranks.device))
        loss = F.cross_entropy(head(standardize(x), emb), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % log_every == 0 or step + 1 == steps:
            row = {"step": step + 1, "loss": round(mean_over_ranks(loss, ranks), 3)}
            for name, (f, c, ids) in evals:  # every process: they all choose the same layer
                row[name] = evaluate(unwrap(head), emb, f, slot, c, ids, standardize)
            history.append(row)
            if ranks.is_main:
                print(f"  {time.perf_counter() - start:.0f}s {row}", flush=True)
    head = unwrap(head)
    with torch.no_grad():  # fold the standardisation into the dense layer
        w = head.dense.weight / std  # (H, H): column j divided by std_j
        head.dense.bias -= w @ mean
        head.dense.weight.copy_(w)
    return head, history


def probe_answers(head, layer, tokenizer, encoder):
    """Top-5 words of ``head`` (on ``layer``) for every sentence of FILL_MASK_PROBES."""
    out = []
    head.eval()
    for text, ok in FILL_MASK_PROBES:
        enc = tokenizer(text, return_tensors="pt")
        where = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
        with torch.no_grad():
            h = encoder(enc["input_ids"]).hidden_states[layer][0, where]
            emb = encoder.word_embeddings.weight
            top = head(h.to(emb.device), emb).topk(5).indices
        words = tokenizer.convert_ids_to_tokens(top.tolist())
        out.append({"text": text, "top5": words, "hit": any(w in ok for w in words)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--layers", type=int, nargs="+", default=[3, 4, 5, 6],
                        help="candidate layers (0 = embeddings, 6 = top)")  # fmt: skip
    parser.add_argument("--sweep-steps", type=int, default=150, help="per candidate layer")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=128, help="masked tokens per step")
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--copies", type=int, default=2, help="maskings of each train sentence")
    parser.add_argument("--targets", choices=["content", "all"], default="content",
                        help="train on content words only, or on every masked token")  # fmt: skip
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument("--cache", type=Path, default=None, help="feature cache (not the repo)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    add_device_argument(parser)
    args = parser.parse_args()
    ranks = start_run(args.device)
    check_batch_size(args.batch_size, ranks)
    say = print if ranks.is_main else lambda *a, **k: None

    rng = seed_everything(0, threads=1)
    tokenizer, encoder = load_minilm_encoder()
    cfg = encoder.config
    docs = read_corpus(args.corpus)
    probes = {p.replace("[MASK]", "").lower() for p, _ in FILL_MASK_PROBES}
    text = {"train": [], "validation": [], "test": []}
    for name, sentences in docs:
        text[split_of(name)] += [s for s in sentences if s.lower() not in probes]
    say({k: len(v) for k, v in text.items()}, "sentences", flush=True)

    key = hashlib.sha256(
        args.corpus.read_bytes() + repr((args.layers, args.copies, args.max_length)).encode()
    ).hexdigest()[:12]
    cache = args.cache or Path(tempfile.gettempdir()) / f"minilm_mlm_features_{key}.pt"
    cpu0 = time.process_time()
    if cache.exists() and torch.load(cache, weights_only=True)["key"] == key:
        feats = torch.load(cache, weights_only=True)["feats"]
        say(f"features from {cache}", flush=True)
    else:
        feat_rng = np.random.default_rng(1234)
        feats = {
            split: featurize(text[split], split, args.copies if split == "train" else 1,
                             tokenizer, encoder, args.layers, args.max_length, feat_rng)
            for split in ("train", "validation", "test")
        }  # fmt: skip
        if ranks.is_main:  # every process computed the same features; one writes them
            torch.save({"key": key, "feats": feats}, cache)
        say(f"features cached in {cache}", flush=True)
    feature_cpu = time.process_time() - cpu0
    say({k: len(v["y"]) for k, v in feats.items()}, "masked tokens;",
          f"{feature_cpu:.0f} CPU s", flush=True)  # fmt: skip

    # Baseline and bias prior: token frequencies of the training sentences (targets of MLM).
    counts = np.bincount(feats["train"]["y"].numpy(), minlength=cfg.vocab_size).astype(float)
    vocab = tokenizer.convert_ids_to_tokens(list(range(cfg.vocab_size)))  # in id order
    content_ids = np.array(
        [float(t.isalpha() and len(t) >= 3 and t not in STOP_WORDS) for t in vocab], dtype=float
    )
    emb = encoder.word_embeddings.weight.detach().to(ranks.device)  # frozen, tied output matrix
    train = feats["train"]
    if args.targets == "content":  # fill_mask is asked for words of meaning, not for "the" or "."
        keep = train["content"]
        train = {k: v[keep] for k, v in train.items()}
    train_counts = np.bincount(train["y"].numpy(), minlength=cfg.vocab_size).astype(float)
    evals_val = [("validation", (feats["validation"], counts, content_ids))]

    # 1. Which layer's features? A short head on each, judged on validation.
    sweep, cpu1 = [], time.process_time()
    for slot, layer in enumerate(args.layers):
        say(f"layer {layer}", flush=True)
        _, hist = train_head(train, slot, args.sweep_steps, args.batch_size, args.lr,
                             train_counts, emb, cfg, np.random.default_rng(slot),
                             args.sweep_steps, evals_val, ranks)  # fmt: skip
        sweep.append({"layer": layer, **hist[-1]["validation"]})
    best = max(sweep, key=lambda r: (r["content_top5"], r["top5"]))
    slot, layer = args.layers.index(best["layer"]), best["layer"]
    sweep_cpu = time.process_time() - cpu1
    say(f"best layer {layer} ({sweep_cpu:.0f} CPU s for the sweep)", flush=True)

    # 2. The final head on that layer; test measured along the way (reported, never chosen on).
    cpu2 = time.process_time()
    evals = evals_val + [("test", (feats["test"], counts, content_ids))]
    head, history = train_head(train, slot, args.steps, args.batch_size, args.lr,
                               train_counts, emb, cfg, rng, 500, evals, ranks)  # fmt: skip
    train_cpu = time.process_time() - cpu2
    probes_out = probe_answers(head, layer, tokenizer, encoder)
    for p in probes_out:
        say(p, flush=True)

    ckpt = {
        "head": {k: v.detach().half() for k, v in head.state_dict().items()},
        "layer": layer,
        "training": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "n_sentences": {k: len(v) for k, v in text.items()},
        "n_masked_tokens": {k: len(v["y"]) for k, v in feats.items()},
        "n_training_targets": len(train["y"]),
        "layer_sweep": sweep,
        "history": history,
        "probes": probes_out,
        "cpu_seconds": {
            "features": round(feature_cpu, 1),
            "layer_sweep": round(sweep_cpu, 1),
            "training": round(train_cpu, 1),
        },
    }
    ckpt["training"]["corpus"] = "python -m tools.training.make_docstring_corpus --mlm"
    ckpt["training"].pop("cache")
    if ranks.is_main:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        torch.save(ckpt, args.out)
        print(f"saved {args.out}")
    finish(ranks)


if __name__ == "__main__":
    main()
