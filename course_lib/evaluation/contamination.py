"""Contamination: has the model seen the test items while training? Look for long n-grams.

GPT-3's paper counted a test item as "dirty" if one of its 13-grams occurred in the training
data; the Llama 2 and OLMo reports use the same idea with other lengths. Words, lowercased,
punctuation stripped::

    item "The sky is blue because air scatters blue light more than red."
    8-grams of the item  ∩  8-grams of the corpus  ≠ ∅   ->   contaminated

It finds copies, not paraphrases: a clean result is a lower bound on leakage.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .._validation import check_positive_int, check_str, check_token_sequence

__all__ = ["word_ngrams", "contaminated"]

_WORD = re.compile(r"[a-z0-9]+")


def word_ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive words of ``text``, lowercased (words: runs of letters and
    digits; punctuation dropped). Empty if the text has fewer than ``n`` words."""
    words = _WORD.findall(check_str(text, "text").lower())
    n = check_positive_int(n, "n")
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def contaminated(items: Sequence[str], corpus: Iterable[str], n: int = 8) -> list[bool]:
    """For each item, whether one of its word ``n``-grams occurs in one of the corpus's texts."""
    items = check_token_sequence(items, "items")
    n = check_positive_int(n, "n")
    if isinstance(corpus, str):
        raise TypeError("corpus must be a list of texts, got one str; wrap it: [corpus]")
    if not isinstance(corpus, Iterable):
        raise TypeError(f"corpus must be a list of texts, got {type(corpus).__name__}")
    seen: set[tuple[str, ...]] = set()
    for i, text in enumerate(corpus):
        seen |= word_ngrams(check_str(text, f"corpus[{i}]"), n)
    return [bool(word_ngrams(t, n) & seen) for t in items]
