"""Every number a quiz item quotes is tied to its lecture's stored outputs (issue 39).

Quiz 12.3 kept the key 0.378 after lecture 12 was re-run and printed 0.345; 13.7 described a
section 7 that no longer existed; 11.8 quoted 1.1x and 5.1x where the lecture printed 1.9x and
4.1x. Nothing failed. Here every decimal number, number with thousands separators or ratio
("3.9x", "12 %") in an item's question, code, choices, explanations and mistakes, and every
decimal numeric key, must be printed in the lecture's stored outputs (``notebooks/NN_*.ipynb``,
as the repository stores them executed), as printed or rounded to the digits the item quotes,
unless the item computes it itself: those numbers are listed in ``DERIVED`` with the reason.
Re-running a lecture with new numbers then fails this test until the quiz says the same.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from course_lib.quiz import load_quizzes

ROOT = Path(__file__).resolve().parents[1]
QUIZZES = load_quizzes()

# A quoted number: 0.345, 1.13e-07, 1,050,624, 95.6 %, 3.9x (plain integers, and integer
# percentages such as BERT's 15 %, are too often section numbers, sizes or rates the question
# gives, or counts the item defines itself).
QUOTED = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+\.\d+(?:e[-+]\d+)?|\d+(?=x|×))(?![\d,]*\d)")
PRINTED = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")

# Numbers an item computes or states itself (its own arithmetic, a question's data, a wrong
# choice's invented value), not read from the lecture's outputs: item -> (numbers, why).
DERIVED = {
    "01.1": ("1.2026 1.226 1.3654", "the notes' mistyped e^14, worked in a mistake"),
    "01.3": ("0.5 1000.0 998.0", "the question's scores; 0.5 is a wrong choice's guess"),
    "01.5": ("100,000 262,144 3.9 4.4", "512 x 512 scores; 88.7 / 22.6; the normal tail"),
    "02.3": ("0.155 0.707 2.028", "the wrong choices' arithmetic"),
    "02.4": ("0.667 1.333", "a wrong choice's arithmetic"),
    "03.3": ("1.73 3.46", "sqrt(3) and 2 sqrt(3), the wrong scalings"),
    "03.6": ("2,048", "4 x 512, a wrong count"),
    "03.7": ("1,024", "2d, worked in the explanation"),
    "03.8": ("0.101 0.126 0.146 0.25", "the wrong outputs' values"),
    "04.1": ("0.0001", "sin(1/10000), a wrong choice"),
    "04.7": ("6.3", "2 pi"),
    "05.7": ("0.000 0.5 0.502 1.000 100,000", "the outputs of the item's own code"),
    "05.8": ("1,050,624 2,048 2,099,712 3,152,384 40,000", "the parameter count worked out"),
    "06.3": ("0.667 0.819", "the question's precisions and brevity penalty"),
    "06.4": ("6.5", "a wrong choice: the mean of the reference lengths"),
    "06.8": ("0.07 28.4", "the notes' scale confusion; the Transformer paper's En-De BLEU"),
    "07.4": ("572.8", "240e9 / 419e6"),
    "07.5": ("20.1 27.0 28.4 38.0 41.8 45.0", "wrong tables (WMT numbers, a swapped column)"),
    "08.5": ("0.85", "a wrong choice: 1 - 0.15"),
    "08.6": ("23.8", "the embeddings' 23,837,184 parameters in millions"),
    "08.8": ("0.525728702545166 0.53", "the notes' number, quoted and rounded"),
    "09.7": ("0.000", "the item's own code"),
    "10.1": ("67,108,864", "4096 x 4096 x 4 bytes"),
    "10.5": ("0.0067", "e^-5"),
    "11.1": ("0.002", "1/512"),
    "11.4": ("0.6931 1.44 5.12", "ln 2, 1 / ln 2, 3.548 / ln 2"),
    "13.5": ("170.67 32,832 1.5", "2/3 x 256; 3 x 64 x 171; three matrices over two"),
    "14.5": ("0.9", "lecture 11's 875,264 parameters in millions"),
    "15.1": ("131,072", "2 x 32 x 8 x 128 x 2 bytes, worked in the explanation"),
    "15.4": ("0.992 42.33", "127 / 3.0 and 42 x 3 / 127, the item's own arithmetic"),
    "16.1": ("0.25 0.75", "0.1 / 0.4 and 0.3 / 0.4, the question's probabilities renormalised"),
    "16.2": ("2.5", "the tiny DeepSeek-V3 config's routed scaling factor, a choice's value"),
    "16.3": ("0.125 0.25", "1/E and k/E for the question's E = 8, k = 2"),
    "17.3": ("0.5774", "the std of the question's rewards (1, 0, 0, 1), with Bessel's correction"),
    "17.5": ("1.2 1.649 2.4 2.40 3.30", "e^0.5, 1 + epsilon and the products with A = 2"),
    "17.6": ("1.2", "1 + epsilon for the question's epsilon = 0.2"),
    "17.7": ("0.307 0.693", "the wrong answers' arithmetic (k1; the arguments swapped)"),
    "17.8": ("0.214 0.786", "C(6, 4) / C(8, 4) and its complement"),
    "17.10": ("0.04", "TRL's documented beta in a wrong choice"),
    "18.1": ("18.4", "a reference to exercise 18.4, not a number"),
    "18.3": ("0.125 2.079", "ln 0.5 + ln 0.25, the question's probabilities"),
    "18.4": ("2,048 3,000", "the question's window and length"),
    "18.5": ("0.79", "-15 / 19, the question's numbers"),
    "18.6": ("0.078 0.711 0.789 0.8 0.867 1.96", "the Wilson interval of 80 / 100, worked"),
    "18.7": ("0.32", "the question's interval"),
}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


@cache
def printed(lecture: str) -> tuple[str, ...]:
    """Every number the lecture's stored outputs show, as printed."""
    nb = json.loads((ROOT / "notebooks" / f"{lecture}.ipynb").read_text(encoding="utf-8"))
    texts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            texts.append("".join(out.get("text", "")))
            for kind in ("text/plain", "text/markdown", "text/html"):
                texts.append("".join(out.get("data", {}).get(kind, "")))
    return tuple(PRINTED.findall("\n".join(texts)))


def shown(quoted: str, numbers: tuple[str, ...]) -> bool:
    """Is ``quoted`` among ``numbers``, as printed or rounded to the digits it quotes?"""
    value, digits = _number(quoted), _decimals(quoted)
    for p in numbers:
        try:
            v = float(p.replace(",", ""))
        except ValueError:
            continue
        if v == value or (_decimals(p) > digits and _rounded(p, digits) == value):
            return True
    return False


def _rounded(printed_number: str, digits: int) -> float:
    """A printed number rounded half up, as a reader rounds it (2.25 -> 2.3)."""
    from decimal import ROUND_HALF_UP, Decimal

    exact = Decimal(printed_number.replace(",", ""))
    return float(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def quoted(item) -> set[str]:
    texts = [item.question, item.explain, item.code]
    texts += [f"{c.text} {c.why}" for c in item.choices] + [m.why for m in item.mistakes]
    found = set(QUOTED.findall(" ".join(texts)))
    if not item.choices and item.answer != int(item.answer):  # a decimal key
        found.add(f"{abs(item.answer):g}")
    return found


def _id(quiz, item) -> str:
    return f"{quiz.number}.{item.number}"


@pytest.mark.parametrize("quiz", QUIZZES, ids=[q.lecture for q in QUIZZES])
def test_every_number_an_item_quotes_is_in_the_lecture_outputs(quiz):
    numbers = printed(quiz.lecture)
    stale = []
    for item in quiz.items:
        derived = set(DERIVED.get(_id(quiz, item), ("", ""))[0].split())
        for q in sorted(quoted(item) - derived):
            if not shown(q, numbers):
                stale.append(f"item {item.number} quotes {q}")
    assert not stale, (
        f"quiz {quiz.lecture}: {stale}; notebooks/{quiz.lecture}.ipynb's stored outputs show no "
        "such number. Update the item to the lecture's output (or, if the item computes the "
        "number itself, list it in DERIVED with the reason)."
    )


def test_every_derived_number_is_still_quoted():
    items = {_id(q, i): i for q in QUIZZES for i in q.items}
    for key, (numbers, why) in DERIVED.items():
        assert key in items and why, key
        assert set(numbers.split()) <= quoted(items[key]), (key, set(numbers.split()))


def test_a_stale_number_is_caught():
    """The audit's three: 12.3's old key, 13.7's one-seed numbers, 11.8's old timings."""
    assert not shown("0.378", printed("12_fine_tuning")) and shown(
        "0.345", printed("12_fine_tuning")
    )
    assert not shown("4.548", printed("13_modern_transformer"))
    assert not shown("5.1", printed("11_gpt")) and shown("14.4", printed("11_gpt"))
    assert shown("0.53", ("0.525728702545166",)) and not shown("0.53", ("0.5",))
    assert not shown("2.3", ("2.4",)) and shown("1,028", ("1028.0",)) and shown("2.3", ("2.25",))
