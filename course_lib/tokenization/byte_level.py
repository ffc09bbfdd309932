"""GPT-2's byte-level words: split text with GPT-2's pattern and write each word as its UTF-8
*bytes*, each byte shown as one printable character (a space is ``Ġ``). The starting alphabet
is then all 256 bytes, so any text can be encoded and nothing is ever unknown. Lecture 11.
"""

from __future__ import annotations

import functools

from .._optional import require
from .._validation import check_str

regex = require("regex", "GPT-2's byte-level pattern")

__all__ = ["bytes_to_unicode", "pretokenize_bytes"]

# GPT-2's pre-tokenizer: contractions, letters, digits, other symbols (each with the space before
# them), and whitespace runs (a run before a word leaves its last space to the word).
_GPT2_WORDS = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table byte -> printable character: printable bytes stand for themselves, the
    others (space, control bytes, ...) get the characters from U+0100 on (a space is ``Ġ``)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def pretokenize_bytes(text: str) -> list[str]:
    """Split text with GPT-2's pattern and write each word as bytes, one character a byte.

    Nothing is normalised: ``decode`` gives back exactly the same text.

    >>> pretokenize_bytes("The if-statement: x")
    ['The', 'Ġif', '-', 'statement', ':', 'Ġx']
    """
    table = bytes_to_unicode()
    return [
        "".join(table[b] for b in w.encode("utf-8"))
        for w in _GPT2_WORDS.findall(check_str(text, "text"))
    ]
