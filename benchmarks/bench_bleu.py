"""Time course_lib's corpus BLEU against sacrebleu's, in one process, on the same corpus.

    python benchmarks/bench_bleu.py                      # 3,000 pairs of ~25 words, 1 reference
    python benchmarks/bench_bleu.py --refs 2 --repeats 9
    python benchmarks/bench_bleu.py --out benchmarks/results/bleu.json  # store it (lecture 06)

The corpus is generated from a fixed seed: references are random sentences over a vocabulary
with punctuation, numbers, hyphens, HTML entities and non-ASCII words (so that the 13a
tokenizer has work to do), hypotheses are noisy copies (words dropped, replaced, swapped).
Both implementations first must give the same score (to 1e-9). Then they are timed
alternately, ``--repeats`` calls each, and the medians are compared: the median is the least
affected by other processes on a shared machine. Neither keeps a cache between calls
(sacrebleu builds a fresh tokenizer, with a fresh cache, in every ``corpus_bleu`` call).

With ``--out`` the corpus, versions, medians and ratio are written as JSON; lecture 06 quotes
the stored ``benchmarks/results/bleu.json``.

Target (issue 4): at least as fast as sacrebleu; aim for twice as fast. A benchmark, not a
test: it asserts only that the results agree.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import statistics
import time
from pathlib import Path

import sacrebleu

from course_lib import corpus_bleu, seed_everything

WORDS = (
    "the a an of to in on at for with by from and or but not is was are were be been it its "
    "he she they we you this that these those government minister said people year years "
    "new old first last many more most other some such only also after before over under "
    "between against during without city country world police court report market company "
    "president United States Europe Germany Zürich São café naïve coöperation € % $ "
    "3.5 2,000 1990 12-3 20-year-old U.S. e-mail don't it's won't well-known co-operation"
).split()
PUNCT = [".", ",", ",", "!", "?", ";", ":", "'s", ")", "&quot;", "&amp;"]


def make_sentence(rng: random.Random, n_words: int) -> str:
    words = []
    for _ in range(n_words):
        w = rng.choice(WORDS)
        r = rng.random()
        if r < 0.08:
            w += rng.choice(PUNCT)
        elif r < 0.10:
            w = "(" + w
        elif r < 0.12:
            w = '"' + w
        words.append(w)
    return " ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!"])


def perturb(rng: random.Random, sentence: str) -> str:
    out = []
    for w in sentence.split():
        r = rng.random()
        if r < 0.1:
            continue
        out.append(rng.choice(WORDS) if r < 0.25 else w)
    if len(out) > 3 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def make_corpus(pairs: int, words: int, refs: int, seed: int = 0):
    """``hypotheses`` and ``references`` (a list of ``refs`` references per hypothesis)."""
    rng = random.Random(seed)
    references = [
        [make_sentence(rng, rng.randint(words - 7, words + 7)) for _ in range(refs)]
        for _ in range(pairs)
    ]
    hypotheses = [perturb(rng, rs[0]) for rs in references]
    return hypotheses, references


def median_time(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--words", type=int, default=25)
    parser.add_argument("--refs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the result as JSON to this file")
    parser.add_argument("--note", default="", help="free text stored with --out")
    args = parser.parse_args()
    seed_everything(0, threads=1)

    hyps, refs = make_corpus(args.pairs, args.words, args.refs)
    streams = [list(s) for s in zip(*refs, strict=True)]  # sacrebleu wants refs[k][i]

    def ours():
        return corpus_bleu(hyps, refs)

    def theirs():
        return sacrebleu.corpus_bleu(hyps, streams)

    a, b = ours(), theirs()
    if abs(a.score - b.score) > 1e-9 or a.counts != b.counts or a.totals != b.totals:
        raise SystemExit(f"results differ:\n  course_lib {a}\n  sacrebleu  {b}")
    n_words = sum(len(h.split()) for h in hyps) / len(hyps)
    print(f"corpus: {args.pairs} pairs, {n_words:.1f} words per hypothesis, {args.refs} ref(s)")
    print(f"python {platform.python_version()}, sacrebleu {sacrebleu.__version__}")
    print(f"both: {a}")

    t_ours, t_theirs = [], []
    for _ in range(args.repeats):  # alternate, so both see the same machine load
        t_ours += median_time(ours, 1)
        t_theirs += median_time(theirs, 1)
    m_ours, m_theirs = statistics.median(t_ours), statistics.median(t_theirs)
    print(f"course_lib.corpus_bleu  median {m_ours * 1000:7.1f} ms  ({args.repeats} runs)")
    print(f"sacrebleu.corpus_bleu   median {m_theirs * 1000:7.1f} ms  ({args.repeats} runs)")
    print(f"ratio sacrebleu / course_lib = {m_theirs / m_ours:.2f}x  (target >= 1, aim 2)")
    if args.out:
        meta = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": platform.machine(),
            "python": platform.python_version(),
            "sacrebleu": sacrebleu.__version__,
            "threads": 1,
            "note": args.note,
        }
        result = {
            "pairs": args.pairs,
            "words_per_hypothesis": round(n_words, 1),
            "references": args.refs,
            "repeats": args.repeats,
            "bleu": a.score,
            "course_lib_median_s": m_ours,
            "sacrebleu_median_s": m_theirs,
            "ratio_sacrebleu_over_course_lib": m_theirs / m_ours,
        }
        args.out.write_text(json.dumps({"meta": meta, "result": result}, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
