"""How a lecture is cut into slides, and the alt texts of its figures (no browser needed).

tests/test_site.py then shows every slide in Chromium at 1280 x 720 and fails on any that
overflows at the 22 px text floor; these tests check the cut that makes that possible.
"""

import base64
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import io

import matplotlib.pyplot as plt
import nbformat
import pytest

from tools.site.deck import LIMIT, deck_slides
from tools.site.pages import site_exporter
from tools.site.rendering import figure_alt, label_figures

ROOT = Path(__file__).resolve().parents[1]
LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _text(slide) -> str:
    return re.sub(r"<[^>]+>", "", "".join(p.html for p in slide.parts))


def test_a_long_summary_continues_on_the_next_slide_at_bullet_boundaries():
    bullets = [f"- point {i}: " + "words " * 30 for i in range(20)]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Summary\n" + "\n".join(bullets))]
    slides = deck_slides(nb)
    assert len(slides) >= 3 and all(s.weight <= LIMIT for s in slides)
    assert slides[1].title == "Summary (continued)"
    shown = "".join(_text(s) for s in slides)
    assert [int(n) for n in re.findall(r"point (\d+):", shown)] == list(range(20))  # once, in order


def test_an_ordered_list_keeps_its_numbers_across_slides():
    items = [f"{i}. step " + "words " * 40 for i in range(1, 13)]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Steps\n" + "\n".join(items))]
    html = "".join(p.html for s in deck_slides(nb) for p in s.parts)
    assert html.count("<ol") == 12 and '<ol start="12">' in html


def test_a_notes_box_is_cut_at_its_paragraphs_and_items_and_stays_a_box():
    box = "\n".join(
        ["> **⚠️ In the notes:** " + "the notes say this " * 12]
        + [f"> - *item {i}*: " + "and this is why " * 12 for i in range(8)]
        + [">", "> *All the notes' claims, checked:* [lecture 99](99_lecture_notes_checked.ipynb)."]
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## A section\n\n" + box)]
    slides = deck_slides(nb)
    assert len(slides) >= 2 and all(s.weight <= LIMIT for s in slides)
    parts = [p.html for s in slides for p in s.parts]
    assert all(p.lstrip().startswith("<blockquote>") for p in parts)
    assert len(parts) == 10  # the opening paragraph, 8 items, the link


def test_a_long_text_output_continues_instead_of_overflowing():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(table)")
    text = "".join(f"row {i} " + "x" * 180 + "\n" for i in range(14))  # each wraps twice
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    nb.cells = [cell]
    slides = deck_slides(nb)
    assert len(slides) >= 2 and all(s.weight <= LIMIT for s in slides)
    assert "row 13" in _text(slides[-1])


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_every_slide_of_a_lecture_fits_the_budget_unless_it_is_one_block(path):
    """A slide over the budget is a single block the cutter cannot split further (the browser
    test checks that it still fits at 22 px)."""
    slides = deck_slides(nbformat.read(path, as_version=4))
    over = [(s.title, round(s.weight, 1)) for s in slides if s.weight > LIMIT and len(s.parts) > 1]
    assert not over, over


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_every_figure_of_a_deck_has_a_specific_alt_text(path):
    html = "".join(p.html for s in deck_slides(nbformat.read(path, as_version=4)) for p in s.parts)
    alts = re.findall(r'<img class="deck-img"[^>]* alt="([^"]*)"', html)
    assert len(alts) == html.count("<img ")
    assert all(a.startswith("Figure: ") and len(a) > 15 for a in alts), alts


def test_figure_alt_takes_the_title_from_the_code_or_the_sentence_before_it():
    before = "## 3. A plot\n\nSome words.\n\nThe curve of $x^2$ rises **fast**: see below."
    assert figure_alt('ax.set_title("loss against steps")', before) == "Figure: loss against steps"
    assert figure_alt("plot_attention(w, t, title='a'); fig.suptitle('b')", "") == "Figure: a; b"
    assert figure_alt("plt.plot(x, x**2)", before) == "Figure: The curve of x^2 rises fast"
    assert figure_alt('ax.set_title(f"head {h}")', before) == (
        "Figure: The curve of x^2 rises fast (head …)"
    )


def test_the_site_writes_the_alt_text_into_the_notebook_page():
    fig, ax = plt.subplots(figsize=(1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('ax.set_title("weights by layer")')
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"image/png": base64.b64encode(buf.getvalue()).decode()}
        )
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), cell]
    resources = {"site": {"static": "", "katex_head": "", "nav_top": "", "nav_bottom": ""}}
    body, _ = site_exporter().from_notebook_node(label_figures(nb), resources=resources)
    (img,) = re.findall(r"<img [^>]*>", body)
    assert 'alt="Figure: weights by layer"' in img and "data:image/png;base64," in img
