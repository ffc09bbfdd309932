"""BLEU's tokenizers: mteval-v13a (sacrebleu's default ``13a``) and ``none``, and
:func:`tokenize_for_bleu`, sacrebleu's whole preprocessing of one line (lowercase, rstrip, tokenize).
"""

from __future__ import annotations

import re

from .._validation import check_flag

__all__ = ["TOKENIZERS", "tokenize_13a", "tokenize_for_bleu"]


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


def check_tokenizer(tokenize: str, name: str = "tokenize"):
    """Return the tokenizer function named ``tokenize`` (a key of :data:`TOKENIZERS`), or raise
    naming the argument ``name``."""
    if not isinstance(tokenize, str) or tokenize not in TOKENIZERS:
        raise ValueError(
            f"{name} must be one of {sorted(TOKENIZERS)}, got {tokenize!r} "
            "(this course implements sacrebleu's default '13a' and 'none')"
        )
    return TOKENIZERS[tokenize]


def tokenize_for_bleu(line: str, method: str = "13a", lowercase: bool = False) -> list[str]:
    """Prepare one sentence for BLEU exactly as sacrebleu does: lowercase, rstrip, tokenize.

    Args:
        line: the sentence.
        method: ``"13a"`` (default, see :func:`tokenize_13a`) or ``"none"`` (split on spaces).
        lowercase: lowercase first (sacrebleu's ``lowercase=True``).

    Returns:
        The list of tokens BLEU counts n-grams over.
    """
    tokenizer = check_tokenizer(method, "method")
    if not isinstance(line, str):
        raise TypeError(f"line must be a str, got {type(line).__name__}")
    if check_flag(lowercase, "lowercase"):
        line = line.lower()
    return tokenizer(line.rstrip())
