"""Checks for the exercises of lecture 06 (BLEU).

Students work on token lists (no tokenizer): a hypothesis is a list of str, its references a
list of such lists. Every answer is compared with ``course_lib.bleu`` (itself tested against
sacrebleu) on several inputs, including an edge case.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Mapping

from ..bleu import (
    brevity_penalty,
    clipped_counts,
    closest_ref_length,
    corpus_bleu,
    sentence_bleu,
    tokenize_for_bleu,
)
from . import ExerciseError, call_student, check_mistakes, check_value, hidden_rng, passed
from .given import PARAPHRASE, REFERENCE

__all__ = [
    "check_clipped_counts",
    "check_brevity_penalty",
    "check_closest_ref_length",
    "check_corpus_bleu",
    "check_bleu_counterexample",
    "REFERENCE",
    "PARAPHRASE",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "6.1": (
        "course_lib.bleu.counting.clipped_counts",
        "course_lib.bleu.counting.modified_precision",
    ),
    "6.2": ("course_lib.bleu.counting.brevity_penalty",),
    "6.3": ("course_lib.bleu.counting.closest_ref_length",),
    "6.4": (
        "course_lib.bleu.corpus.corpus_bleu",
        "course_lib.bleu.formula.compute_bleu",
        "course_lib.bleu.statistics.bleu_statistics",
    ),
    "6.5": (),
}

T = str.split  # the exercises' inputs are written as strings and split here
_WORDS = "the a cat dog sat on mat ran in park it was not at all".split()


def _sentence(rng, lo: int = 1, hi: int = 9) -> str:
    """A hidden input: random words from a small vocabulary (so n-grams repeat)."""
    return " ".join(str(w) for w in rng.choice(_WORDS[:8], size=int(rng.integers(lo, hi))))


def _edited(rng, sentence: str) -> str:
    """``sentence`` with a few words changed, dropped or added (so that n-grams still match)."""
    words = sentence.split()
    for _ in range(int(rng.integers(0, 3))):
        i = int(rng.integers(0, len(words) + 1))
        kind = int(rng.integers(0, 3))
        if kind == 0 and i < len(words):
            words[i] = str(rng.choice(_WORDS))
        elif kind == 1 and i < len(words) and len(words) > 1:
            del words[i]
        else:
            words.insert(i, str(rng.choice(_WORDS)))
    return " ".join(words)


def _as_count_dict(ex: str, got, what: str) -> dict:
    if not isinstance(got, Mapping):
        raise ExerciseError(
            ex,
            f"{what}: expected a dict (or Counter) mapping n-gram tuples to counts, "
            f"got {type(got).__name__} {got!r:.80}.",
            "return e.g. Counter({('the',): 2}) — keys are tuples of n tokens.",
        )
    return {k: v for k, v in got.items() if v != 0}  # zero entries are allowed, not required


def _ngrams(tokens, n, off_by_one=False):
    stop = len(tokens) - n + (0 if off_by_one else 1)
    return Counter(tuple(tokens[i : i + n]) for i in range(max(stop, 0)))


def _clip_mistakes(hyp, refs, n) -> dict:
    h = _ngrams(hyp, n)
    summed = Counter()
    for r in refs:
        summed += _ngrams(r, n)
    in_any = {g for r in refs for g in _ngrams(r, n)}
    max_ref = Counter()
    for r in refs:
        max_ref |= _ngrams(r, n)
    off = Counter()
    for r in refs:
        off |= _ngrams(r, n, off_by_one=True)
    return {
        "there are len(tokens) - n + 1 n-grams: range(len(tokens) - n + 1), not "
        "range(len(tokens) - n) (the last n-gram was missing).": _ngrams(hyp, n, True) & off,
        "clip with the largest count in any ONE reference (max over references), not the sum "
        "of their counts (Counter's |, not +).": h & summed,
        "clip: an n-gram counts at most as often as it occurs in a reference, e.g. 'the' "
        "x6 against 'the cat is on the mat' counts 2, not 6.": Counter(
            {g: c for g, c in h.items() if g in in_any}
        ),
        "take the max over ALL references, not only the first one.": h & _ngrams(refs[0], n),
        "clip against the references' counts of the same n-gram (min(hyp count, max ref "
        "count)), not the other way round.": max_ref & Counter({g: 1 for g in h}),
    }


def _nonzero(d: Mapping) -> dict:
    return dict(sorted((k, v) for k, v in d.items() if v != 0))


def check_clipped_counts(student_fn, *, seed: int = 0) -> None:
    """Exercise 6.1: min(count in hypothesis, max count in any one reference), per n-gram, on
    the notes' cases and (seed > 0) hidden random sentences."""
    ex = "6.1"
    cases = [
        ("the the the the the the", ["the cat is on the mat"], 1, "the notes' 'the the …' (n=1)"),
        ("the the the the the the", ["the cat is on the mat"], 2, "the notes' 'the the …' (n=2)"),
        ("The cat is on mat", ["The cat is on the mat"], 3, "the notes' worked example (n=3)"),
        (
            "the the the cat sat",
            ["the cat sat", "the the mat"],
            1,
            "two references (take the max over references, not the sum)",
        ),
        ("a b a b a b", ["a b a b", "b a b a b a"], 2, "two references, n=2"),
        ("short", ["a much longer reference"], 2, "a hypothesis shorter than n"),
    ]
    if seed:
        rng = hidden_rng(seed, 61)
        cases = [(_sentence(rng, 1, 12), [_sentence(rng) for _ in range(int(rng.integers(1, 4)))],
                  int(rng.integers(1, 4)), f"hidden case {i}") for i in range(4)]  # fmt: skip
    for hyp, refs, n, what in cases:
        got = call_student(ex, student_fn, T(hyp), [T(r) for r in refs], n)
        got = _as_count_dict(ex, got, what)
        expected = _nonzero(clipped_counts(T(hyp), [T(r) for r in refs], n))
        got = _nonzero(got)
        hint = (
            "count the hypothesis n-grams; for each, take its largest count in any single "
            "reference (Counter's | does a max), and keep the smaller of the two."
        )
        if got != expected:
            for mistake, wrong in _clip_mistakes(T(hyp), [T(r) for r in refs], n).items():
                if got == _nonzero(wrong):
                    hint = mistake
                    break
        check_value(
            ex,
            got,
            expected,
            what=f"clipped {n}-gram counts for {what}: hypothesis {hyp!r}, references {refs!r}",
            hint=hint,
        )
    passed(ex, "clipped n-gram counts")


def check_brevity_penalty(student_fn, *, seed: int = 0) -> None:
    """Exercise 6.2: BP = 1 if c >= r else exp(1 - r/c); 0 for an empty hypothesis (fixed
    lengths, and hidden ones for seed > 0)."""
    ex = "6.2"
    cases = [
        (5, 6, "the notes' example (c=5, r=6)"),
        (6, 6, "equal lengths"),
        (9, 6, "a longer hypothesis"),
        (2, 6, "a much shorter hypothesis"),
        (0, 4, "an empty hypothesis (c=0)"),
    ]
    if seed:
        rng = hidden_rng(seed, 62)
        cases = [(int(c), int(r), f"c={c}, r={r}") for c, r in rng.integers(1, 60, size=(4, 2))]
    for c, r, what in cases:
        try:
            got = call_student(ex, student_fn, c, r)
        except ExerciseError as err:
            if "ZeroDivisionError" in err.message:
                raise ExerciseError(ex, err.message, "an empty hypothesis (c = 0) gets BP = 0: "
                                    "test c == 0 before computing r / c.") from None  # fmt: skip
            raise
        mistakes = {}
        if c > 0:
            mistakes["the exponent is 1 - r/c (reference over hypothesis length), not 1 - c/r."] = (
                math.exp(1 - c / r) if c < r else 1.0
            )
            mistakes["BP is 1 when the hypothesis is at least as long as the reference (c >= r): "
                     "BLEU never rewards length."] = math.exp(1 - r / c)  # fmt: skip
        else:
            mistakes["an empty hypothesis gets BP = 0 (it has no words at all)."] = 1.0
        check_mistakes(
            ex,
            got,
            brevity_penalty(c, r),
            what=f"brevity penalty for {what}",
            hint="BP = exp(1 - r/c) only when c < r; 1 when c >= r; and 0 when c == 0 "
            "(do not divide by zero).",
            mistakes=mistakes,
            rtol=1e-9,
            atol=1e-12,
        )
    passed(ex, "brevity penalty")


def check_closest_ref_length(student_fn, *, seed: int = 0) -> None:
    """Exercise 6.3: the reference length closest to the hypothesis length, shorter on ties
    (fixed cases, and hidden ones with a tie for seed > 0)."""
    ex = "6.3"
    cases = [(5, [6]), (5, [4, 9]), (5, [9, 7, 2]), (5, [7, 3]), (5, [3, 7]), (6, [2, 8, 10])]
    if seed:
        rng = hidden_rng(seed, 63)
        cases = []
        for _ in range(4):
            h, d = int(rng.integers(5, 40)), int(rng.integers(1, 5))
            lens = [h + d, h - d] + [int(x) for x in rng.integers(1, 60, size=2)]
            cases.append((h, [int(x) for x in rng.permutation(lens)]))
    for hyp_len, ref_lens in cases:
        got = call_student(ex, student_fn, hyp_len, list(ref_lens))
        expected = closest_ref_length(hyp_len, ref_lens)
        hint = (
            "minimise |r - hyp_len|; on a tie choose the shorter reference "
            "(min with key=lambda r: (abs(r - hyp_len), r))."
        )
        if got != expected:
            closest = [r for r in ref_lens if abs(r - hyp_len) == abs(expected - hyp_len)]
            if len(closest) > 1 and got == max(closest):
                hint = "on a tie (two references equally close) BLEU takes the SHORTER one."
            elif got == min(ref_lens):
                hint = "not the shortest reference: the one whose length is closest to hyp_len."
            elif got == max(ref_lens):
                hint = "not the longest reference: the one whose length is closest to hyp_len."
        check_value(ex, got, expected,
                    what=f"closest reference length to {hyp_len} among {ref_lens}", hint=hint)  # fmt: skip
    passed(ex, "closest reference length")


_CORPORA = [
    ("the notes' worked example", ["The cat is on mat"], [["The cat is on the mat"]]),
    (
        "three sentences, one or two references each",
        ["the cat sat on the mat", "a dog ran in the park today", "it was not surprising at all"],
        [
            ["the cat is on the mat", "there is a cat sitting on the mat"],
            ["the dog ran in the park"],
            ["it was not unexpected at all", "nobody was surprised at all"],
        ],
    ),
    (
        "a short and a long sentence (corpus BLEU is not the mean of sentence BLEU)",
        ["thanks a lot", "the man had bitten the dog before the dog bit him"],
        [["thanks a lot !"], ["the man had bitten the dog before the dog bit him"]],
    ),
    (
        "a sentence whose closest reference is not its shortest",
        ["the quick brown fox jumped over the lazy dog", "a b c d e f"],
        [
            ["a quick fox", "the quick brown fox jumped over the lazy dog today"],
            ["a b c d e f g", "a b c d"],
        ],
    ),
    (
        "a corpus with no matching 4-gram (unsmoothed BLEU is 0)",
        ["a b c d e", "x y"],
        [["a b x d e"], ["x z y"]],
    ),
    (
        "a corpus with an empty hypothesis",
        ["", "the cat sat on the mat"],
        [["a reference"], ["the cat sat on the mat"]],
    ),
]


def _bleu_variant(hyps, refs, variant: str) -> float:
    """Unsmoothed BLEU computed the way a usual mistake does, on token lists (×100)."""
    if variant == "sentence mean":
        return sum(_bleu_variant([h], [r], "right") for h, r in zip(hyps, refs, strict=True)) / len(
            hyps
        )
    order = 3 if variant == "N=3" else 4
    matches, totals, c, r = [0] * order, [0] * order, 0, 0
    for hyp, rs in zip(hyps, refs, strict=True):
        for n in range(1, order + 1):
            matches[n - 1] += sum(clipped_counts(hyp, rs, n).values())
            totals[n - 1] += max(len(hyp) - n + (0 if variant == "totals off by one" else 1), 0)
        c += len(hyp)
        lens = [len(x) for x in rs]
        r += min(lens) if variant == "shortest ref" else closest_ref_length(len(hyp), lens)
    if min(matches) == 0 or min(totals) == 0:
        return 0.0
    p = [m / t for m, t in zip(matches, totals, strict=True)]
    mean = sum(p) / order if variant == "arithmetic" else math.exp(sum(map(math.log, p)) / order)
    return 100 * brevity_penalty(c, r) * mean


_BLEU_MISTAKES = {
    "sentence mean": "corpus BLEU is not the mean of sentence BLEU: add up matches, totals and "
    "lengths over ALL sentences first, then apply the formula once.",
    "N=3": "standard BLEU uses n-grams up to N = 4 (the notes stop at 3).",
    "shortest ref": "r is the CLOSEST reference length of each sentence (shorter on a tie), not "
    "the shortest.",
    "arithmetic": "BLEU takes the GEOMETRIC mean of the p_n: exp(mean of log p_n).",
    "totals off by one": "a sentence of L tokens has L - n + 1 n-grams (the precision's "
    "denominator).",
}


def _hidden_corpus(rng) -> tuple[str, list, list]:
    refs = [[_sentence(rng, 5, 12) for _ in range(int(rng.integers(1, 3)))] for _ in range(4)]
    hyps = [_edited(rng, rs[0]) for rs in refs]
    return "a hidden corpus", hyps, refs


def check_corpus_bleu(student_fn, *, seed: int = 0) -> None:
    """Exercise 6.4: unsmoothed corpus BLEU-4 on token lists, on the 0–100 scale (the notes'
    corpora, and hidden ones for seed > 0)."""
    ex = "6.4"
    corpora = _CORPORA if not seed else [_hidden_corpus(hidden_rng(seed, 64 + i)) for i in range(3)]
    for what, hyps, refs in corpora:
        expected = corpus_bleu(
            hyps, [tuple(rs) for rs in refs], smooth_method="none", tokenize="none"
        ).score
        got = call_student(
            ex, student_fn, [T(h) for h in hyps], [[T(r) for r in rs] for rs in refs]
        )
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            raise ExerciseError(
                ex,
                f"{what}: expected a number, got {type(got).__name__} {got!r:.80}.",
                "return the score as a float, e.g. 57.89.",
            )
        value = float(got)
        hint = (
            "sum clipped matches and n-gram totals per order over ALL sentences, then "
            "BLEU = BP * exp(mean of log p_n) with BP from the summed lengths (closest reference "
            "per sentence); report ×100; any p_n = 0 gives 0."
        )
        if expected > 0 and abs(value - expected / 100) < 1e-9:
            hint = "your number is on the 0–1 scale; report BLEU ×100 as sacrebleu does."
        toks = [T(h) for h in hyps], [[T(r) for r in rs] for rs in refs]
        check_mistakes(
            ex,
            value,
            expected,
            what=f"corpus BLEU for {what}",
            hint=hint,
            mistakes={m: _bleu_variant(*toks, v) for v, m in _BLEU_MISTAKES.items()},
            rtol=1e-9,
            atol=1e-9,
        )
    passed(ex, "corpus BLEU from scratch")


def check_bleu_counterexample(candidate) -> None:
    """Exercise 6.5 (construct): a candidate that says the opposite of the reference — its
    predicate negated, "the meeting was NOT cancelled" — yet gets a higher sentence BLEU
    (sacrebleu's defaults) than the correct paraphrase. A "not" elsewhere (the manager was not
    well; not because of the rain) keeps the meaning, and "not not" cancels itself: both fail."""
    ex = "6.5"
    if not isinstance(candidate, str) or not candidate.strip():
        raise ExerciseError(ex, f"expected a sentence (a str), got {candidate!r:.80}.",
                            'e.g. candidate = "the meeting was ..."')  # fmt: skip
    words = [w.lower() for w in tokenize_for_bleu(candidate)]
    nots = sum(w in ("not", "never", "no") or w.endswith("n't") for w in words)
    if nots == 0:
        raise ExerciseError(
            ex,
            f"your candidate {candidate!r} does not contain the word 'not'.",
            "it must say the OPPOSITE of the reference: negate what happened to the meeting.",
        )
    text = " " + " ".join(words) + " "
    negated = any(f" meeting {v} cancelled " in text for v in ("was not", "was n't", "wasn't"))
    if any(
        a in ("not", "never") and b in ("not", "never")
        for a, b in zip(words, words[1:], strict=False)
    ):
        raise ExerciseError(
            ex,
            f"your candidate {candidate!r} negates twice in a row.",
            'two negations cancel ("was not not cancelled" means it WAS cancelled): negate '
            "the predicate once — the meeting was not cancelled.",
        )
    if not negated:
        raise ExerciseError(
            ex,
            f"your candidate {candidate!r} does not negate the reference's predicate "
            '("the meeting was cancelled").',
            "a 'not' elsewhere keeps the meaning (\"the manager was not well\" is still ill; "
            '"not because of the rain" still cancels the meeting): the opposite statement is '
            "that the meeting was NOT cancelled.",
        )
    mine = sentence_bleu(candidate, [REFERENCE]).score
    theirs = sentence_bleu(PARAPHRASE, [REFERENCE]).score
    if mine > theirs:
        passed(ex, "a wrong translation that BLEU prefers to a right one")
        return
    raise ExerciseError(
        ex,
        f"sentence BLEU:\n  expected more than the paraphrase's {theirs:.2f}\n"
        f"  got      {mine:.2f} for {candidate!r}",
        "BLEU only counts n-grams shared with the reference, in order: keep the reference's "
        "words and their order, and add the 'not' — the meaning flips, the n-grams barely change.",
    )
