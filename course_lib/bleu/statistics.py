"""BLEU's sufficient statistics of a whole corpus, gathered once and vectorised with numpy (no
Python loop per n-gram). Same numbers as adding up :mod:`.counting` sentence by sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, count
from typing import NamedTuple

import numpy as np

from .._validation import check_positive_int
from .counting import closest_ref_length

__all__ = ["BLEUStatistics", "bleu_statistics"]


def _check_token_list(line, name: str) -> None:
    if not isinstance(line, (list, tuple)):
        hint = " (a str would be counted character by character: tokenize it first)"
        raise TypeError(
            f"{name} must be a list of str tokens, got {type(line).__name__}"
            + (hint if isinstance(line, str) else "")
        )


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
    for name, value in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise TypeError(
                f"{name} must be a list (one entry per sentence), got {type(value).__name__}"
            )
    if len(hypotheses) == 0:
        raise ValueError("hypotheses is empty; BLEU needs at least one sentence")
    if len(hypotheses) != len(references):
        raise ValueError(
            f"hypotheses and references must have the same length: got {len(hypotheses)} "
            f"hypotheses and {len(references)} reference entries"
        )
    # One row per line: hypotheses first (role 0), then each reference (role 1 + its index).
    lines, segment, role = list(hypotheses), list(range(len(hypotheses))), [0] * len(hypotheses)
    ref_len = 0
    for i, (hyp, refs) in enumerate(zip(hypotheses, references, strict=True)):
        _check_token_list(hyp, f"hypotheses[{i}]")
        if isinstance(refs, str) or not isinstance(refs, Sequence) or len(refs) == 0:
            raise ValueError(
                f"references[{i}] must be a non-empty list of token lists (the references of "
                f"hypotheses[{i}]), got {refs!r:.60}"
            )
        for k, ref in enumerate(refs):
            _check_token_list(ref, f"references[{i}][{k}]")
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
    if any(not isinstance(t, str) for t in vocab):
        bad = next(t for t in vocab if not isinstance(t, str))
        raise TypeError(f"tokens must be str, got {type(bad).__name__} {bad!r:.40}")
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
