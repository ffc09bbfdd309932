"""BLEU (Papineni et al., 2002) from scratch, with the same options and results as sacrebleu 2.6.

BLEU compares a system's output (the *hypotheses*) with human translations (the *references*):

    BLEU = BP · exp( (1/N) · Σ_n log p_n )          reported ×100, so 0–100

* ``p_n`` — modified n-gram precision: every hypothesis n-gram counts as correct at most as
  often as it occurs in the one reference that has it most often (*clipping*), so
  "the the the the the the" cannot score by repeating a word the reference contains.
* ``BP`` — brevity penalty: precision alone rewards short output, so a hypothesis shorter
  than its closest reference is penalised by ``exp(1 - r/c)``.

At the **corpus** level (the standard) counts and lengths are summed over all sentences first
and the formula is applied once to the sums; it is *not* the average of sentence scores.

Reading order of this file: the tokenizers (``13a``, sacrebleu's default, and ``none``), the
small building blocks the lecture uses one at a time (n-gram counts, clipped counts, modified
precision, closest reference length, brevity penalty, geometric mean), :func:`compute_bleu`
— the whole formula with its smoothing in one place — and finally :func:`corpus_bleu` /
:func:`sentence_bleu`, which tokenize, gather the statistics of the whole corpus once
(vectorised with numpy, no Python loop per n-gram) and call :func:`compute_bleu`.

Unlike sacrebleu, references are given **per hypothesis**: ``references[i]`` is a string or a
list of strings for ``hypotheses[i]``, and the number may differ between hypotheses. sacrebleu
takes reference *streams* instead (``refs[k][i]`` is the k-th reference of sentence i).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, count
from typing import NamedTuple

import numpy as np

from ._validation import check_positive_int

__all__ = [
    "TOKENIZERS",
    "SMOOTH_METHODS",
    "tokenize_13a",
    "tokenize",
    "ngram_counts",
    "clipped_counts",
    "modified_precision",
    "closest_ref_length",
    "brevity_penalty",
    "geometric_mean",
    "BLEUStatistics",
    "bleu_statistics",
    "BLEUScore",
    "compute_bleu",
    "corpus_bleu",
    "sentence_bleu",
]

# Smoothing for n-gram orders without a single match (Chen & Cherry, 2014), with sacrebleu's
# default values: None means the method takes no value.
SMOOTH_METHODS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}

# ---------------------------------------------------------------------------------------------
# Tokenizers
# ---------------------------------------------------------------------------------------------

# mteval-v13a's rules (the WMT standard), as sacrebleu states them:
#  0. remove "<skipped>", join words hyphenated across a line end ("-\n"), newlines -> spaces,
#     and unescape &quot; &amp; &lt; &gt; (in that order, so "&amp;lt;" becomes "<").
#  1. surround each of these symbols with spaces:  { | } ~ [ \ ] ^ _ ` ! " # $ % & ( ) * + : ; <
#     = > ? @ /   — note: not the apostrophe, hyphen, period or comma.
#  2. a period or comma gets spaces around it when the character before it is not a digit,
#  3. ... and when the character after it is not a digit (so "3.5" and "2,000" stay whole);
#     rules 2 and 3 are regex substitutions whose matches never overlap, and that detail
#     matters in odd strings such as "a.,5" (-> "a", ".", ",5").
#  4. a hyphen right after a digit is split off: "12-3" -> "12 - 3", but "e-mail" stays.
#  Finally, runs of whitespace separate the tokens.
_SYMBOLS_13A = frozenset('{|}~[\\]^_`!"#$%&()*+:;<=>?@/')
_DIGIT_BESIDE_PERIOD_OR_COMMA = re.compile(r"[0-9][.,]|[.,][0-9]")
_RULE2 = re.compile(r"([^0-9])([.,])")  # [0-9], not \d: only ASCII digits protect a period
_RULE3 = re.compile(r"([.,])([^0-9])")
_HYPHEN_AFTER_DIGIT = re.compile(r"(?<=[0-9])-")
_ENTITIES = (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))


def tokenize_13a(line: str) -> list[str]:
    """Split ``line`` into tokens with the mteval-v13a rules (sacrebleu's default ``13a``).

    ``" ".join(tokenize_13a(s))`` equals sacrebleu's ``Tokenizer13a()(s)`` for every string.

    Args:
        line: one sentence, untokenized ("It's 3.5 km, (roughly)!").

    Returns:
        The tokens, e.g. ``["It's", "3.5", "km", ",", "(", "roughly", ")", "!"]``.
    """
    if not isinstance(line, str):
        raise TypeError(f"line must be a str, got {type(line).__name__}")
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for entity, char in _ENTITIES:
            line = line.replace(entity, char)
    # Rule 1 pads single characters, so plain str.replace (fast, in C) does it symbol by symbol;
    # the padding is only spaces, so the order of the symbols does not matter.
    line = f" {line} "
    for symbol in _SYMBOLS_13A.intersection(line):
        line = line.replace(symbol, f" {symbol} ")
    if "." in line or "," in line:
        if _DIGIT_BESIDE_PERIOD_OR_COMMA.search(line):
            # Numbers nearby: apply rules 2 and 3 literally (their non-overlapping matches).
            line = _RULE3.sub(r" \1 \2", _RULE2.sub(r"\1 \2 ", line))
        else:
            # No digit touches a period/comma: then rules 2+3 split off every one of them.
            line = line.replace(".", " . ").replace(",", " , ")
    if "-" in line:
        line = _HYPHEN_AFTER_DIGIT.sub(" - ", line)  # rule 4
    return line.split()


def _tokenize_none(line: str) -> list[str]:
    return line.split()


TOKENIZERS = {"13a": tokenize_13a, "none": _tokenize_none}


def _check_tokenizer(tokenize: str):
    if not isinstance(tokenize, str) or tokenize not in TOKENIZERS:
        raise ValueError(
            f"tokenize must be one of {sorted(TOKENIZERS)}, got {tokenize!r} "
            "(this course implements sacrebleu's default '13a' and 'none')"
        )
    return TOKENIZERS[tokenize]


def tokenize(line: str, method: str = "13a", lowercase: bool = False) -> list[str]:
    """Prepare one sentence for BLEU exactly as sacrebleu does: lowercase, rstrip, tokenize.

    Args:
        line: the sentence.
        method: ``"13a"`` (default, see :func:`tokenize_13a`) or ``"none"`` (split on spaces).
        lowercase: lowercase first (sacrebleu's ``lowercase=True``).

    Returns:
        The list of tokens BLEU counts n-grams over.
    """
    tokenizer = _check_tokenizer(method)
    if not isinstance(line, str):
        raise TypeError(f"line must be a str, got {type(line).__name__}")
    if lowercase:
        line = line.lower()
    return tokenizer(line.rstrip())


# ---------------------------------------------------------------------------------------------
# Building blocks (one sentence at a time, with Counter: what the lecture computes by hand)
# ---------------------------------------------------------------------------------------------


def _as_tokens(x, name: str) -> list[str]:
    """A string is split on whitespace (no 13a!); a list/tuple of strings is used as is."""
    if isinstance(x, str):
        return x.split()
    if isinstance(x, (list, tuple)) and all(isinstance(t, str) for t in x):
        return list(x)
    raise TypeError(f"{name} must be a str or a list of str tokens, got {type(x).__name__}")


def _as_token_lists(refs, name: str) -> list[list[str]]:
    """One reference (str) or a non-empty list of references, each a str or a token list."""
    if isinstance(refs, str):
        return [refs.split()]
    if not isinstance(refs, (list, tuple)) or len(refs) == 0:
        raise TypeError(f"{name} must be a str or a non-empty list of references, got {refs!r:.60}")
    return [_as_tokens(r, f"{name}[{k}]") for k, r in enumerate(refs)]


def ngram_counts(tokens: str | Sequence[str], n: int) -> Counter:
    """Count the n-grams of order ``n`` (contiguous runs of n tokens).

    Args:
        tokens: a list of tokens, or a string (split on whitespace).
        n: the order, >= 1.

    Returns:
        ``Counter`` mapping each n-gram, a tuple of n tokens, to how often it occurs;
        ``len(tokens) - n + 1`` n-grams in all (none if the sentence is shorter than n).
    """
    toks = _as_tokens(tokens, "tokens")
    n = check_positive_int(n, "n")
    # zip of n shifted copies yields every window of n tokens; Counter counts them in C.
    return Counter(zip(*(toks[k:] for k in range(n)), strict=False))


def clipped_counts(hypothesis: str | Sequence[str], references, n: int) -> Counter:
    """Each hypothesis n-gram's count, clipped to its largest count in any single reference.

    ``min(count in hypothesis, max over references of count in that reference)`` — the
    numerator terms of the modified precision. Counter's ``|`` takes the maximum of counts
    and ``&`` the minimum.

    Args:
        hypothesis: tokens (or a string, split on whitespace).
        references: one reference (str) or a list of references (each str or token list).
        n: n-gram order.

    Returns:
        ``Counter`` of clipped counts; n-grams no reference contains are absent.
    """
    refs = _as_token_lists(references, "references")
    max_ref = Counter()
    for ref in refs:
        max_ref |= ngram_counts(ref, n)
    return ngram_counts(hypothesis, n) & max_ref


def modified_precision(hypothesis: str | Sequence[str], references, n: int) -> float:
    """BLEU's modified n-gram precision: clipped matches / number of hypothesis n-grams.

    Returns a fraction in [0, 1] (sacrebleu prints it ×100). A hypothesis with no n-gram of
    order ``n`` (shorter than n tokens) gives 0.0 — the precision is undefined there, which is
    why :func:`compute_bleu` has smoothing and ``effective_order``.
    """
    total = sum(ngram_counts(hypothesis, n).values())
    if total == 0:
        return 0.0
    return sum(clipped_counts(hypothesis, references, n).values()) / total


def closest_ref_length(hyp_len: int, ref_lens: Sequence[int]) -> int:
    """The reference length closest to ``hyp_len``; on a tie the shorter one (as sacrebleu).

    Args:
        hyp_len: number of hypothesis tokens.
        ref_lens: the token counts of the references of that hypothesis (at least one).
    """
    if len(ref_lens) == 0:
        raise ValueError("ref_lens is empty; a hypothesis needs at least one reference")
    return min(ref_lens, key=lambda r: (abs(r - hyp_len), r))


def brevity_penalty(sys_len: int, ref_len: int) -> float:
    """``1`` if the output is at least as long as the references, else ``exp(1 - r/c)``.

    Args:
        sys_len: ``c``, total hypothesis length (tokens).
        ref_len: ``r``, total of the closest reference lengths (tokens).

    Returns:
        A number in [0, 1]; an empty output (``c = 0 < r``) gets 0.
    """
    if sys_len < 0 or ref_len < 0:
        raise ValueError(f"lengths must be >= 0, got sys_len={sys_len}, ref_len={ref_len}")
    if sys_len >= ref_len:
        return 1.0
    return math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0


def geometric_mean(values: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """``exp(Σ w_n log v_n)`` with uniform weights ``1/len(values)`` by default.

    Any zero value makes the mean 0 (log 0 = -inf): one n-gram order without a match zeroes
    unsmoothed BLEU. Values must be >= 0.
    """
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("values is empty; the geometric mean needs at least one value")
    if any(v < 0 or math.isnan(v) for v in vals):
        raise ValueError(f"values must be >= 0, got {vals}")
    if weights is not None and len(weights) != len(vals):
        raise ValueError(f"weights has {len(weights)} entries, values has {len(vals)}")
    if any(v == 0.0 for v in vals):
        return 0.0
    if weights is None:
        return math.exp(sum(math.log(v) for v in vals) / len(vals))
    return math.exp(sum(w * math.log(v) for w, v in zip(weights, vals, strict=True)))


# ---------------------------------------------------------------------------------------------
# The formula, in one place
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class BLEUScore:
    """A BLEU result with sacrebleu's fields and meanings.

    Attributes:
        score: BLEU in 0–100.
        counts: clipped matches per order n = 1..N (with ``add-k``, k is included for n >= 2,
            as in sacrebleu).
        totals: hypothesis n-grams per order (likewise).
        precisions: ``p_n`` in percent (smoothed values where smoothing applied).
        bp: brevity penalty. sys_len / ref_len: hypothesis / closest-reference token totals.
        signature: how it was computed, e.g. ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp``.
    """

    score: float
    counts: list
    totals: list
    precisions: list[float]
    bp: float
    sys_len: int
    ref_len: int
    signature: str = ""

    @property
    def ratio(self) -> float:
        """Hypothesis length / reference length (BP < 1 whenever this is < 1)."""
        return self.sys_len / self.ref_len if self.ref_len else 0.0

    def format(self, width: int = 2) -> str:
        """sacrebleu's one-line format, e.g. ``BLEU = 57.89 100.0/75.0/66.7/50.0 (BP = ...)``."""
        prec = "/".join(f"{p:.1f}" for p in self.precisions)
        name = f"BLEU|{self.signature}" if self.signature else "BLEU"
        return (
            f"{name} = {self.score:.{width}f} {prec} (BP = {self.bp:.3f} "
            f"ratio = {self.ratio:.3f} hyp_len = {self.sys_len:d} ref_len = {self.ref_len:d})"
        )

    __repr__ = format
    __str__ = format


def _signature(nrefs, lowercase, effective_order, tokenize, smooth_method, smooth_value, order):
    smooth = smooth_method
    if SMOOTH_METHODS[smooth_method] is not None:
        value = SMOOTH_METHODS[smooth_method] if smooth_value is None else smooth_value
        smooth += f"[{value:.2f}]"
    parts = [
        f"nrefs:{nrefs}",
        f"case:{'lc' if lowercase else 'mixed'}",
        f"eff:{'yes' if effective_order else 'no'}",
        f"tok:{tokenize}",
        f"smooth:{smooth}",
    ]
    if order != 4:
        parts.append(f"order:{order}")
    return "|".join(parts)


def _check_smoothing(smooth_method, smooth_value) -> None:
    if not isinstance(smooth_method, str) or smooth_method not in SMOOTH_METHODS:
        raise ValueError(
            f"smooth_method must be one of {list(SMOOTH_METHODS)}, got {smooth_method!r}"
        )
    if smooth_value is not None:
        if isinstance(smooth_value, bool) or not isinstance(smooth_value, (int, float)):
            raise TypeError(
                f"smooth_value must be a number or None, got {type(smooth_value).__name__}"
            )
        if not smooth_value >= 0:
            raise ValueError(f"smooth_value must be >= 0, got {smooth_value}")


def compute_bleu(
    counts: Sequence[int],
    totals: Sequence[int],
    sys_len: int,
    ref_len: int,
    smooth_method: str = "none",
    smooth_value: float | None = None,
    effective_order: bool = False,
    max_ngram_order: int = 4,
    signature: str = "",
) -> BLEUScore:
    """BLEU from its sufficient statistics — the whole formula, including smoothing.

    Args:
        counts: clipped matches per order 1..N (summed over the corpus).
        totals: hypothesis n-grams per order 1..N.
        sys_len: total hypothesis length; ref_len: total closest-reference length.
        smooth_method: what to do with an order that has no match (Chen & Cherry 2014):
            ``"none"`` — p_n = 0, so BLEU = 0; ``"floor"`` — p_n = smooth_value / total
            (default 0.1); ``"add-k"`` — add k (default 1) to matches and totals of every order
            n >= 2; ``"exp"`` — the k-th order without a match gets p_n = 1 / (2^k · total)
            (mteval-v13a's, sacrebleu's default).
        effective_order: average only over the orders that have any n-gram (total > 0), so a
            3-word sentence is not zeroed by its missing 4-grams (sacrebleu's sentence BLEU).
        max_ngram_order: N, the highest n-gram order (4 is standard).

    Returns:
        :class:`BLEUScore`. As in sacrebleu: if nothing matches at all the score is 0 (and no
        smoothing is applied); an order with no n-grams at all ends the loop over orders.
    """
    _check_smoothing(smooth_method, smooth_value)
    n_max = check_positive_int(max_ngram_order, "max_ngram_order")
    if len(counts) != n_max or len(totals) != n_max:
        raise ValueError(
            f"counts and totals need max_ngram_order={n_max} entries, "
            f"got {len(counts)} and {len(totals)}"
        )
    if smooth_value is None:
        smooth_value = SMOOTH_METHODS[smooth_method]
    counts, totals = list(counts), list(totals)
    bp = brevity_penalty(sys_len, ref_len)
    precisions = [0.0] * n_max
    if not any(counts):
        return BLEUScore(0.0, counts, totals, precisions, bp, sys_len, ref_len, signature)

    halvings = 1.0  # "exp" smoothing: 1/2, 1/4, ... for successive orders without a match
    order = n_max  # how many orders the geometric mean averages over
    for n in range(1, n_max + 1):
        if smooth_method == "add-k" and n > 1:
            counts[n - 1] += smooth_value
            totals[n - 1] += smooth_value
        if totals[n - 1] == 0:
            break  # no n-grams of this order (and so none of higher orders either)
        if effective_order:
            order = n
        if counts[n - 1] == 0:
            if smooth_method == "exp":
                halvings *= 2
                precisions[n - 1] = 100.0 / (halvings * totals[n - 1])
            elif smooth_method == "floor":
                precisions[n - 1] = 100.0 * smooth_value / totals[n - 1]
        else:
            precisions[n - 1] = 100.0 * counts[n - 1] / totals[n - 1]

    # BLEU = BP · exp(mean of log p_n); precisions are in percent, so the score is too.
    score = bp * geometric_mean(precisions[:order])
    return BLEUScore(score, counts, totals, precisions, bp, sys_len, ref_len, signature)


# ---------------------------------------------------------------------------------------------
# Corpus statistics, gathered once (numpy; no Python loop per n-gram)
# ---------------------------------------------------------------------------------------------


class BLEUStatistics(NamedTuple):
    """BLEU's sufficient statistics of a corpus: everything the formula needs."""

    sys_len: int
    ref_len: int
    counts: list[int]
    totals: list[int]


def bleu_statistics(
    hypotheses: Sequence[Sequence[str]],
    references: Sequence[Sequence[Sequence[str]]],
    max_ngram_order: int = 4,
) -> BLEUStatistics:
    """Sum clipped n-gram matches, n-gram totals and lengths over a tokenized corpus.

    Gives the same numbers as adding up :func:`clipped_counts`, :func:`ngram_counts` and
    :func:`closest_ref_length` sentence by sentence, but vectorised: every n-gram of the corpus
    gets an integer id *that includes its sentence number*, so one ``np.bincount`` counts all
    hypothesis n-grams, one more counts every reference's n-grams, and the clipping
    ``min(hyp count, max over references)`` is one ``np.minimum`` over all ids at once.

    Args:
        hypotheses: ``S`` token lists.
        references: ``S`` lists of token lists (``references[i]`` holds the references of
            hypothesis i; at least one each).
        max_ngram_order: N.

    Returns:
        :class:`BLEUStatistics` ``(sys_len, ref_len, counts[N], totals[N])``.
    """
    n_max = check_positive_int(max_ngram_order, "max_ngram_order")
    if len(hypotheses) != len(references):
        raise ValueError(
            f"got {len(hypotheses)} hypotheses but {len(references)} reference entries"
        )
    # One row per line: hypotheses first (role 0), then each reference (role 1 + its index).
    lines, segment, role = list(hypotheses), list(range(len(hypotheses))), [0] * len(hypotheses)
    ref_len = 0
    for i, (hyp, refs) in enumerate(zip(hypotheses, references, strict=True)):
        if len(refs) == 0:
            raise ValueError(f"references[{i}] is empty; each hypothesis needs a reference")
        ref_len += closest_ref_length(len(hyp), [len(r) for r in refs])
        lines.extend(refs)
        segment.extend([i] * len(refs))
        role.extend(range(1, len(refs) + 1))
    n_roles = max(role) + 1

    lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
    hyp_lengths = lengths[: len(hypotheses)]
    totals = [int(np.maximum(hyp_lengths - n + 1, 0).sum()) for n in range(1, n_max + 1)]
    sys_len = int(hyp_lengths.sum())

    flat = list(chain.from_iterable(lines))
    vocab = dict(zip(dict.fromkeys(flat), count(), strict=False))  # token -> id, in C
    token_id = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    line_of = np.repeat(np.arange(len(lines)), lengths)  # which line each position is in
    line_end = np.repeat(np.cumsum(lengths), lengths)  # where that line ends
    seg_of, role_of = np.asarray(segment)[line_of], np.asarray(role)[line_of]
    positions = np.arange(len(flat))

    counts = []
    # ids of the 1-grams: (sentence number, token) pairs, made dense by np.unique.
    code = np.unique(seg_of * (len(vocab) + 1) + token_id, return_inverse=True)[1].ravel()
    for n in range(1, n_max + 1):
        if n > 1:
            # An n-gram is an (n-1)-gram followed by one token; only windows inside one line.
            start = positions[: len(flat) - n + 1]
            inside = start + n <= line_end[start]
            start = start[inside]
            pair = code[start] * (len(vocab) + 1) + token_id[start + n - 1]
            code = np.full(len(flat), -1, dtype=np.int64)
            code[start] = np.unique(pair, return_inverse=True)[1].ravel()
        else:
            start = positions
        if len(start) == 0:
            counts.append(0)
            continue
        ngram, who = code[start], role_of[start]
        n_ids = int(ngram.max()) + 1
        hyp_count = np.bincount(ngram[who == 0], minlength=n_ids)
        is_ref = who > 0
        per_ref = np.bincount(ngram[is_ref] * n_roles + who[is_ref], minlength=n_ids * n_roles)
        max_ref_count = per_ref.reshape(n_ids, n_roles).max(axis=1)
        counts.append(int(np.minimum(hyp_count, max_ref_count).sum()))  # clipping
    return BLEUStatistics(sys_len, ref_len, counts, totals)


# ---------------------------------------------------------------------------------------------
# The public entry points
# ---------------------------------------------------------------------------------------------


def _check_references(references, n_hyp: int) -> list[list[str]]:
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise TypeError(
            "references must be a list with one entry per hypothesis (a str or a list of str), "
            f"got {type(references).__name__}"
        )
    if len(references) != n_hyp:
        raise ValueError(
            f"hypotheses and references must have the same length: got {n_hyp} hypotheses "
            f"and {len(references)} reference entries (references[i] belongs to hypotheses[i])"
        )
    out = []
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            out.append([refs])
            continue
        if not isinstance(refs, (list, tuple)):
            raise TypeError(
                f"references[{i}] must be a str or a list of str, got {type(refs).__name__}"
            )
        if len(refs) == 0:
            raise ValueError(f"references[{i}] is an empty list; give at least one reference")
        for k, r in enumerate(refs):
            if not isinstance(r, str):
                raise TypeError(f"references[{i}][{k}] must be a str, got {type(r).__name__}")
        out.append(list(refs))
    return out


def corpus_bleu(
    hypotheses: Sequence[str],
    references: Sequence[str | Sequence[str]],
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    lowercase: bool = False,
    tokenize: str = "13a",
    use_effective_order: bool = False,
    max_ngram_order: int = 4,
) -> BLEUScore:
    """Corpus BLEU, identical to ``sacrebleu.corpus_bleu`` (2.6) with the same options.

    Args:
        hypotheses: ``S`` system outputs (untokenized strings).
        references: ``S`` entries; ``references[i]`` is one reference string or a list of
            reference strings for ``hypotheses[i]`` (the count may vary). For sacrebleu, turn
            them into streams: ``refs[k][i]`` = k-th reference of sentence i, ``None`` if absent.
        smooth_method: ``"exp"`` (default), ``"floor"``, ``"add-k"`` or ``"none"``
            (see :func:`compute_bleu`); smooth_value: the value for floor / add-k.
        lowercase: lowercase before tokenizing. tokenize: ``"13a"`` (default) or ``"none"``.
        use_effective_order: see :func:`compute_bleu` (off for corpora).
        max_ngram_order: N (4).

    Returns:
        :class:`BLEUScore` (score 0–100, counts, totals, precisions, bp, sys_len, ref_len).
    """
    if isinstance(hypotheses, str) or not isinstance(hypotheses, Sequence):
        raise TypeError(
            f"hypotheses must be a list of str, got {type(hypotheses).__name__} "
            "(for one sentence use sentence_bleu)"
        )
    if len(hypotheses) == 0:
        raise ValueError("hypotheses is empty; BLEU needs at least one sentence")
    for i, h in enumerate(hypotheses):
        if not isinstance(h, str):
            raise TypeError(f"hypotheses[{i}] must be a str, got {type(h).__name__}")
    refs = _check_references(references, len(hypotheses))
    tokenizer = _check_tokenizer(tokenize)
    _check_smoothing(smooth_method, smooth_value)
    check_positive_int(max_ngram_order, "max_ngram_order")

    def prepare(line: str) -> list[str]:  # sacrebleu: lowercase, then rstrip, then tokenize
        return tokenizer((line.lower() if lowercase else line).rstrip())

    stats = bleu_statistics(
        [prepare(h) for h in hypotheses],
        [[prepare(r) for r in rs] for rs in refs],
        max_ngram_order,
    )
    nrefs = {len(rs) for rs in refs}
    signature = _signature(
        nrefs.pop() if len(nrefs) == 1 else "var",
        lowercase,
        use_effective_order,
        tokenize,
        smooth_method,
        smooth_value,
        max_ngram_order,
    )
    return compute_bleu(
        stats.counts,
        stats.totals,
        stats.sys_len,
        stats.ref_len,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=use_effective_order,
        max_ngram_order=max_ngram_order,
        signature=signature,
    )


def sentence_bleu(
    hypothesis: str,
    references: str | Sequence[str],
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    lowercase: bool = False,
    tokenize: str = "13a",
    use_effective_order: bool = True,
    max_ngram_order: int = 4,
) -> BLEUScore:
    """BLEU of one sentence, identical to ``sacrebleu.sentence_bleu`` (2.6).

    A corpus of one sentence, but with ``use_effective_order=True`` by default, because a
    short sentence often has no matching 4-gram. Sentence BLEU is noisy; report corpus BLEU.

    Args:
        hypothesis: one output string. references: a reference string or a list of them.
        The other arguments as in :func:`corpus_bleu`.
    """
    if not isinstance(hypothesis, str):
        raise TypeError(
            f"hypothesis must be a str, got {type(hypothesis).__name__} "
            "(for a list of sentences use corpus_bleu)"
        )
    if not isinstance(references, (str, list, tuple)):
        raise TypeError(
            f"references must be a str or a list of str, got {type(references).__name__}"
        )
    return corpus_bleu(
        [hypothesis],
        [references],
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        lowercase=lowercase,
        tokenize=tokenize,
        use_effective_order=use_effective_order,
        max_ngram_order=max_ngram_order,
    )
