"""Maintainer's tool: train a masked-LM head for MiniLM (which ships without one).

    python tools/make_docstring_corpus.py --mlm /tmp/mlm_corpus.txt
    python tools/train_mlm_head.py --corpus /tmp/mlm_corpus.txt   # writes course_lib/data/minilm_mlm_head.pt

What it trains: BERT's MLM head (:class:`course_lib.models.mlm_head.MlmHead`, output tied to
MiniLM's word embeddings) plus MiniLM's top ``--unfreeze`` encoder layer(s); everything else is
frozen. all-MiniLM-L6-v2 was fine-tuned for sentence embeddings, so its top layer no longer
keeps each token's identity well; letting it adapt is what makes the head work.
Data: BERT's masking (80 % [MASK], 10 % random, 10 % unchanged) of 25 % of the tokens (not
BERT's 15 %: more predictions per forward pass, the bottleneck on a CPU; Wettig et al. 2023
found 15-40 % equally good) on single
sentences of the Python documentation and numpy/scipy/scikit-learn docstrings. Every 20th
document (by a hash of its name) is held out; the held-out numbers are measured with every
picked token replaced by [MASK] (how ``fill_mask`` is used), against the most-frequent-token
baseline, for all tokens and for content words only (whole words, not in a stop-word list).

Deterministic: one thread, fixed seeds, fixed steps. The checkpoint stores the head and the
changed layer(s) in float16 (~4 MB) and is loaded with ``weights_only=True``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from course_lib import seed_everything  # noqa: E402
from course_lib.models.mlm_head import MlmHead  # noqa: E402
from course_lib.pretrained import FILL_MASK_PROBES, load_minilm  # noqa: E402
from course_lib.training import learning_rate_at  # noqa: E402

DEFAULT_OUT = ROOT / "course_lib" / "data" / "minilm_mlm_head.pt"
STOP_WORDS = set(
    "a an the of to in on at by for from with and or not no is are be was were been it its this "
    "that these those as if then than so but can may must will would should which what who whom "
    "when where how all any each some such only also into out up down over under there their "
    "they them he she we you i do does did has have had".split()
)


def read_corpus(path: Path) -> list[tuple[str, list[str]]]:
    docs: list[tuple[str, list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("= "):
            docs.append((line[2:], []))
        elif line.strip():
            docs[-1][1].append(line)
    return docs


def held_out(name: str) -> bool:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % 20 == 0


def encode(tokenizer, sentences, max_len):
    out = []
    for s in sentences:
        ids = tokenizer(s, truncation=True, max_length=max_len)["input_ids"]
        out.append(np.array(ids, dtype=np.int64))
    return out


def pad(seqs):
    n = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), n, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.from_numpy(s)
    return ids, (ids != 0).long()


def mask_batch(ids, attn, rng, vocab_size, special, train=True, prob=0.15):
    """BERT's masking on a padded batch; labels -100 where nothing is predicted."""
    pickable = attn.bool() & ~torch.isin(ids, special)
    u = torch.from_numpy(rng.random(ids.shape))
    picked = pickable & (u < prob)
    labels = torch.where(picked, ids, torch.full_like(ids, -100))
    inputs = ids.clone()
    if train:
        v = torch.from_numpy(rng.random(ids.shape))
        rand = torch.from_numpy(rng.integers(999, vocab_size, ids.shape))
        inputs[picked & (v < 0.8)] = 103  # [MASK]
        swap = picked & (v >= 0.8) & (v < 0.9)
        inputs[swap] = rand[swap]
    else:
        inputs[picked] = 103
    return inputs, labels


def content_mask(tokenizer, ids, labels):
    """Picked positions that are whole content words (no '##' piece before or after)."""
    toks = [tokenizer.convert_ids_to_tokens(row) for row in ids.tolist()]
    out = torch.zeros_like(labels, dtype=torch.bool)
    for b, row in enumerate(toks):
        for i, t in enumerate(row):
            nxt = row[i + 1] if i + 1 < len(row) else ""
            if (
                labels[b, i] != -100
                and t.isalpha()
                and len(t) >= 3
                and t not in STOP_WORDS
                and not nxt.startswith("##")
            ):
                out[b, i] = True
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--unfreeze", type=int, default=1)
    parser.add_argument("--lr-head", type=float, default=2e-3)
    parser.add_argument("--lr-layers", type=float, default=2e-4)
    parser.add_argument("--max-len", type=int, default=48)
    parser.add_argument("--mask-prob", type=float, default=0.25)
    parser.add_argument("--eval-sentences", type=int, default=600)
    parser.add_argument("--eval-every", type=int, default=150)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    rng = seed_everything(0, threads=1)
    tokenizer, model = load_minilm()
    cfg = model.config
    docs = read_corpus(args.corpus)
    train_s = [s for name, ss in docs if not held_out(name) for s in ss]
    held_s = [s for name, ss in docs if held_out(name) for s in ss]
    probes = {p.replace("[MASK]", "").lower() for p, _ in FILL_MASK_PROBES}
    train_s = [s for s in train_s if s.lower() not in probes]
    print(f"{len(train_s)} training sentences, {len(held_s)} held out", flush=True)
    train_ids = encode(tokenizer, train_s, args.max_len)
    eval_rng = np.random.default_rng(1234)
    held_pick = eval_rng.permutation(len(held_s))[: args.eval_sentences]
    held_ids = encode(tokenizer, [held_s[i] for i in sorted(held_pick)], args.max_len)
    special = torch.tensor(tokenizer.all_special_ids)

    # Baseline: the most frequent tokens among the training sentences' pickable tokens.
    counts = np.bincount(np.concatenate(train_ids), minlength=cfg.vocab_size).astype(float)
    counts[tokenizer.all_special_ids] = 0

    for p in model.parameters():
        p.requires_grad_(False)
    layers = model.encoder.layer[len(model.encoder.layer) - args.unfreeze :]
    for p in layers.parameters():
        p.requires_grad_(True)
    head = MlmHead(cfg.hidden_size, cfg.vocab_size, cfg.layer_norm_eps)
    with torch.no_grad():  # start the bias at the log unigram frequencies: a sane prior
        head.bias.copy_(torch.log(torch.from_numpy(counts + 1.0) / (counts.sum() + cfg.vocab_size)))
    emb = model.embeddings.word_embeddings.weight  # frozen, tied output matrix

    def scores(inputs, attn, labels):
        hidden = model(input_ids=inputs, attention_mask=attn).last_hidden_state
        picked = labels != -100
        return head(hidden[picked], emb), labels[picked]

    eval_batches = []
    for i in range(0, len(held_ids), 64):
        ids, attn = pad(held_ids[i : i + 64])
        inputs, labels = mask_batch(ids, attn, eval_rng, cfg.vocab_size, special, train=False)
        eval_batches.append((inputs, attn, labels, content_mask(tokenizer, ids, labels)))

    @torch.no_grad()
    def evaluate():
        model.eval()
        res = {"top1": 0, "top5": 0, "n": 0, "c_top1": 0, "c_top5": 0, "c_n": 0}
        base = {"top1": 0, "top5": 0, "c_top1": 0, "c_top5": 0}
        top5_all = torch.from_numpy(np.argsort(-counts, kind="stable")[:5])
        content_counts = counts.copy()
        for t, i in tokenizer.vocab.items():
            if not (t.isalpha() and len(t) >= 3 and t not in STOP_WORDS):
                content_counts[i] = 0
        top5_content = torch.from_numpy(np.argsort(-content_counts, kind="stable")[:5])
        for inputs, attn, labels, content in eval_batches:
            logits, targets = scores(inputs, attn, labels)
            top = logits.topk(5, dim=-1).indices
            hit1 = top[:, 0] == targets
            hit5 = (top == targets[:, None]).any(-1)
            c = content[labels != -100]
            res["top1"] += int(hit1.sum())
            res["top5"] += int(hit5.sum())
            res["n"] += len(targets)
            res["c_top1"] += int(hit1[c].sum())
            res["c_top5"] += int(hit5[c].sum())
            res["c_n"] += int(c.sum())
            base["top1"] += int((targets == top5_all[0]).sum())
            base["top5"] += int(torch.isin(targets, top5_all).sum())
            base["c_top1"] += int((targets[c] == top5_content[0]).sum())
            base["c_top5"] += int(torch.isin(targets[c], top5_content).sum())
        out = {
            "top1": res["top1"] / res["n"],
            "top5": res["top5"] / res["n"],
            "content_top1": res["c_top1"] / res["c_n"],
            "content_top5": res["c_top5"] / res["c_n"],
            "n_tokens": res["n"],
            "n_content": res["c_n"],
            "baseline_top1": base["top1"] / res["n"],
            "baseline_top5": base["top5"] / res["n"],
            "baseline_content_top1": base["c_top1"] / res["c_n"],
            "baseline_content_top5": base["c_top5"] / res["c_n"],
        }
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}

    groups = [
        {"params": list(head.parameters()), "lr": args.lr_head},
        {"params": list(layers.parameters()), "lr": args.lr_layers},
    ]
    opt = torch.optim.AdamW(groups, weight_decay=0.01)
    history = [{"step": 0, **evaluate()}]
    print(history[-1], flush=True)
    start, cpu0 = time.perf_counter(), time.process_time()
    warmup = max(1, args.steps // 20)
    for step in range(args.steps):
        model.train()
        for g, base_lr in zip(opt.param_groups, (args.lr_head, args.lr_layers), strict=True):
            g["lr"] = learning_rate_at(step, args.steps, base_lr, warmup)
        idx = rng.integers(0, len(train_ids), args.batch_size)
        ids, attn = pad([train_ids[i] for i in idx])
        inputs, labels = mask_batch(ids, attn, rng, cfg.vocab_size, special, prob=args.mask_prob)
        logits, targets = scores(inputs, attn, labels)
        loss = F.cross_entropy(logits, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], 1.0)
        opt.step()
        if step % 50 == 0:
            print(
                f"step {step} loss {loss.item():.3f} {time.perf_counter() - start:.0f}s", flush=True
            )
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            history.append({"step": step + 1, **evaluate()})
            print(history[-1], flush=True)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu0

    n_layers = len(model.encoder.layer)
    changed = {
        f"encoder.layer.{n_layers - args.unfreeze + i}.{k}": v.detach().half()
        for i, layer in enumerate(layers)
        for k, v in layer.state_dict().items()
    }
    ckpt = {
        "head": {k: v.detach().half() for k, v in head.state_dict().items()},
        "layers": changed,
        "training": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "n_train_sentences": len(train_s),
        "n_heldout_sentences": len(held_s),
        "history": history,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
    }
    ckpt["training"]["corpus"] = "tools/make_docstring_corpus.py --mlm"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(ckpt, args.out)
    print(f"saved {args.out} after {seconds:.0f} s ({cpu:.0f} CPU s)")


if __name__ == "__main__":
    main()
