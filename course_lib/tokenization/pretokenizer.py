"""Words for BPE: split text into the words BPE merges inside, keeping each word's leading space
as a visible ``▁`` (as SentencePiece does), so the tokens can be joined back into the text.
Lecture 08.
"""

from __future__ import annotations

import re

from .._validation import check_flag, check_str

__all__ = ["SPACE", "pretokenize"]

SPACE = "▁"  # U+2581, marks "a space came before this word" inside BPE tokens
_WORDS = re.compile(r" ?\w+| ?[^\w\s]+")


def pretokenize(text: str, lowercase: bool = False) -> list[str]:
    """Split text into the words BPE works inside, keeping each word's leading space as ``▁``.

    Whitespace runs count as one space and the ends are stripped; then every word is a run of
    letters/digits/underscores or a run of punctuation, with the space before it (if any)
    written ``▁``. ``"".join(words).replace("▁", " ")`` gives the normalised text back.

    >>> pretokenize("The if statement: x.")
    ['The', '▁if', '▁statement', ':', '▁x', '.']
    """
    text = " ".join(check_str(text, "text").split())
    if check_flag(lowercase, "lowercase"):
        text = text.lower()
    return [w.replace(" ", SPACE) for w in _WORDS.findall(text)]
