"""Checks for the exercises of lecture 06 (BLEU).

Students work on token lists (no tokenizer): a hypothesis is a list of str, its references a
list of such lists. Every answer is compared with ``course_lib.bleu`` (itself tested against
sacrebleu) on several inputs, including an edge case.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

from ..bleu import brevity_penalty, clipped_counts, closest_ref_length, corpus_bleu
from . import ExerciseError, call_student, check_array, check_value, passed

__all__ = [
    "check_clipped_counts",
    "check_brevity_penalty",
    "check_closest_ref_length",
    "check_corpus_bleu",
]

T = str.split  # the exercises' inputs are written as strings and split here


def _as_count_dict(ex: str, got, what: str) -> dict:
    if not isinstance(got, Mapping):
        raise ExerciseError(
            ex,
            f"{what}: expected a dict (or Counter) mapping n-gram tuples to counts, "
            f"got {type(got).__name__} {got!r:.80}.",
            "return e.g. Counter({('the',): 2}) — keys are tuples of n tokens.",
        )
    return {k: v for k, v in got.items() if v != 0}  # zero entries are allowed, not required


def check_clipped_counts(student_fn) -> None:
    """Exercise 6.1: min(count in hypothesis, max count in any one reference), per n-gram."""
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
    for hyp, refs, n, what in cases:
        got = call_student(ex, student_fn, T(hyp), [T(r) for r in refs], n)
        got = _as_count_dict(ex, got, what)
        expected = dict(clipped_counts(T(hyp), [T(r) for r in refs], n))
        check_value(
            ex,
            dict(sorted(got.items())),
            dict(sorted(expected.items())),
            what=f"clipped {n}-gram counts for {what}: hypothesis {hyp!r}, references {refs!r}",
            hint="count the hypothesis n-grams; for each, take its largest count in any single "
            "reference (Counter's | does a max), and keep the smaller of the two.",
        )
    passed(ex, "clipped n-gram counts")


def check_brevity_penalty(student_fn) -> None:
    """Exercise 6.2: BP = 1 if c >= r else exp(1 - r/c); 0 for an empty hypothesis."""
    ex = "6.2"
    for c, r, what in [
        (5, 6, "the notes' example (c=5, r=6)"),
        (6, 6, "equal lengths"),
        (9, 6, "a longer hypothesis"),
        (2, 6, "a much shorter hypothesis"),
        (0, 4, "an empty hypothesis (c=0)"),
    ]:
        got = call_student(ex, student_fn, c, r)
        check_array(
            ex,
            got,
            brevity_penalty(c, r),
            what=f"brevity penalty for {what}",
            hint="BP = exp(1 - r/c) only when c < r; 1 when c >= r; and 0 when c == 0 "
            "(do not divide by zero).",
            rtol=1e-9,
            atol=1e-12,
        )
    passed(ex, "brevity penalty")


def check_closest_ref_length(student_fn) -> None:
    """Exercise 6.3: the reference length closest to the hypothesis length, shorter on ties."""
    ex = "6.3"
    for hyp_len, ref_lens in [(5, [6]), (5, [4, 9]), (5, [9, 7, 2]), (5, [7, 3]), (5, [3, 7])]:
        got = call_student(ex, student_fn, hyp_len, list(ref_lens))
        check_value(
            ex,
            got,
            closest_ref_length(hyp_len, ref_lens),
            what=f"closest reference length to {hyp_len} among {ref_lens}",
            hint="minimise |r - hyp_len|; on a tie choose the shorter reference "
            "(min with key=lambda r: (abs(r - hyp_len), r)).",
        )
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


def check_corpus_bleu(student_fn) -> None:
    """Exercise 6.4: unsmoothed corpus BLEU-4 on token lists, on the 0–100 scale."""
    ex = "6.4"
    for what, hyps, refs in _CORPORA:
        expected = corpus_bleu(hyps, refs, smooth_method="none", tokenize="none").score
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
        check_array(
            ex,
            value,
            expected,
            what=f"corpus BLEU for {what}",
            hint=hint,
            rtol=1e-9,
            atol=1e-9,
        )
    passed(ex, "corpus BLEU from scratch")
