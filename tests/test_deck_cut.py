"""How a lecture is cut into slides, and the alt texts of its figures (no browser needed).

tests/test_site.py then shows every slide in Chromium at 1280 x 720 and fails on any that
overflows at the 22 px text floor; these tests check the cut that makes that possible.
"""

import ast
import base64
import html
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import io

import matplotlib.pyplot as plt
import nbformat
import pytest

from tools.site.deck import LIMIT, SETUP_TITLE, deck_slides
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


def _code_parts(slide) -> list[str]:
    return [
        html.unescape(re.sub(r"<[^>]+>", "", p.html))
        for p in slide.parts
        if p.html.startswith('<pre class="deck-code">')
    ]


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_the_set_up_never_opens_a_section(path):
    """Imports and set-up cells (the code before a lecture's first section) are folded into one
    "Set-up" slide below the learning goals: no section and no "Learning goals (continued)"
    slide shows them, and every line of them is in the fold."""
    nb = nbformat.read(path, as_version=4)
    slides = deck_slides(nb)
    setup = [i for i, s in enumerate(slides) if s.title == SETUP_TITLE]
    assert len(setup) == 1, f"{path.name}: {len(setup)} set-up slides"
    fold = slides[setup[0]]
    assert fold.level == 3 and not fold.new_stack  # below the goals, not a section of its own
    assert len(fold.parts) == 1 and fold.parts[0].html.startswith('<details class="deck-setup">')
    before = slides[: setup[0]]
    assert not any(_code_parts(s) for s in before), f"{path.name}: code before the set-up"
    goals = [s for s in before if s.title.lower().startswith("learning goals")]
    assert goals, f"{path.name}: no learning goals slide"
    # The first slide after the fold opens the first section (a ## heading), never code.
    assert slides[setup[0] + 1].new_stack and slides[setup[0] + 1].title
    folded = html.unescape(re.sub(r"<[^>]+>", "", fold.parts[0].html))
    first_section = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown"
        and re.search(r"^## (?!Learning goals)", c.source, re.M)
        and i > 0
    )
    for cell in nb.cells[:first_section]:
        if cell.cell_type == "code" and '"google.colab" in sys.modules' not in cell.source:
            for line in cell.source.splitlines():
                assert line.strip() in folded, f"{path.name}: {line!r} is not in the set-up"


def _only_show_source(code: str) -> bool:
    """Is ``code`` one ``show_source(...)`` call and nothing else?"""
    try:
        (statement,) = ast.parse(code).body
    except (SyntaxError, ValueError):
        return False
    call = getattr(statement, "value", None)
    return isinstance(call, ast.Call) and getattr(call.func, "id", "") == "show_source"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_a_show_source_call_and_its_listing_share_a_slide(path):
    nb = nbformat.read(path, as_version=4)
    calls = sum(
        1 for c in nb.cells if c.cell_type == "code" and _only_show_source(c.source) and c.outputs
    )
    seen = 0
    for slide in deck_slides(nb):
        for i, part in enumerate(slide.parts):
            text = html.unescape(re.sub(r"<[^>]+>", "", part.html)).strip()
            if part.html.startswith('<pre class="deck-code">') and _only_show_source(text):
                seen += 1
                listing = slide.parts[i + 1].html if i + 1 < len(slide.parts) else ""
                shown = html.unescape(re.sub(r"<[^>]+>", "", listing)).strip()
                assert shown.startswith("# course_lib/"), (
                    f"{path.name}: {slide.title!r}: {text!r} without its listing on the slide"
                )
    assert seen == calls


def test_a_wide_display_formula_is_cut_at_its_qquad_and_inline_tex_may_wrap():
    nb = nbformat.v4.new_notebook()
    wide = r"$$\ell_t = -\min\big(\rho_t A,\ \text{clip}(\rho_t, 1-\varepsilon, 1+\varepsilon)\, A\big)"
    wide += r" + \beta\, \text{KL}_{k3,t},\qquad \text{KL}_{k3,t} = e^{d_t} - d_t - 1$$"
    inline = "The goal is $J(\\theta) = \\mathbb{E}_{y\\sim\\pi_\\theta}[r] = \\sum_y\n\\pi_\\theta(y)\\, r$."
    nb.cells = [nbformat.v4.new_markdown_cell(f"## 4. A\n\n{inline}\n\n{wide}")]
    (slide,) = deck_slides(nb)
    shown = [p.html for p in slide.parts]
    assert len(shown) == 3
    assert r"\sum_y" + "\n" + r"\pi_\theta(y)\, r$" in shown[0] and "<em>" not in shown[0]
    assert shown[1].count("$$") == 2 and shown[1].rstrip().endswith(r"\text{KL}_{k3,t}$$</p>")
    assert shown[2].startswith(r"<p>$$\text{KL}_{k3,t} = e^{d_t}")
