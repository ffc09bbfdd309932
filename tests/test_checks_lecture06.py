"""Lecture 06 checks: each passes a right answer, and fails wrong answers and stubs loudly."""

import math
from collections import Counter

import pytest
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture06 import (
    check_brevity_penalty,
    check_clipped_counts,
    check_closest_ref_length,
    check_corpus_bleu,
)

# --- reference answers, written the way a student would ------------------------------------


def ngrams(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def clipped(hyp, refs, n):
    max_ref = Counter()
    for r in refs:
        max_ref |= ngrams(r, n)
    return {g: min(c, max_ref[g]) for g, c in ngrams(hyp, n).items() if max_ref[g] > 0}


def bp(c, r):
    if c >= r:
        return 1.0
    return 0.0 if c == 0 else math.exp(1 - r / c)


def closest(hyp_len, ref_lens):
    return min(ref_lens, key=lambda r: (abs(r - hyp_len), r))


def bleu(hyps, refs, scale=100.0, closest_fn=closest):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for h, rs in zip(hyps, refs, strict=True):
        for n in range(1, 5):
            matches[n - 1] += sum(clipped(h, rs, n).values())
            totals[n - 1] += max(len(h) - n + 1, 0)
        c += len(h)
        r += closest_fn(len(h), [len(x) for x in rs])
    if min(matches) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / 4
    return scale * bp(c, r) * math.exp(log_p)


# --- Exercise 6.1 --------------------------------------------------------------------------


def test_clipped_counts_passes_reference(capsys):
    check_clipped_counts(clipped)
    check_clipped_counts(lambda h, rs, n: Counter(clipped(h, rs, n)))
    assert capsys.readouterr().out == "✅ Exercise 6.1 passed: clipped n-gram counts\n" * 2


def test_clipped_counts_fails_without_clipping():
    def unclipped(hyp, refs, n):
        ref_all = set().union(*(ngrams(r, n) for r in refs))
        return {g: c for g, c in ngrams(hyp, n).items() if g in ref_all}

    with pytest.raises(ExerciseError, match=r"the notes' 'the the …' \(n=1\)") as err:
        check_clipped_counts(unclipped)
    text = str(err.value)
    assert "expected {('the',): 2}" in text and "got      {('the',): 6}" in text


def test_clipped_counts_fails_summing_over_references():
    def summed(hyp, refs, n):
        total = Counter()
        for r in refs:
            total += ngrams(r, n)
        return {g: min(c, total[g]) for g, c in ngrams(hyp, n).items() if total[g] > 0}

    with pytest.raises(ExerciseError, match=r"max over references, not the sum") as err:
        check_clipped_counts(summed)
    assert "expected" in str(err.value) and "got" in str(err.value)


def test_clipped_counts_fails_wrong_type_and_stub():
    with pytest.raises(ExerciseError, match=r"expected a dict .* got int 2"):
        check_clipped_counts(lambda h, rs, n: 2)
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_clipped_counts(_stub)


# --- Exercise 6.2 --------------------------------------------------------------------------


def test_brevity_penalty_passes_reference(capsys):
    check_brevity_penalty(bp)
    assert capsys.readouterr().out == "✅ Exercise 6.2 passed: brevity penalty\n"


def test_brevity_penalty_fails_inverted_ratio():
    with pytest.raises(ExerciseError, match=r"the notes' example \(c=5, r=6\)") as err:
        check_brevity_penalty(lambda c, r: 1.0 if c >= r else math.exp(1 - c / r))
    text = str(err.value)
    assert "expected 0.8187" in text and "got      1.1814" in text


def test_brevity_penalty_fails_on_empty_hypothesis():
    with pytest.raises(ExerciseError, match=r"raised ZeroDivisionError"):
        check_brevity_penalty(lambda c, r: 1.0 if c >= r else math.exp(1 - r / c))


def test_brevity_penalty_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_brevity_penalty(_stub)


# --- Exercise 6.3 --------------------------------------------------------------------------


def test_closest_ref_length_passes_reference(capsys):
    check_closest_ref_length(closest)
    assert capsys.readouterr().out == "✅ Exercise 6.3 passed: closest reference length\n"


def test_closest_ref_length_fails_on_ties_and_averages():
    with pytest.raises(ExerciseError, match=r"among \[7, 3\]:\n  expected 3\n  got      7"):
        check_closest_ref_length(lambda h, rs: min(rs, key=lambda r: abs(r - h)))
    with pytest.raises(ExerciseError, match=r"expected 4\n  got      6"):
        check_closest_ref_length(lambda h, rs: round(sum(rs) / len(rs)))
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_closest_ref_length(_stub)


# --- Exercise 6.4 --------------------------------------------------------------------------


def test_corpus_bleu_passes_reference(capsys):
    check_corpus_bleu(bleu)
    assert capsys.readouterr().out == "✅ Exercise 6.4 passed: corpus BLEU from scratch\n"


def test_corpus_bleu_fails_on_the_0_1_scale_with_a_hint():
    with pytest.raises(ExerciseError, match=r"0–1 scale; report BLEU ×100") as err:
        check_corpus_bleu(lambda h, r: bleu(h, r, scale=1.0))
    assert "expected 57.893" in str(err.value)


def test_corpus_bleu_fails_averaging_sentence_bleu():
    def averaged(hyps, refs):
        return sum(bleu([h], [r]) for h, r in zip(hyps, refs, strict=True)) / len(hyps)

    with pytest.raises(
        ExerciseError, match=r"one or two references each:\n  expected 44.1386\n  got      20.49"
    ):
        check_corpus_bleu(averaged)


def test_corpus_bleu_fails_with_the_longest_reference():
    with pytest.raises(ExerciseError, match=r"one or two references each") as err:
        check_corpus_bleu(lambda h, r: bleu(h, r, closest_fn=lambda n, lens: max(lens)))
    assert "expected 44.1386" in str(err.value) and "got" in str(err.value)


def test_corpus_bleu_fails_non_number_and_stub():
    with pytest.raises(ExerciseError, match=r"expected a number, got str"):
        check_corpus_bleu(lambda h, r: "57.9")
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_corpus_bleu(_stub)
