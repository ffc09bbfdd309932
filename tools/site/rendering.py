"""What the site's pages, the decks and the quiz pages are all made of (one module, imported by
:mod:`.pages`, :mod:`.deck` and :mod:`.quiz`, importing none of them):

* the templates (``templates/``), KaTeX's ``<head>`` lines, a notebook's title;
* the notebooks as shown: :func:`executed` (run once if their committed outputs are partial),
  figures given alt texts (:func:`label_figures`), a fresh output folder with KaTeX;
* Markdown to HTML with the TeX kept for KaTeX (:func:`markdown_html`), highlighted code
  (:func:`code_html`), and the pieces of a slide (:class:`Part`, :class:`Slide`) with their
  estimated height (:func:`text_lines`).
"""

from __future__ import annotations

import copy
import html
import re
import shutil
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from tools.notebooks.nbbuild import run_notebook

from .links import ROOT
from .vendor import KATEX, vendor

__all__ = [
    "MARKDOWN",
    "MATH",
    "Part",
    "Slide",
    "code_html",
    "executed",
    "figure_alt",
    "fresh_output",
    "katex_head",
    "label_figures",
    "markdown_html",
    "template",
    "text_lines",
    "title_of",
]

TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def template(name: str) -> str:
    """The text of ``templates/NAME``."""
    return (TEMPLATES / name).read_text(encoding="utf-8")


def katex_head(static: str) -> str:
    """The ``<head>`` lines that load KaTeX from ``static`` and typeset the page."""
    return template("katex_head.html").replace("{{static}}", static)


def title_of(nb: nbformat.NotebookNode, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return fallback


# A figure's title in the code that draws it: title="...", set_title("..."), suptitle("...").
_FIGURE_TITLE = re.compile(r"""(?:\btitle\s*=\s*|set_title\(\s*|suptitle\(\s*)f?(["'])(.+?)\1""")


def _plain(markdown: str) -> str:
    """Markdown reduced to plain text for an alt attribute (TeX kept, markup dropped)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)  # [text](link) -> text
    text = re.sub(r"^\s*(#+|>|[-*]|\d+\.)\s+", "", text, flags=re.M)
    text = re.sub(r"[*`$]", "", text)  # emphasis, code and TeX delimiters
    return " ".join(text.split())


def figure_alt(source: str, before: str) -> str:
    """An alt text for the figures a code cell draws: the titles its code gives them, else the
    first sentence of the last paragraph of the Markdown cell ``before`` it."""
    titles = [re.sub(r"\{[^}]*\}", "…", m.group(2)) for m in _FIGURE_TITLE.finditer(source)]
    paragraphs = [p for p in re.split(r"\n\s*\n", before) if p.strip()]
    sentence = _plain(paragraphs[-1]) if paragraphs else ""
    sentence = re.split(r"(?<=[.!?:])\s", sentence, maxsplit=1)[0].rstrip(":")
    text = "; ".join(dict.fromkeys(titles))
    if not text or ("…" in text and sentence):  # a title filled in by the code says too little
        text = f"{sentence} ({text})" if text else sentence
    return f"Figure: {text[:240]}" if text else "Figure drawn by the code cell above"


def label_figures(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Give every PNG output of ``nb`` an alt text (output metadata ``image/png.alt``), which
    the site's template and the decks write into ``<img alt=...>``; returns ``nb``."""
    before = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            before = cell.source
            continue
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                meta = out.setdefault("metadata", {})
                meta.setdefault("image/png", {})["alt"] = figure_alt(cell.source, before)
    return nb


def needs_execution(nb: nbformat.NotebookNode) -> bool:
    """True if the committed notebook leaves out outputs on purpose (``strip-output`` cells)."""
    return any("strip-output" in c.metadata.get("tags", []) for c in nb.cells)


_EXECUTED: dict[tuple[Path, int], nbformat.NotebookNode] = {}  # (path, mtime) -> executed copy


def executed(source: Path, log=print) -> nbformat.NotebookNode:
    """``source`` as committed, or run top to bottom if its outputs are partial (once a process)."""
    nb = nbformat.read(source, as_version=4)
    if not needs_execution(nb):
        return nb
    key = (source, source.stat().st_mtime_ns)
    if key not in _EXECUTED:
        log(f"executing {source.relative_to(ROOT)} (its committed outputs are partial)")
        run_notebook(nb, source.parent)
        _EXECUTED[key] = nb
    return copy.deepcopy(_EXECUTED[key])


def fresh_output(out: Path) -> Path:
    """Empty ``out``, create ``out/_static`` with KaTeX (site and decks both render maths)."""
    if out.exists():
        shutil.rmtree(out)
    static_dir = out / "_static"
    static_dir.mkdir(parents=True)
    vendor(KATEX, static_dir)
    return static_dir


MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable("table")
# Inline $...$ may wrap onto the next line (not across a blank line, a list item or a quote).
MATH = re.compile(
    r"\$\$.+?\$\$|\$(?:[^$\n]|\n(?![ \t]*(?:\n|>|[-*] |\d+\. )))+?\$|\\\(.+?\\\)|\\\[.+?\\\]",
    re.S,
)


def markdown_html(text: str, inline: bool = False, md: MarkdownIt = MARKDOWN) -> str:
    """Markdown to HTML with the TeX kept verbatim for KaTeX (``_`` in a formula is no emphasis)."""
    stash: list[str] = []

    def keep(m: re.Match) -> str:
        stash.append(m.group(0))
        return f"MATHPLACEHOLDER{len(stash) - 1}X"

    protected = MATH.sub(keep, text)
    rendered = md.renderInline(protected) if inline else md.render(protected)
    return re.sub(r"MATHPLACEHOLDER(\d+)X", lambda m: html.escape(stash[int(m.group(1))]), rendered)


def text_lines(text: str, width: int = 70) -> float:
    """Rough height of ``text`` in lines of ``width`` characters."""
    return sum(max(1, -(-len(line) // width)) for line in text.splitlines() or [""])


@dataclass
class Part:
    html: str
    weight: float  # estimated height, in lines of code


@dataclass
class Slide:
    title: str  # the section's heading (HTML), repeated on continuation slides
    level: int  # 1: title slide, 2: section, 3: sub-section
    parts: list[Part] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    new_stack: bool = False  # opens a new column (a ## section) in reveal.js

    @property
    def weight(self) -> float:
        return sum(p.weight for p in self.parts)


def code_html(source: str) -> str:
    code = highlight(source, PythonLexer(), HtmlFormatter(nowrap=True))
    return f'<pre class="deck-code"><code>{code}</code></pre>'
