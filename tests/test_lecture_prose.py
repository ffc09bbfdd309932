"""Lecture prose as a reader meets it: maths that renders everywhere, and a course in sequence.

Inline maths survives JupyterLab's renderer.

JupyterLab takes the maths out of a Markdown cell *before* it parses the Markdown (rendermime's
``removeMath``), so an inline ``$…$`` that runs over a line break inside a blockquote keeps the
next line's ``>`` and typesets it as a "greater than" sign. GitHub and nbconvert parse the
blockquote first and hide the problem. Every inline formula in a blockquote stays on one line.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(
    p for folder in ("notebooks", "solutions", "exercises") for p in (ROOT / folder).glob("*.ipynb")
)
CODE_SPAN = re.compile(r"`[^`]*`")
SINGLE_DOLLAR = re.compile(r"(?<![\\$])\$(?!\$)")  # a $ that is neither escaped nor part of $$


def split_quoted_formulas(markdown: str) -> list[str]:
    """The blockquote lines of ``markdown`` on which an inline ``$…$`` opens but does not close."""
    bad = []
    for line in markdown.splitlines():
        if not line.lstrip().startswith(">"):
            continue
        text = CODE_SPAN.sub("", line)
        if len(SINGLE_DOLLAR.findall(text)) % 2:
            bad.append(line.strip())
    return bad


def test_the_rule_catches_a_formula_split_over_two_quoted_lines():
    split = "> BLEU is $0.8187 \\cdot (1 \\cdot\n>   0.667)^{1/3}$ here."
    assert split_quoted_formulas(split) == [
        "> BLEU is $0.8187 \\cdot (1 \\cdot",
        ">   0.667)^{1/3}$ here.",
    ]
    assert split_quoted_formulas("> $a$ and $b$, `$x` in code, \\$5, $$c$$") == []
    assert split_quoted_formulas("not quoted $a\nb$") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_inline_formula_spans_a_line_break_in_a_blockquote(path):
    cells = json.loads(path.read_text())["cells"]
    bad = {
        i: lines
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown"
        and (lines := split_quoted_formulas("".join(cell["source"])))
    }
    assert not bad, f"{path.name}: keep each $…$ on one line in cells {bad}"


# --- the course reads as one sequence ---------------------------------------------------------

SEQUENCE = [*sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
IN_SEQUENCE = [p for p in SEQUENCE if p.stem[:2] <= "12" or p.stem.startswith("99")]


@pytest.mark.parametrize("path", IN_SEQUENCE, ids=lambda p: p.stem)
def test_a_lecture_ends_with_next_naming_a_later_lecture(path):
    """The summary's last bullet says where the course goes next (lectures 01-12 and the
    ledger; the newest lecture has no successor yet)."""
    last = "".join(json.loads(path.read_text())["cells"][-1]["source"])
    m = re.search(r"^- Next: .*?\blectures? (\d\d)", last, re.M | re.S)
    assert m, f"{path.name}: its last cell has no '- Next: lecture NN ...' line"
    assert int(m.group(1)) > int(path.stem[:2]) or path.stem.startswith("99"), m.group(0)
