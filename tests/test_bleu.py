"""course_lib.bleu against sacrebleu 2.6 (the reference implementation) and nltk.

Expected values come from sacrebleu itself (run on the same inputs), from the examples published
in sacrebleu's own test suite (test/test_bleu.py, test/test_sentence_bleu.py; values retyped
here), from nltk, or are worked by hand from the lecture notes.

sacrebleu takes reference *streams* (``refs[k][i]`` = k-th reference of sentence i, ``None``
where sentence i has fewer references); course_lib takes references *per hypothesis*.
:func:`to_streams` converts one into the other.
"""

from __future__ import annotations

import math
import random
import warnings
from collections import Counter

import pytest
import sacrebleu
from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu
from nltk.util import ngrams as nltk_ngrams
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from course_lib import bleu as B
from course_lib.bleu import (
    BLEUScore,
    bleu_statistics,
    brevity_penalty,
    clipped_counts,
    closest_ref_length,
    compute_bleu,
    corpus_bleu,
    geometric_mean,
    modified_precision,
    ngram_counts,
    references_from_streams,
    sentence_bleu,
    tokenize_13a,
    tokenize_for_bleu,
)

TOL = 1e-9


def to_streams(references: list[list[str]]) -> list[list[str | None]]:
    """Per-hypothesis reference lists -> sacrebleu's reference streams (None = no reference)."""
    k_max = max(len(r) for r in references)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(k_max)]


def sacre(hyps, refs, *, order=4, **kw) -> sacrebleu.BLEUScore:
    """sacrebleu's corpus BLEU with our per-hypothesis references (any max_ngram_order)."""
    kw.setdefault("effective_order", False)
    return BLEU(max_ngram_order=order, force=True, **kw).corpus_score(hyps, to_streams(refs))


def assert_same(ours: BLEUScore, theirs, tol: float = TOL) -> None:
    assert ours.score == pytest.approx(theirs.score, abs=tol)
    assert ours.bp == pytest.approx(theirs.bp, abs=tol)
    assert ours.precisions == pytest.approx(theirs.precisions, abs=tol)
    assert list(ours.counts) == list(theirs.counts)
    assert list(ours.totals) == list(theirs.totals)
    assert (ours.sys_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)


# ---------------------------------------------------------------------------------------------
# Random text with the things that trip tokenizers: unicode, punctuation, numbers, entities
# ---------------------------------------------------------------------------------------------
WORDS = (
    "the a cat dog mat sat on is was and of to in it house big small old new "
    "Der Hund café naïve Zürich producţia zahăr Москва東京 日本語 ελληνικά مرحبا 😀 "
    "3.5 2,000 1990 12-3 U.S. e-mail don't it's well-known 1.2.3 ٣.٤ x,y a.b"
).split()
PUNCT = list(".,!?;:-'\"()[]{}/\\@#$%^&*+=<>|~`_") + ["&amp;", "&quot;", "&lt;", "&gt;", "..."]
SPACES = [" ", " ", " ", "  ", "\t", "\u00a0", " \n"]


def random_sentence(rng: random.Random, max_words: int = 14) -> str:
    if rng.random() < 0.06:
        return rng.choice(["", " ", "\n", "<skipped>", "."])
    out = []
    for _ in range(rng.randint(1, max_words)):
        w = rng.choice(WORDS)
        r = rng.random()
        if r < 0.15:
            w += rng.choice(PUNCT)
        elif r < 0.22:
            w = rng.choice(PUNCT) + w
        out.append(w)
        out.append(rng.choice(SPACES))
    s = "".join(out)
    if rng.random() < 0.3:
        s = s.capitalize()
    return s + rng.choice(["", ".", " .", "!", "?", "\n", "  "])


def random_hypothesis(rng: random.Random, ref: str) -> str:
    """A noisy copy of a reference (so that there are matches), or unrelated text."""
    if rng.random() < 0.1:
        return random_sentence(rng)
    toks = ref.split()
    out = [t if rng.random() > 0.25 else rng.choice(WORDS) for t in toks if rng.random() > 0.1]
    if len(out) > 2 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def random_corpus(seed: int, n: int = 30, max_refs: int = 3):
    rng = random.Random(seed)
    hyps, refs = [], []
    for _ in range(n):
        rs = [random_sentence(rng) for _ in range(rng.randint(1, max_refs))]
        hyps.append(random_hypothesis(rng, rng.choice(rs)))
        refs.append(rs)
    return hyps, refs


# ---------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------
def test_tokenize_13a_every_character_in_context():
    sacre_tok = Tokenizer13a()
    chars = [chr(c) for c in range(0x20, 0x300)] + list("٣۴\u00a0\u2003\u3000东。，！")
    for c in chars:
        for s in (c, f"a{c}b", f"1{c}2", f"a{c}2", f"1{c}b", f"{c}{c}.", f".{c},5"):
            assert " ".join(tokenize_13a(s)) == sacre_tok(s), repr(s)


def test_tokenize_13a_random_strings_match_sacrebleu():
    sacre_tok = Tokenizer13a()
    rng = random.Random(1)
    alphabet = list("a1.,-'& ;/\n()\"xé٣") + ["&amp;", "&quot;", "&lt;", "&gt;", "<skipped>", "-\n"]
    for _ in range(4000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert " ".join(tokenize_13a(s)) == sacre_tok(s), repr(s)
    for seed in range(3):
        for line in random_corpus(seed)[1]:
            for s in line:
                assert " ".join(tokenize_13a(s)) == sacre_tok(s), repr(s)


@pytest.mark.parametrize(
    "line, tokens",
    [
        ("It's 3.5 km, (roughly)!", ["It's", "3.5", "km", ",", "(", "roughly", ")", "!"]),
        ("2,000 e-mails in 1990-1995.", ["2,000", "e-mails", "in", "1990", "-", "1995", "."]),
        ("Tom &amp; Jerry &quot;hi&quot;", ["Tom", "&", "Jerry", '"', "hi", '"']),
        ("U.S.", ["U", ".", "S", "."]),  # rule 2: a period after a letter splits
    ],
)
def test_tokenize_13a_hand_examples(line, tokens):
    assert tokenize_13a(line) == tokens


def test_tokenize_pipeline_matches_sacrebleu_preprocessing():
    rng = random.Random(2)
    for _ in range(300):
        s = random_sentence(rng) + rng.choice(["", "-\n", "  \n", "\t"])
        for lc in (False, True):
            for method in ("13a", "none"):
                metric = BLEU(tokenize=method, lowercase=lc)
                # BLEU splits sacrebleu's preprocessed line on whitespace; so do we
                assert tokenize_for_bleu(s, method, lc) == metric._preprocess_segment(s).split()


def test_tokenize_bad_input():
    with pytest.raises(ValueError, match=r"method must be one of \['13a', 'none'\], got 'intl'"):
        tokenize_for_bleu("a b", "intl")
    with pytest.raises(TypeError, match="line must be a str, got int"):
        tokenize_13a(3)


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------
def test_ngram_counts_match_nltk():
    rng = random.Random(3)
    for _ in range(100):
        toks = [rng.choice("abcd") for _ in range(rng.randint(0, 12))]
        for n in range(1, 6):
            assert ngram_counts(toks, n) == Counter(nltk_ngrams(toks, n))
    assert ngram_counts("the cat the cat", 2) == Counter({("the", "cat"): 2, ("cat", "the"): 1})
    with pytest.raises(TypeError, match="tokens must be a str or a list of str tokens, got int"):
        ngram_counts(5, 1)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        ngram_counts("a b", 0)


def test_notes_the_the_the_example():
    """The notes: candidate 'the the the the the the' against 'the cat is on the mat'."""
    hyp, ref = "the the the the the the", "the cat is on the mat"
    assert clipped_counts(hyp, ref, 1) == Counter({("the",): 2})
    assert modified_precision(hyp, ref, 1) == pytest.approx(2 / 6)
    # "the the" is not a bigram of the reference: 0/5, not the notes' 1/5
    assert modified_precision(hyp, [ref], 2) == 0.0
    assert sum(ngram_counts(hyp, 2).values()) == 5


def test_notes_worked_example_by_hand():
    """'The cat is on mat' vs 'The cat is on the mat': p = 5/5, 3/4, 2/3, 1/2; BP = e^-0.2."""
    hyp, ref = "The cat is on mat", "The cat is on the mat"
    got = [modified_precision(hyp, ref, n) for n in range(1, 5)]
    assert got == pytest.approx([1.0, 3 / 4, 2 / 3, 1 / 2])
    bp = brevity_penalty(5, 6)
    assert bp == pytest.approx(math.exp(-0.2))
    assert bp * geometric_mean(got[:3]) == pytest.approx(math.exp(-0.2) * 0.5 ** (1 / 3))
    n4 = sentence_bleu(hyp, ref)
    assert n4.score == pytest.approx(100 * math.exp(-0.2) * (3 / 4 * 2 / 3 * 1 / 2) ** 0.25)
    assert_same(n4, sacrebleu.sentence_bleu(hyp, [ref]))
    n3 = sentence_bleu(hyp, ref, max_ngram_order=3)
    assert n3.score == pytest.approx(100 * math.exp(-0.2) * 0.5 ** (1 / 3))  # 64.98, not 51.4
    assert_same(n3, BLEU(max_ngram_order=3, effective_order=True).sentence_score(hyp, [ref]))


def test_clipped_counts_take_the_max_over_references():
    hyp = "the the the cat"
    refs = ["the cat", "the the mat"]
    assert clipped_counts(hyp, refs, 1) == Counter({("the",): 2, ("cat",): 1})
    with pytest.raises(TypeError, match="references must be a str or a non-empty list"):
        clipped_counts(hyp, [], 1)
    with pytest.raises(TypeError, match=r"references\[1\] must be a str or a list of str tokens"):
        clipped_counts(hyp, ["a", 3], 1)


def test_building_blocks_add_up_to_sacrebleu_statistics():
    hyps, refs = random_corpus(7, n=40)
    H = [tokenize_for_bleu(h) for h in hyps]
    R = [[tokenize_for_bleu(r) for r in rs] for rs in refs]
    counts = [
        sum(sum(clipped_counts(h, r, n).values()) for h, r in zip(H, R, strict=True))
        for n in (1, 2, 3, 4)
    ]
    totals = [sum(sum(ngram_counts(h, n).values()) for h in H) for n in (1, 2, 3, 4)]
    sys_len = sum(map(len, H))
    ref_len = sum(
        closest_ref_length(len(h), [len(x) for x in r]) for h, r in zip(H, R, strict=True)
    )
    theirs = sacre(hyps, refs, smooth_method="none")
    assert (counts, totals, sys_len, ref_len) == (
        theirs.counts,
        theirs.totals,
        theirs.sys_len,
        theirs.ref_len,
    )
    assert bleu_statistics(H, R) == (sys_len, ref_len, counts, totals)


def test_closest_ref_length_matches_sacrebleu():
    metric = BLEU()
    rng = random.Random(4)
    for _ in range(500):
        hyp_len = rng.randint(0, 10)
        lens = [rng.randint(0, 10) for _ in range(rng.randint(1, 4))]
        assert closest_ref_length(hyp_len, lens) == metric._get_closest_ref_len(hyp_len, lens)
    assert closest_ref_length(5, [3, 7]) == 3  # a tie goes to the shorter reference
    with pytest.raises(ValueError, match="ref_lens must be a non-empty list of lengths"):
        closest_ref_length(3, [])


@pytest.mark.parametrize("c, r", [(5, 6), (6, 6), (7, 6), (0, 3), (0, 0), (1, 40)])
def test_brevity_penalty_matches_sacrebleu(c, r):
    expected = BLEU.compute_bleu([1, 1, 1, 1], [9, 9, 9, 9], c, r).bp
    assert brevity_penalty(c, r) == pytest.approx(expected, abs=1e-15)


def test_brevity_penalty_bad_input():
    with pytest.raises(ValueError, match="sys_len must be >= 0, got -1"):
        brevity_penalty(-1, 2)


def test_geometric_mean():
    assert geometric_mean([1, 0.75, 2 / 3, 0.5]) == pytest.approx(0.25**0.25)
    assert geometric_mean([4, 9], weights=[0.5, 0.5]) == pytest.approx(6.0)
    assert geometric_mean([0.5, 0.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match="values is empty"):
        geometric_mean([])
    with pytest.raises(ValueError, match="values must be >= 0"):
        geometric_mean([0.5, -1])
    with pytest.raises(ValueError, match="weights has 1 entries, values has 2"):
        geometric_mean([0.5, 0.5], weights=[1.0])


# ---------------------------------------------------------------------------------------------
# sacrebleu's own published examples (values retyped from its test suite)
# ---------------------------------------------------------------------------------------------
README_HYPS = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
README_REFS = [  # per hypothesis (sacrebleu's test gives the same as two streams)
    ["The dog bit the man.", "The dog had bit the man."],
    ["It was not unexpected.", "No one was surprised."],
    ["The man bit him first.", "The man had bitten the dog."],
]


@pytest.mark.parametrize(
    "hyps, kwargs, expected",
    [
        (README_HYPS, {}, 48.530827),
        (["", "", ""], {}, 0.0),
        (README_HYPS, {"tokenize": "none"}, 49.1919566),
        (README_HYPS, {"tokenize": "13a"}, 48.530827),
        (README_HYPS, {"smooth_method": "none"}, 48.530827),
    ],
)
def test_sacrebleu_published_corpus_examples(hyps, kwargs, expected):
    assert corpus_bleu(hyps, README_REFS, **kwargs).score == pytest.approx(expected, abs=1e-6)


RAW = {"tokenize": "none", "smooth_method": "floor", "use_effective_order": True}


@pytest.mark.parametrize(
    "hyps, refs, expected",
    [
        # the suite lists 0.003799178428257963 here, from before sacrebleu returned 0 for a
        # corpus without a single match (its issue #141); sacrebleu 2.6 gives 0.0, as do we
        (["this is a test", "another test"], ["ref1", "ref2"], 0.0),
        (["this is a test"], ["this is a test"], 1.0),
        (["this is a fest"], ["this is a test"], 0.223606797749979),
        (["test"], ["a test"], 0.3678794411714425),
        (["a test"], ["a test"], 1.0),
        (["a little test"], ["a test"], 0.03218297948685433),
    ],
)
def test_sacrebleu_published_raw_examples(hyps, refs, expected):
    got = corpus_bleu(hyps, refs, smooth_value=0.01, **RAW).score / 100
    assert got == pytest.approx(expected, abs=1e-8)
    assert got == pytest.approx(
        sacrebleu.raw_corpus_bleu(hyps, [refs], 0.01).score / 100, abs=1e-12
    )


def test_sacrebleu_published_statistics_and_offset():
    hyp, ref = "am I am a character sequence", "I am a symbol string sequence a a"
    res = corpus_bleu([hyp], [ref], smooth_value=0.01, **RAW)
    assert (res.counts, res.totals) == ([4, 2, 1, 0], [6, 5, 4, 3])
    assert corpus_bleu([hyp], [ref], smooth_value=0.0, **RAW).score == 0.0
    assert corpus_bleu([hyp], [ref], **RAW).score / 100 == pytest.approx(0.1555722182, abs=1e-8)


def test_sacrebleu_published_scoring_and_degenerate_statistics():
    assert compute_bleu([9, 7, 5, 3], [10, 8, 6, 4], 11, 11).score / 100 == pytest.approx(
        0.8375922397, abs=1e-8
    )
    for counts, totals, c, r, offset in [
        ([0, 0, 0, 0], [4, 4, 2, 1], 0, 1, 0.0),
        ([0, 0, 0, 0], [10, 11, 12, 0], 14, 10, 0.0),
        ([0, 0, 0, 0], [0, 0, 0, 0], 0, 0, 0.0),
        ([6, 5, 4, 0], [6, 5, 4, 3], 6, 6, 0.0),
        ([0, 0, 0, 0], [0, 0, 0, 0], 0, 0, 0.1),
        ([0, 0, 0, 0], [0, 0, 0, 0], 1, 5, 0.01),
    ]:
        assert compute_bleu(counts, totals, c, r, "floor", offset).score == 0.0


SENT_REF = "producţia de zahăr brut se exprimă în zahăr alb;"
SENT_SYS = "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;"


@pytest.mark.parametrize(
    "method, value, tok, expected",
    [
        ("exp", None, "13a", 8.493),
        ("none", None, "13a", 0.0),
        ("floor", None, "13a", 4.51688),
        ("floor", 0.1, "13a", 4.51688),
        ("floor", 0.5, "13a", 10.10),
        ("add-k", None, "13a", 14.882),
        ("add-k", 1, "13a", 14.882),
        ("add-k", 2, "13a", 21.389),
        ("exp", None, "none", 7.347),
    ],
)
def test_sacrebleu_published_sentence_examples(method, value, tok, expected):
    got = sentence_bleu(
        SENT_SYS, [SENT_REF], smooth_method=method, smooth_value=value, tokenize=tok
    )
    assert got.score == pytest.approx(expected, abs=1e-3)
    for m in ("exp", "none", "floor", "add-k"):
        assert sentence_bleu("this is a cat", "okay thanks", smooth_method=m).score == 0.0


# ---------------------------------------------------------------------------------------------
# Randomised corpora: identical to sacrebleu to 1e-9
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(16))
def test_corpus_bleu_random_corpora_match_sacrebleu(seed):
    rng = random.Random(100 + seed)
    hyps, refs = random_corpus(seed, n=rng.randint(1, 40), max_refs=rng.choice([1, 2, 3]))
    method = rng.choice(list(B.SMOOTH_METHODS))
    value = rng.choice([None, 0.01, 0.5, 2]) if method in ("floor", "add-k") else None
    kw = dict(
        smooth_method=method,
        smooth_value=value,
        lowercase=rng.random() < 0.5,
        tokenize=rng.choice(["13a", "none"]),
    )
    eff = rng.random() < 0.3
    order = rng.choice([4, 4, 1, 2, 3, 5])
    ours = corpus_bleu(hyps, refs, use_effective_order=eff, max_ngram_order=order, **kw)
    assert_same(ours, sacre(hyps, refs, order=order, effective_order=eff, **kw))
    if order == 4 and not eff:  # the documented entry point itself, too
        assert_same(ours, sacrebleu.corpus_bleu(hyps, to_streams(refs), force=True, **kw))


def test_corpus_bleu_all_smoothing_methods_on_one_corpus():
    hyps, refs = random_corpus(99, n=25)
    for method in B.SMOOTH_METHODS:
        for lc in (False, True):
            ours = corpus_bleu(hyps, refs, smooth_method=method, lowercase=lc)
            assert_same(ours, sacre(hyps, refs, smooth_method=method, lowercase=lc))


def test_sentence_bleu_random_pairs_match_sacrebleu():
    rng = random.Random(5)
    for i in range(150):
        refs = [random_sentence(rng, 8) for _ in range(rng.randint(1, 3))]
        hyp = random_hypothesis(rng, refs[0])
        method = ["exp", "floor", "add-k", "none"][i % 4]
        tok = rng.choice(["13a", "none"])
        ours = sentence_bleu(hyp, refs, smooth_method=method, tokenize=tok)
        theirs = sacrebleu.sentence_bleu(hyp, refs, smooth_method=method, tokenize=tok)
        assert_same(ours, theirs)


def test_variable_number_of_references_and_signature():
    hyps = ["the cat sat on the mat .", "a dog"]
    refs = [["the cat sat on a mat .", "there is a cat on the mat ."], "a dog !"]
    ours = corpus_bleu(hyps, refs)
    assert_same(ours, sacre(hyps, [refs[0], [refs[1]]]))
    assert ours.signature == "nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp"
    assert repr(ours).startswith("BLEU|nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp = ")
    one = corpus_bleu(hyps, ["x", "y"], smooth_method="floor", lowercase=True)
    assert one.signature == "nrefs:1|case:lc|eff:no|tok:13a|smooth:floor[0.10]"
    # the numbers part of the repr is sacrebleu's own format
    assert (
        repr(ours).split(" = ", 1)[1]
        == sacrebleu.corpus_bleu(hyps, [[refs[0][0], refs[1]], [refs[0][1], None]])
        .format()
        .split(" = ", 1)[1]
    )


def test_empty_hypothesis_scores_zero_and_empty_reference_counts():
    assert sentence_bleu("", "the cat").score == 0.0
    assert corpus_bleu(["", ""], [["a b"], ["c"]]).score == 0.0
    # an empty reference string is a reference of length 0 (as in sacrebleu)
    hyps, refs = ["a b c d", "x"], [["", "a b c d e"], [""]]
    assert_same(corpus_bleu(hyps, refs), sacre(hyps, refs))


def test_tuple_and_list_inputs_agree():
    hyps, refs = random_corpus(11, n=10)
    assert corpus_bleu(tuple(hyps), [tuple(r) for r in refs]).score == corpus_bleu(hyps, refs).score


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------
def test_bad_input_messages():
    with pytest.raises(ValueError, match="same length: got 2 hypotheses and 1 reference entries"):
        corpus_bleu(["a", "b"], ["a"])
    with pytest.raises(TypeError, match="hypotheses must be a list of str, got str"):
        corpus_bleu("a b", ["a b"])
    with pytest.raises(TypeError, match=r"hypotheses\[1\] must be a str, got NoneType"):
        corpus_bleu(["a", None], ["a", "b"])
    with pytest.raises(TypeError, match=r"references\[0\]\[1\] must be a str, got int"):
        corpus_bleu(["a"], [["a", 1]])
    with pytest.raises(TypeError, match=r"references\[0\] must be a str or a list of str"):
        corpus_bleu(["a"], [None])
    with pytest.raises(ValueError, match=r"references\[0\] is an empty list"):
        corpus_bleu(["a"], [[]])
    with pytest.raises(TypeError, match="references must be a list with one entry per hypothesis"):
        corpus_bleu(["a"], "a")
    with pytest.raises(ValueError, match="hypotheses is empty"):
        corpus_bleu([], [])
    with pytest.raises(
        ValueError,
        match=r"smooth_method must be one of \['none', 'floor', 'add-k', 'exp'\], got 'laplace'",
    ):
        corpus_bleu(["a"], ["a"], smooth_method="laplace")
    with pytest.raises(ValueError, match="smooth_value must be a finite number >= 0, got -1"):
        corpus_bleu(["a"], ["a"], smooth_method="floor", smooth_value=-1)
    with pytest.raises(ValueError, match="tokenize must be one of"):
        corpus_bleu(["a"], ["a"], tokenize="intl")
    with pytest.raises(ValueError, match="max_ngram_order must be >= 1, got 0"):
        corpus_bleu(["a"], ["a"], max_ngram_order=0)
    with pytest.raises(TypeError, match="hypothesis must be a str, got list"):
        sentence_bleu(["a"], ["a"])
    with pytest.raises(TypeError, match="references must be a str or a list of str, got int"):
        sentence_bleu("a", 3)
    with pytest.raises(ValueError, match="counts and totals need max_ngram_order=4 entries"):
        compute_bleu([1, 2], [3, 4], 2, 2)


# ---------------------------------------------------------------------------------------------
# nltk: agrees where the definitions agree
# ---------------------------------------------------------------------------------------------
def _tokenized_corpus(seed: int, n: int = 30):
    """Pre-tokenised sentences of >= 4 tokens whose every n-gram order has some match."""
    rng = random.Random(seed)
    vocab = "the a cat dog sat on mat , . is".split()
    hyps, refs = [], []
    for _ in range(n):
        rs = [
            [rng.choice(vocab) for _ in range(rng.randint(4, 12))] for _ in range(rng.randint(1, 3))
        ]
        h = [t if rng.random() > 0.3 else rng.choice(vocab) for t in rs[0]]
        hyps.append(h)
        refs.append(rs)
    return hyps, refs


@pytest.mark.parametrize("seed", range(6))
def test_matches_nltk_on_pretokenised_unsmoothed_corpora(seed):
    """nltk and sacrebleu agree on tokens given, no smoothing, every hypothesis >= N tokens.

    Where they differ (so the comparison avoids it, and the next test shows it):
    * nltk scores in 0-1, sacrebleu/course_lib in 0-100;
    * nltk does no tokenization or lowercasing: it takes token lists;
    * nltk counts at least 1 n-gram per sentence in every denominator (``max(1, ...)``), so a
      hypothesis shorter than n lowers nltk's p_n, but not sacrebleu's;
    * with no smoothing an order without any match gives nltk a tiny positive score (it uses
      ``sys.float_info.min`` and warns), sacrebleu exactly 0; nltk's smoothing functions
      (method1-7) are not sacrebleu's 'exp'/'floor'/'add-k' and give other numbers.
    """
    hyps, refs = _tokenized_corpus(seed)
    ours = corpus_bleu(
        [" ".join(h) for h in hyps],
        [[" ".join(r) for r in rs] for rs in refs],
        smooth_method="none",
        tokenize="none",
    )
    assert all(ours.counts)
    assert ours.score / 100 == pytest.approx(nltk_corpus_bleu(refs, hyps), abs=1e-12)


def test_nltk_differs_for_short_hypotheses_by_its_denominator():
    hyps, refs = _tokenized_corpus(0)
    hyps[0], refs[0] = ["the", "cat"], [["the", "cat", "sat"]]  # no 3-grams or 4-grams
    ours = corpus_bleu(
        [" ".join(h) for h in hyps],
        [[" ".join(r) for r in rs] for rs in refs],
        smooth_method="none",
        tokenize="none",
    )
    theirs = nltk_corpus_bleu(refs, hyps)
    assert ours.score / 100 != pytest.approx(theirs, abs=1e-6)
    # nltk's p_3, p_4 have one more n-gram in the denominator, for the short sentence
    nltk_like = compute_bleu(
        ours.counts,
        [ours.totals[0], ours.totals[1], ours.totals[2] + 1, ours.totals[3] + 1],
        ours.sys_len,
        ours.ref_len,
    )
    assert nltk_like.score / 100 == pytest.approx(theirs, abs=1e-12)


def test_nltk_unsmoothed_zero_order_is_tiny_not_zero():
    hyp, ref = ["a", "b", "c", "d"], ["a", "b", "x", "d"]  # no matching 3-gram or 4-gram
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = nltk_corpus_bleu([[ref]], [hyp])
    ours = corpus_bleu(["a b c d"], ["a b x d"], smooth_method="none", tokenize="none")
    assert ours.score == 0.0 and 0.0 < theirs < 1e-100


def test_square_corpus_is_read_per_hypothesis_and_streams_have_a_converter():
    # 3 sentences with 3 references each: the documented per-hypothesis form, never "guessed"
    # to be sacrebleu's streams (issue 28: it used to be refused).
    hyps = ["the cat sat on the mat", "a dog ran", "it is raining today"]
    refs = [
        ["the cat sat on the mat", "a cat sat on a mat", "the cat is on the mat"],
        ["the dog ran", "a dog runs", "one dog ran away"],
        ["it rains today", "it is raining now", "today it is raining"],
    ]
    ours = corpus_bleu(hyps, refs)
    assert_same(ours, sacre(hyps, refs))
    streams = to_streams(refs)  # sacrebleu's layout, converted explicitly
    assert references_from_streams(streams) == refs
    assert_same(
        corpus_bleu(hyps, references_from_streams(streams)), sacrebleu.corpus_bleu(hyps, streams)
    )
    ragged = [["a b c"], ["d e f", "d e g"]]  # None fills the shorter sentence's stream
    assert references_from_streams(to_streams(ragged)) == ragged
