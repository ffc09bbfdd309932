"""WordPiece as BERT uses it: a basic tokenizer (lower-casing, accent stripping, splitting off
punctuation) then, for each word, the *greedy longest match* against a fixed vocabulary, with
word-internal pieces written ``##piece``; a word that cannot be covered becomes ``[UNK]``.
Lecture 08.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from .._validation import check_flag, check_positive_int, check_str

__all__ = ["basic_tokenize", "wordpiece", "wordpiece_tokenize", "load_vocab"]


def _is_punctuation(ch: str) -> bool:
    # BERT counts all non-alphanumeric ASCII (e.g. "$", "^", "`") as punctuation, plus Unicode P*.
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """BERT's basic tokenizer: clean, (lower-case and strip accents), split off punctuation.

    Control characters are dropped, whitespace splits words, every punctuation character is a
    word of its own, and every CJK ideograph too.

    >>> basic_tokenize("Héllo, world!")
    ['hello', ',', 'world', '!']
    """
    chars = []
    lowercase = check_flag(lowercase, "lowercase")
    for ch in check_str(text, "text"):
        cp = ord(ch)
        if (
            cp == 0
            or cp == 0xFFFD
            or (unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\t\n\r")
        ):
            continue
        if _is_cjk(cp):
            chars.append(f" {ch} ")
        elif ch.isspace() or unicodedata.category(ch) == "Zs":
            chars.append(" ")
        else:
            chars.append(ch)
    words = []
    for word in "".join(chars).split():
        if lowercase:
            word = word.lower()
            word = "".join(
                c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn"
            )
        current = ""
        for ch in word:
            if _is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


def wordpiece(
    word: str, vocab: Mapping[str, int] | set[str], unk_token: str = "[UNK]", max_chars: int = 100
) -> list[str]:
    """Greedy longest-match WordPiece of one word: take the longest prefix in ``vocab``, repeat.

    Pieces after the first are looked up with a ``##`` prefix (they continue a word). If at some
    point no piece matches, the whole word becomes ``unk_token`` (BERT does not keep a partial
    split); words longer than ``max_chars`` characters too.

    >>> wordpiece("unaffable", {"un", "##aff", "##able"})
    ['un', '##aff', '##able']
    """
    check_str(word, "word")
    check_str(unk_token, "unk_token")
    max_chars = check_positive_int(max_chars, "max_chars")
    if not isinstance(vocab, (Mapping, set, frozenset, list, tuple)):
        raise TypeError(
            "vocab must be a set of tokens or a dict token -> id (a str would be searched as a "
            f"substring), got {type(vocab).__name__}"
        )
    if len(word) > max_chars:
        return [unk_token]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return [unk_token]
        pieces.append(piece)
        start = end
    return pieces


def wordpiece_tokenize(
    text: str, vocab: Mapping[str, int] | set[str], lowercase: bool = True, unk_token: str = "[UNK]"
) -> list[str]:
    """BERT's full tokenisation of ``text``: :func:`basic_tokenize`, then :func:`wordpiece` per word."""
    return [p for w in basic_tokenize(text, lowercase) for p in wordpiece(w, vocab, unk_token)]


def load_vocab(path: str | Path) -> dict[str, int]:
    """Read a BERT ``vocab.txt`` (one token a line; the line number is the id)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or a path, got {type(path).__name__}")
    if not Path(path).exists():
        raise FileNotFoundError(f"path {path}: no such file (BERT's vocab.txt, one token a line)")
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ValueError(f"path {path} holds no tokens; a vocab.txt has one token a line")
    return {tok: i for i, tok in enumerate(lines)}
