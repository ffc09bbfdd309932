"""Lecture 06 checks: right answers pass, each usual mistake fails with the hint naming it."""

import math
from collections import Counter

import pytest
import sacrebleu
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture06 import (
    PARAPHRASE,
    REFERENCE,
    check_bleu_counterexample,
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


def _ids(table):
    return [row[0] for row in table]


# --- 6.1 ---------------------------------------------------------------------------------------


def clipped_nltk_style(hyp, refs, n):  # one n-gram at a time, with list.count-like loops
    grams = [tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1)]
    out = {}
    for g in set(grams):
        best = max(sum(1 for i in range(len(r) - n + 1) if tuple(r[i : i + n]) == g) for r in refs)
        if best:
            out[g] = min(grams.count(g), best)
    return out


def _clip_with(ngram_fn, combine):
    def answer(hyp, refs, n):
        h = ngram_fn(hyp, n)
        return combine(h, [ngram_fn(r, n) for r in refs])

    return answer


def _off_by_one(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n))


def _max_refs(counts):
    out = Counter()
    for c in counts:
        out |= c
    return out


WRONG_6_1 = [
    ("off-by-one n-gram range", _clip_with(_off_by_one, lambda h, rs: h & _max_refs(rs)),
     r"range\(len\(tokens\) - n \+ 1\)"),
    ("sum over references", _clip_with(ngrams, lambda h, rs: h & sum(rs, Counter())),
     "not the sum"),
    ("no clipping", _clip_with(ngrams, lambda h, rs: Counter({g: c for g, c in h.items()
                                                            if g in _max_refs(rs)})),
     "counts at most as often"),
    ("first reference only", _clip_with(ngrams, lambda h, rs: h & rs[0]), "not only the first"),
    ("returns a list", lambda hyp, refs, n: list(clipped(hyp, refs, n).items()), "expected a dict"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("answer", [clipped, clipped_nltk_style])
def test_clipped_counts_passes_right_answers(answer, seed, capsys):
    check_clipped_counts(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 6.1 passed: clipped n-gram counts\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_6_1, ids=_ids(WRONG_6_1))
def test_clipped_counts_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_clipped_counts(answer)


def test_clipped_counts_shows_the_notes_example():
    with pytest.raises(
        ExerciseError, match=r"expected \{\('the',\): 2\}\n  got      \{\('the',\): 6\}"
    ):
        check_clipped_counts(_clip_with(ngrams, lambda h, rs: Counter({g: c for g, c in h.items()
                                                                       if g in _max_refs(rs)})))  # fmt: skip


# --- 6.2 / 6.3 ---------------------------------------------------------------------------------


def bp_alt(c, r):
    return min(1.0, math.exp(1 - r / c)) if c else 0.0


WRONG_6_2 = [
    ("inverted ratio", lambda c, r: 1.0 if c >= r else (0.0 if c == 0 else math.exp(1 - c / r)),
     "not 1 - c/r"),
    ("no cap at 1", lambda c, r: 0.0 if c == 0 else math.exp(1 - r / c), "never rewards length"),
    ("divides by zero", lambda c, r: 1.0 if c >= r else math.exp(1 - r / c), "test c == 0"),
    ("empty gets 1", lambda c, r: 1.0 if c >= r or c == 0 else math.exp(1 - r / c), "gets BP = 0"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip

WRONG_6_3 = [
    ("tie -> longer", lambda h, rs: min(rs, key=lambda r: (abs(r - h), -r)), "SHORTER one"),
    ("first closest (no tie rule)", lambda h, rs: min(rs, key=lambda r: abs(r - h)), "SHORTER one"),
    ("shortest reference", lambda h, rs: min(rs), "not the shortest"),
    ("longest reference", lambda h, rs: max(rs), "not the longest"),
    ("mean length", lambda h, rs: sum(rs) / len(rs), "closest"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("answer", [bp, bp_alt])
def test_brevity_penalty_passes_right_answers(answer, seed, capsys):
    check_brevity_penalty(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 6.2 passed: brevity penalty\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_6_2, ids=_ids(WRONG_6_2))
def test_brevity_penalty_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_brevity_penalty(answer)


@pytest.mark.parametrize(
    "answer", [closest, lambda h, rs: sorted(rs, key=lambda r: (abs(r - h), r))[0]]
)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_closest_ref_length_passes_right_answers(answer, seed, capsys):
    check_closest_ref_length(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 6.3 passed: closest reference length\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_6_3, ids=_ids(WRONG_6_3))
def test_closest_ref_length_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_closest_ref_length(answer)


# --- 6.4 ---------------------------------------------------------------------------------------


def bleu_sacrebleu(hyps, refs):
    n_refs = max(len(rs) for rs in refs)
    streams = [[" ".join(rs[k]) if k < len(rs) else None for rs in refs] for k in range(n_refs)]
    return sacrebleu.corpus_bleu([" ".join(h) for h in hyps], streams, tokenize="none",
                                 smooth_method="none").score  # fmt: skip


def _bleu_variant(order=4, ref_len=closest, mean="geo", off=0):
    def answer(hyps, refs):
        matches, totals, c, r = [0] * order, [0] * order, 0, 0
        for h, rs in zip(hyps, refs, strict=True):
            for n in range(1, order + 1):
                matches[n - 1] += sum(clipped(h, rs, n).values())
                totals[n - 1] += max(len(h) - n + 1 - off, 0)
            c += len(h)
            r += ref_len(len(h), [len(x) for x in rs])
        if min(matches) == 0:
            return 0.0
        p = [m / t for m, t in zip(matches, totals, strict=True)]
        m = sum(p) / order if mean == "arith" else math.exp(sum(map(math.log, p)) / order)
        return 100 * bp(c, r) * m

    return answer


WRONG_6_4 = [
    ("mean of sentence BLEU", lambda hs, rs: sum(bleu([h], [r]) for h, r in zip(hs, rs, strict=True)) / len(hs),
     "not the mean of sentence BLEU"),
    ("N = 3", _bleu_variant(order=3), "up to N = 4"),
    ("shortest reference", _bleu_variant(ref_len=lambda h, lens: min(lens)), "CLOSEST reference"),
    ("arithmetic mean", _bleu_variant(mean="arith"), "GEOMETRIC mean"),
    ("totals off by one", _bleu_variant(off=1), "L - n \\+ 1 n-grams"),
    ("0-1 scale", lambda hs, rs: bleu(hs, rs, scale=1.0), "0–1 scale"),
    ("returns a str", lambda hs, rs: f"{bleu(hs, rs):.2f}", "expected a number"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("answer", [bleu, bleu_sacrebleu])
def test_corpus_bleu_passes_right_answers(answer, seed, capsys):
    check_corpus_bleu(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 6.4 passed: corpus BLEU from scratch\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_6_4, ids=_ids(WRONG_6_4))
def test_corpus_bleu_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_corpus_bleu(answer)


# --- 6.5 (construct a counter-example) ---------------------------------------------------------


def test_the_paraphrase_really_is_a_low_scoring_right_answer():
    assert sacrebleu.sentence_bleu(PARAPHRASE, [REFERENCE]).score == pytest.approx(23.46, abs=0.01)


def _lookup(check, answer, *args):
    """A table of the answer's outputs on the inputs the check shows (seed 0)."""
    table = {}

    def record(*a):
        table[repr(a)] = answer(*a)
        return table[repr(a)]

    check(record)
    return lambda *a: table[repr(a)]


@pytest.mark.parametrize(
    ("check", "answer"),
    [(check_clipped_counts, clipped), (check_brevity_penalty, bp),
     (check_closest_ref_length, closest), (check_corpus_bleu, bleu)],
)  # fmt: skip
def test_a_lookup_table_of_the_visible_outputs_fails_the_hidden_inputs(check, answer):
    lookup = _lookup(check, answer)
    check(lookup)
    with pytest.raises(ExerciseError, match="raised KeyError"):
        check(lookup, seed=1)


@pytest.mark.parametrize(
    "candidate",
    [
        "the meeting was not cancelled because the manager was ill",
        "the meeting was not cancelled because the manager was not ill",
        "the meeting wasn't cancelled because the manager was ill",
    ],
)
def test_bleu_counterexample_accepts_every_right_answer(candidate, capsys):
    assert sacrebleu.sentence_bleu(candidate, [REFERENCE]).score > 23.46
    check_bleu_counterexample(candidate)
    assert "✅ Exercise 6.5 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("candidate", "hint"),
    [
        (
            "the meeting was cancelled because the manager was ill",
            "does not contain the word 'not'",
        ),
        ("the meeting was not cancelled", "keep the reference's words"),
        ("not the meeting", "does not negate"),
        ("the meeting was cancelled because the manager wasnot ill", "does not contain"),
        (["the", "meeting", "was", "not"], "expected a sentence"),
        # the review's wrong answers that passed: a 'not' that keeps the meaning, and 'not not'
        ("the meeting was cancelled because the manager was not well", "does not negate"),
        (
            "the meeting was cancelled because the manager was ill , not because of the rain",
            "does not negate",
        ),
        ("the meeting was cancelled because the manager was not ill", "does not negate"),
        ("the meeting was not not cancelled because the manager was ill", "negates twice"),
    ],
)
def test_bleu_counterexample_names_the_mistake(candidate, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_bleu_counterexample(candidate)
