"""The slides: each lecture cut into one idea per slide, the prose moved to speaker notes.

A lecture notebook is written to be read; a deck is shown. The cut, made when the deck is
built (the notebooks are not changed):

* every ``#``/``##`` heading opens a new slide, every ``###`` heading a slide below it;
* the lecture's set-up (the code cells before its first section: imports, seeds, models
  loaded, and the Markdown between them) never opens a section: it is folded into one
  "Set-up" slide at the end of the learning goals (a ``<details>`` the presenter can open);
* a code cell goes on a slide of its own (below the section's first one if that one already
  holds code), with its outputs; what does not fit with what is already there moves to a
  continuation slide, which repeats the section's title. A short cell starts a new slide
  rather than be parted from the beginning of its output (a ``show_source(...)`` call and its
  listing share a slide);
* a display formula too wide for a slide is shown one ``\\qquad``-separated part per line;
* formulas, lists, tables, ``> ⚠️`` boxes and short paragraphs stay on the slide; long
  paragraphs of prose become the slide's **speaker notes** (key ``s`` in reveal.js);
* long text outputs are cut after :data:`MAX_OUTPUT_LINES` lines, long tables split into
  several slides; interactive widgets and views (which need a kernel or are too large for a
  slide) are replaced by a pointer to the lecture page.

The deck is a 1280 × 720 (16:9) reveal.js page; ``templates/deck.js`` shrinks a slide's text
(never below a readable size) or its images until the slide fits, and the browser test
(tests/test_site.py) fails if any slide still overflows its frame.
"""

from __future__ import annotations

import base64
import copy
import html
import os
import re
from pathlib import Path

import nbformat
from pygments.formatters import HtmlFormatter

from .links import ROOT
from .offline_html import check_offline
from .quiz import load_quizzes, quiz_slides
from .rendering import (
    MARKDOWN,
    MATH,
    Part,
    Slide,
    code_html,
    executed,
    fresh_output,
    katex_head,
    label_figures,
    markdown_html,
    template,
    text_lines,
    title_of,
)
from .vendor import REVEAL, vendor

__all__ = ["build_slides", "deck_slides", "render_deck"]

LIMIT = 22.0  # height budget of one slide, in lines of code (below the title)
NOTE_CHARS = 260  # a paragraph longer than this becomes speaker notes
MAX_OUTPUT_LINES = 16
MAX_CODE_LINES = 22  # a longer code cell is shown on several slides
DISPLAY_CHARS = 90  # a display formula with more TeX than this is split at its \qquad
SETUP_TITLE = "Set-up"
TABLE_ROWS = 5  # rows of a long table per slide


def _blocks(source: str) -> list[tuple[str, str]]:
    """Top-level Markdown blocks as ``(kind, text)``: heading1/2/3, paragraph, list, quote, ..."""
    # Formulas out of the way of the Markdown parser, line for line (``|`` or ``-`` in TeX).
    protected = MATH.sub(lambda m: "\n".join(["MMM"] * (m.group(0).count("\n") + 1)), source)
    lines = source.splitlines()
    blocks = []
    for tok in MARKDOWN.parse(protected):
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            continue
        kind = {
            "heading_open": f"heading{tok.tag[1:]}",
            "paragraph_open": "paragraph",
            "bullet_list_open": "list",
            "ordered_list_open": "list",
            "blockquote_open": "quote",
            "table_open": "table",
        }.get(tok.type, "other")
        blocks.append((kind, "\n".join(lines[tok.map[0] : tok.map[1]])))
    return blocks


def _table_parts(text: str) -> list[Part]:
    """A Markdown table, split into slides of :data:`TABLE_ROWS` rows (header repeated)."""
    rows = [r for r in text.strip().splitlines() if r.strip()]
    head, body = rows[:2], rows[2:]

    def weight(chunk: list[str]) -> float:
        return sum(text_lines(r, 110) for r in chunk) * 1.3

    chunks: list[list[str]] = [[]]
    for row in body:  # at most TABLE_ROWS rows, fewer if long rows would not fit
        if chunks[-1] and (
            len(chunks[-1]) == TABLE_ROWS or weight(head + chunks[-1] + [row]) > LIMIT - 2
        ):
            chunks.append([])
        chunks[-1].append(row)
    return [
        Part(
            f'<div class="deck-table">{markdown_html(chr(10).join(head + c))}</div>',
            weight(head + c),
        )
        for c in chunks
    ]


def _list_items(text: str) -> list[str]:
    """The top-level items of a Markdown list, each as the list it would be on its own.

    An ordered list keeps its numbering: item 3 becomes ``3. ...``, which renders as
    ``<ol start="3">``.
    """
    protected = MATH.sub(lambda m: "\n".join(["MMM"] * (m.group(0).count("\n") + 1)), text)
    lines = text.splitlines()
    items = [
        "\n".join(lines[tok.map[0] : tok.map[1]]).rstrip()
        for tok in MARKDOWN.parse(protected)
        if tok.type == "list_item_open" and tok.level == 1 and tok.map is not None
    ]
    return items or [text]


def _quote_pieces(text: str) -> list[str]:
    """A ``>`` block split at its paragraphs and list items, each still a ``>`` block."""
    inner = "\n".join(re.sub(r"^\s*> ?", "", line) for line in text.splitlines())
    pieces = []
    for kind, block in _blocks(inner):
        pieces += _list_items(block) if kind == "list" else [block]
    return ["\n".join("> " + line for line in piece.splitlines()) for piece in pieces]


def _display_pieces(text: str) -> list[str]:
    """A long ``$$...$$`` formula cut at its top-level ``\\qquad`` (separate equations), one
    ``$$...$$`` each; a short one, or one without ``\\qquad``, stays whole."""
    body = text.strip()[2:-2]
    if len(body) <= DISPLAY_CHARS or not text.strip().endswith("$$") or "$$" in body:
        return [text]
    pieces, depth, start = [], 0, 0
    for m in re.finditer(r"[{}]|\\qquad", body):
        if m.group(0) == "{":
            depth += 1
        elif m.group(0) == "}":
            depth -= 1
        elif depth == 0:
            pieces.append(body[start : m.start()])
            start = m.end()
    pieces.append(body[start:])
    pieces = [p.strip().rstrip(",").strip() for p in pieces]
    return [f"$${p}$$" for p in pieces if p]


def _markdown_parts(kind: str, text: str) -> tuple[list[Part], str | None]:
    """Slide parts for one block, or the notes it becomes.

    Lists and ``>`` boxes are cut at their items and paragraphs, one part each, so that a long
    summary or "⚠️ In the notes" box continues on the next slide instead of being shrunk.
    """
    if kind == "paragraph":
        if text.strip().startswith("$$"):
            return [
                Part(markdown_html(piece), 2.5 * max(1, piece.count("\\\\") + 1))
                for piece in _display_pieces(text)
            ], None
        if len(text) > NOTE_CHARS:
            return [], markdown_html(text)
        return [Part(markdown_html(text), text_lines(text, 60) * 1.4 + 0.4)], None
    if kind == "table":
        return _table_parts(text), None
    if kind == "quote":
        return [
            Part(markdown_html(piece), text_lines(piece, 66) * 1.35 + 0.8)
            for piece in _quote_pieces(text)
        ], None
    if kind == "list":
        return [
            Part(markdown_html(item), text_lines(item, 60) * 1.4 + 0.4)
            for item in _list_items(text)
        ], None
    return [Part(markdown_html(text), text_lines(text, 60) * 1.4 + 0.4)], None


def _code_chunks(source: str, most: int = MAX_CODE_LINES, first: int | None = None) -> list[str]:
    """A long code cell cut into pieces of at most ``most`` lines (the first piece at most
    ``first``), at blank lines if it can."""
    lines = source.splitlines()
    chunks: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        shown = sum(text_lines(x, 95) for x in chunks[-1])  # long lines wrap on the slide
        room = most if len(chunks) > 1 or first is None else first
        if shown + text_lines(line, 95) > room or (
            not line.strip()
            and len(chunks[-1]) > most // 2
            and i + 1 < len(lines)
            and not lines[i + 1].startswith((" ", ")", "]", "}"))
        ):
            chunks.append([])
        if line.strip() or chunks[-1]:
            chunks[-1].append(line)
    return ["\n".join(c).rstrip() for c in chunks if any(x.strip() for x in c)]


def _text_output(text: str) -> list[Part]:
    """A text output, cut after :data:`MAX_OUTPUT_LINES` lines; if its lines are so long that
    they wrap past one slide's budget, it continues on the next slide (one part per piece)."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) > MAX_OUTPUT_LINES:
        more = len(lines) - MAX_OUTPUT_LINES
        lines = lines[:MAX_OUTPUT_LINES] + [f"… ({more} more lines in the lecture)"]
    pieces: list[list[str]] = [[]]
    for line in lines:
        if pieces[-1] and (
            sum(text_lines(x, 95) for x in pieces[-1]) + text_lines(line, 95)
        ) * 0.95 > (LIMIT - 3):
            pieces.append([])
        pieces[-1].append(line)
    return [
        Part(
            f'<pre class="deck-out">{html.escape(chunk)}</pre>', text_lines(chunk, 95) * 0.95 + 0.5
        )
        for chunk in ("\n".join(piece) for piece in pieces)
    ]


_POINTER = "interactive: open the lecture in JupyterLab or on the course site"


def _output_parts(outputs: list, listing_room: float = LIMIT) -> list[Part]:
    """The slide parts of a cell's outputs; a listing (``show_source``) starts with a piece
    that fits in ``listing_room`` (the slide's budget left under the call)."""
    parts: list[Part] = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            if out.get("name") == "stdout" and out.get("text", "").strip():
                parts += _text_output(out["text"])
        elif kind == "error":
            parts += _text_output(f"{out['ename']}: {out['evalue']}")
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            if "image/png" in data:
                png = data["image/png"].replace("\n", "")
                height = out.get("metadata", {}).get("image/png", {}).get("height")
                raw = base64.b64decode(png[:64] + "=" * (-len(png[:64]) % 4))
                if height is None and raw[:8] == b"\x89PNG\r\n\x1a\n":
                    height = int.from_bytes(raw[20:24], "big")
                weight = min(height or 400, 460) / 22
                alt = html.escape(out["metadata"]["image/png"]["alt"])  # label_figures
                img = f'<img class="deck-img" src="data:image/png;base64,{png}" alt="{alt}">'
                parts.append(Part(f'<div class="deck-figure">{img}</div>', weight))
            elif "application/vnd.jupyter.widget-view+json" in data or (
                "<iframe" in data.get("text/html", "")
            ):
                parts.append(Part(f'<p class="deck-pointer">({_POINTER})</p>', 1.2))
            elif "text/markdown" in data:
                text = data["text/markdown"]
                if text.lstrip().startswith("|"):
                    parts += _table_parts(text)
                elif text.lstrip().startswith("```"):  # a show_source listing
                    code = re.sub(r"^```\w*\n|\n```\s*$", "", text.strip())
                    parts += [
                        Part(code_html(chunk), text_lines(chunk, 95) * 0.95 + 0.6)
                        for chunk in _code_chunks(code, first=int((listing_room - 0.6) / 0.95))
                    ]
                else:
                    parts.append(Part(markdown_html(text), text_lines(text, 60) * 1.4))
            elif "text/html" in data:
                parts.append(Part(f'<div class="deck-html">{data["text/html"]}</div>', 10))
            elif "text/plain" in data:
                parts += _text_output(data["text/plain"])
    return parts


def _is_colab_cell(cell) -> bool:
    return cell.cell_type == "code" and '"google.colab" in sys.modules' in cell.source


def _is_learning_goals(title_html: str) -> bool:
    return re.sub(r"<[^>]+>", "", title_html).strip().lower().startswith("learning goals")


def _setup_part(pieces: list[str], lines: int) -> Part:
    """The lecture's set-up folded into one ``<details>``: ``pieces`` are the HTML of its code
    cells, their outputs and the Markdown between them, in the lecture's order."""
    summary = (
        f"The lecture's set-up: imports, seeds, what it loads "
        f"({lines} line{'s' if lines != 1 else ''} of code)"
    )
    return Part(
        f'<details class="deck-setup"><summary>{summary}</summary>'
        f'<div class="deck-setup-body">{"".join(pieces)}</div></details>',
        1.6,
    )


def deck_slides(nb: nbformat.NotebookNode) -> list[Slide]:
    """The lecture cut into slides (see the module docstring)."""
    slides: list[Slide] = []
    nb = label_figures(copy.deepcopy(nb))  # every figure gets an alt text
    preamble: bool | None = None  # True from the title (or goals) to the first section
    setup: list[str] = []  # the set-up's pieces (HTML), folded into one slide
    setup_lines = 0

    def current() -> Slide:
        if not slides:
            slides.append(Slide("", 2, new_stack=True))
        return slides[-1]

    def continuation() -> Slide:
        last = current()
        title = last.title.replace(" (continued)", "")
        slides.append(Slide(title + (" (continued)" if title else ""), 3))
        return slides[-1]

    def add(part: Part, own_slide: bool = False) -> None:
        slide = current()
        crowded = slide.weight + part.weight > LIMIT
        if slide.parts and (crowded or own_slide):
            slide = continuation()
        slide.parts.append(part)

    def end_preamble() -> None:
        nonlocal preamble
        preamble = False
        if setup:  # (a notebook without a title has no set-up: its code stays on slides)
            slides.append(Slide(SETUP_TITLE, 3, [_setup_part(setup, setup_lines)]))

    for cell in nb.cells:
        if _is_colab_cell(cell) or cell.metadata.get("slideshow", {}).get("slide_type") == "skip":
            continue
        if cell.cell_type == "markdown":
            for kind, text in _blocks(cell.source):
                if kind.startswith("heading"):
                    level = int(kind[-1])
                    title = markdown_html(re.sub(r"^#+\s*", "", text), inline=True).strip()
                    if preamble is None and (level == 1 or _is_learning_goals(title)):
                        preamble = True
                    elif preamble and level >= 2 and not _is_learning_goals(title):
                        end_preamble()
                    slides.append(Slide(title, min(max(level, 1), 3), new_stack=level <= 2))
                    continue
                if preamble and setup:  # prose between set-up cells explains them
                    setup.append(markdown_html(text))
                    continue
                parts, notes = _markdown_parts(kind, text)
                if notes is not None:
                    current().notes.append(notes)
                for part in parts:
                    add(part, own_slide=kind == "table" and len(parts) > 1)
        elif cell.cell_type == "code" and preamble:
            setup_lines += len(cell.source.strip().splitlines())
            setup.append(code_html(cell.source.strip()))
            setup += [p.html for p in _output_parts(cell.get("outputs", []))]
        elif cell.cell_type == "code":
            has_code = any('class="deck-code"' in p.html for p in current().parts)
            chunks = _code_chunks(cell.source)
            call = text_lines(chunks[0], 95) * 0.95 + 0.6 if len(chunks) == 1 else 0
            outputs = _output_parts(cell.get("outputs", []), listing_room=LIMIT - call)
            for i, chunk in enumerate(chunks):
                code = Part(code_html(chunk), text_lines(chunk, 95) * 0.95 + 0.6)
                # A short cell (a show_source call) starts a slide that has room for the
                # beginning of its output rather than be parted from it.
                parted = (
                    len(chunks) == 1
                    and outputs
                    and current().weight + code.weight + outputs[0].weight > LIMIT
                    and code.weight + outputs[0].weight <= LIMIT
                )
                add(code, own_slide=has_code or i > 0 or bool(parted))
            for part in outputs:
                add(part, own_slide='class="deck-table"' in part.html)
    if preamble:
        end_preamble()
    return [s for s in slides if s.parts or s.title]


def render_deck(slides: list[Slide], title: str, static: str, home: str) -> str:
    """The reveal.js page: ``##`` sections side by side, the rest below them."""
    stacks: list[list[Slide]] = []
    for slide in slides:
        if slide.new_stack or not stacks:
            stacks.append([])
        stacks[-1].append(slide)
    sections = []
    for stack in stacks:
        inner = []
        for slide in stack:
            tag = "h1" if slide.level == 1 else "h2" if slide.level == 2 else "h3"
            heading = f"<{tag}>{slide.title}</{tag}>" if slide.title else ""
            notes = f'<aside class="notes">{"".join(slide.notes)}</aside>' if slide.notes else ""
            body = "".join(p.html for p in slide.parts)
            inner.append(f'<section class="deck-slide">{heading}{body}{notes}</section>')
        sections.append(inner[0] if len(inner) == 1 else f"<section>{''.join(inner)}</section>")
    return (
        template("deck.html")
        .replace("{{title}}", html.escape(title))
        .replace("{{static}}", static)
        .replace("{{home}}", home)
        .replace("{{katex}}", katex_head(static))
        .replace("{{slides}}", "\n".join(sections))
    )


def build_slides(
    out: Path, static_dir: Path | None = None, *, solutions: bool = True, log=print
) -> list[Path]:
    """One deck per lecture (``notebooks/NN_*.ipynb``) in ``out``, and a styled index.

    ``static_dir``: the site's ``_static`` folder when the decks are part of the site (KaTeX
    is already there); None builds a standalone folder with its own ``_static``. Each deck
    ends with the lecture's quiz; ``solutions=False`` leaves its answers out of the notes.
    """
    quizzes = {q.lecture: q for q in load_quizzes()}
    out = Path(out)
    if static_dir is None:
        static_dir = fresh_output(out)
    out.mkdir(parents=True, exist_ok=True)
    vendor(REVEAL, static_dir)
    (static_dir / "deck.css").write_text(
        template("deck.css")
        + HtmlFormatter().get_style_defs(".deck-code")
        + template("contrast.css"),
        encoding="utf-8",
    )
    (static_dir / "deck.js").write_text(template("deck.js"), encoding="utf-8")
    static = Path(os.path.relpath(static_dir, out)).as_posix() + "/"
    decks, items = [], []
    for source in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = executed(source, log)
        deck = Path(source.stem + ".html")
        title = title_of(nb, source.stem)
        slides = deck_slides(nb)
        if source.stem in quizzes:
            slides += quiz_slides(quizzes[source.stem], solutions)
        page = render_deck(slides, title, static, "index.html")
        # Links to other lectures go to their decks; anything else stays a plain link.
        page = re.sub(r'href="(\d\d_[\w-]+)\.ipynb', r'href="\1.html', page)
        check_offline(page, str(deck))
        (out / deck).write_text(page, encoding="utf-8")
        decks.append(deck)
        number, _, name = title.partition(" · ")
        items.append(
            f'<li><a href="{deck.as_posix()}"><span class="num">{html.escape(number)}</span>'
            f'<span class="name">{html.escape(name or title)}</span>'
            f'<span class="count">{len(slides)} slides</span></a></li>'
        )
        log(f"wrote slides/{deck}" if static_dir.parent != out else f"wrote {deck}")
    index = (
        template("slides_index.html")
        .replace("{{static}}", static)
        .replace("{{items}}", "\n".join(items))
        .replace("{{katex}}", katex_head(static))
    )
    check_offline(index, "slides index")
    (out / "index.html").write_text(index, encoding="utf-8")
    return decks
