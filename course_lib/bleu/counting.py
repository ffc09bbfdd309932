"""BLEU's building blocks, one sentence at a time with ``Counter`` — what lecture 06 computes by
hand: n-gram counts, clipped counts, modified precision, closest reference length, brevity
penalty and the geometric mean.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from .._validation import as_float_array, check_positive_int

__all__ = [
    "ngram_counts",
    "clipped_counts",
    "modified_precision",
    "closest_ref_length",
    "brevity_penalty",
    "geometric_mean",
]


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


def clipped_counts(
    hypothesis: str | Sequence[str],
    references: str | Sequence[str] | Sequence[Sequence[str]],
    n: int,
) -> Counter:
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
    hyp = _as_tokens(hypothesis, "hypothesis")
    refs = _as_token_lists(references, "references")
    max_ref = Counter()
    for ref in refs:
        max_ref |= ngram_counts(ref, n)
    return ngram_counts(hyp, n) & max_ref


def modified_precision(
    hypothesis: str | Sequence[str],
    references: str | Sequence[str] | Sequence[Sequence[str]],
    n: int,
) -> float:
    """BLEU's modified n-gram precision: clipped matches / number of hypothesis n-grams.

    Returns a fraction in [0, 1] (sacrebleu prints it ×100). A hypothesis with no n-gram of
    order ``n`` (shorter than n tokens) gives 0.0 — the precision is undefined there, which is
    why :func:`compute_bleu` has smoothing and ``effective_order``.
    """
    hypothesis = _as_tokens(hypothesis, "hypothesis")
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
    check_positive_int(hyp_len, "hyp_len", allow_zero=True)
    if not isinstance(ref_lens, Sequence) or isinstance(ref_lens, str) or len(ref_lens) == 0:
        raise ValueError(f"ref_lens must be a non-empty list of lengths, got {ref_lens!r:.40}")
    for k, r in enumerate(ref_lens):
        check_positive_int(r, f"ref_lens[{k}]", allow_zero=True)
    return min(ref_lens, key=lambda r: (abs(r - hyp_len), r))


def brevity_penalty(sys_len: int, ref_len: int) -> float:
    """``1`` if the output is at least as long as the references, else ``exp(1 - r/c)``.

    Args:
        sys_len: ``c``, total hypothesis length (tokens).
        ref_len: ``r``, total of the closest reference lengths (tokens).

    Returns:
        A number in [0, 1]; an empty output (``c = 0 < r``) gets 0.
    """
    check_positive_int(sys_len, "sys_len", allow_zero=True)
    check_positive_int(ref_len, "ref_len", allow_zero=True)
    if sys_len >= ref_len:
        return 1.0
    return math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0


def _numbers(values, name: str) -> list[float]:
    arr = as_float_array(values, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat list of numbers, got shape {arr.shape}")
    return arr.tolist()


def geometric_mean(values: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """``exp(Σ w_n log v_n)`` with uniform weights ``1/len(values)`` by default.

    Any zero value makes the mean 0 (log 0 = -inf): one n-gram order without a match zeroes
    unsmoothed BLEU. Values must be >= 0.
    """
    vals = _numbers(values, "values")
    if weights is not None:
        weights = _numbers(weights, "weights")
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
