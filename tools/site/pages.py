"""The static site: README, the other Markdown pages and every notebook, with navigation.

Why nbconvert: it is already pinned (JupyterLab needs it), renders each notebook exactly with
its saved outputs in JupyterLab's look, and its templates let us drop every CDN script.
A lecture whose committed notebook leaves out large outputs (cells tagged ``strip-output``)
is executed before it is rendered.
"""

from __future__ import annotations

import copy
import html
import re
import shutil
from functools import cache
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from markdown_it import MarkdownIt
from nbconvert import HTMLExporter

from tools.notebooks.nbbuild import run_notebook

from .links import (
    MARKDOWN_PAGES,
    NOTEBOOK_DIRS,
    ROOT,
    BrokenLinks,
    heading_ids,
    relative,
    rewrite_links,
    site_path,
)
from .offline_html import check_offline, offline_template
from .vendor import KATEX, vendor

__all__ = [
    "BROWSER_LABEL",
    "browser_link",
    "build_site",
    "executed",
    "figure_alt",
    "fresh_output",
    "katex_head",
    "label_figures",
    "notebook_sources",
    "template",
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


def _nav(page: Path, prev_next: tuple[Path | None, Path | None], titles: dict, extra=()) -> str:
    links = [f'<a data-site href="{relative(Path("index.html"), page)}">Course home</a>']
    links += [
        f'<a data-site href="{relative(p, page)}">{html.escape(label)}</a>' for label, p in extra
    ]
    links.append('<span class="spacer"></span>')
    prev, nxt = prev_next
    if prev is not None:
        links.append(
            f'<a data-site href="{relative(prev, page)}" rel="prev">← {html.escape(titles[prev])}</a>'
        )
    if nxt is not None:
        links.append(
            f'<a data-site href="{relative(nxt, page)}" rel="next">{html.escape(titles[nxt])} →</a>'
        )
    return "".join(links)


def render_markdown_page(source: Path, page: Path, static: str, extra_nav: str = "") -> str:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    body = heading_ids(md.render(source.read_text(encoding="utf-8")))
    # A code block wider than the page scrolls (site.css): keyboard users reach it with Tab
    # (axe-core's scrollable-region-focusable).
    body = body.replace("<pre>", '<pre tabindex="0">')
    title = re.search(r"^#\s+(.+)$", source.read_text(encoding="utf-8"), re.M)
    title = title.group(1) if title else source.stem
    home = relative(Path("index.html"), page)
    nav = f'<nav class="course-nav"><a data-site href="{home}">Course home</a>{extra_nav}</nav>'
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<link rel="stylesheet" href="{static}site.css">\n{katex_head(static)}'
        f'</head>\n<body>\n{nav}\n<main class="course-page">\n{body}</main>\n</body>\n</html>\n'
    )


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


def notebook_sources(folders=NOTEBOOK_DIRS) -> list[Path]:
    return [p for d in folders for p in sorted((ROOT / d).glob("[0-9][0-9]_*.ipynb"))]


def fresh_output(out: Path) -> Path:
    """Empty ``out``, create ``out/_static`` with KaTeX (site and decks both render maths)."""
    if out.exists():
        shutil.rmtree(out)
    static_dir = out / "_static"
    static_dir.mkdir(parents=True)
    vendor(KATEX, static_dir)
    return static_dir


def site_exporter() -> HTMLExporter:
    """nbconvert's JupyterLab exporter with the course's offline template (notebook pages)."""
    return HTMLExporter(
        template_name="lab",
        extra_loaders=[
            DictLoader(
                {"course_site.html.j2": offline_template(template("notebook_blocks.html.j2"))}
            )
        ],
        template_file="course_site.html.j2",
        embed_images=True,
    )


#: the label of a lecture's link to the browser edition (``make lite``, in the site as ``lite/``)
BROWSER_LABEL = "Open in the browser, nothing to install"


def browser_link(notebook: Path) -> Path | None:
    """The browser edition's page for ``notebooks/NN_x.ipynb`` or ``exercises/NN_x.ipynb``
    (site-relative), or None if the browser edition does not have it."""
    from tools.site.build_lite import LECTURES

    if notebook.parent.name not in ("notebooks", "exercises") or notebook.stem not in LECTURES:
        return None
    return Path(f"lite/lab/index.html?path={notebook.parent.name}/{notebook.name}")


def build_site(
    out: Path, *, solutions: bool = True, slides: bool = True, lite: bool = False, log=print
) -> list[Path]:
    """Render README, the Markdown pages and every notebook into ``out``; return the pages.

    ``solutions=False`` leaves ``solutions/`` out (links to it keep their text, lose their
    target); ``slides=True`` also builds the decks into ``out/slides`` and links each lecture
    to its deck; ``lite=True`` builds the browser edition into ``out/lite`` (``make lite``) and
    links the lectures it has to it (without it those links keep their text, lose their target).
    """
    out = Path(out)
    static_dir = fresh_output(out)
    if lite:
        from tools.site.build_lite import build_lite

        build_lite(out / "lite", log=log)
    (static_dir / "site.css").write_text(
        template("site.css") + template("contrast.css"), encoding="utf-8"
    )
    folders = tuple(d for d in NOTEBOOK_DIRS if solutions or d != "solutions")
    sources = notebook_sources(folders)
    left_out = frozenset(site_path(p) for p in notebook_sources()) - {site_path(p) for p in sources}
    broken: list[str] = []
    md_sources = [ROOT / n for n in MARKDOWN_PAGES if (ROOT / n).exists()]
    pages = {site_path(p) for p in [*sources, *md_sources]}
    notebooks = {p: nbformat.read(p, as_version=4) for p in sources}
    titles = {site_path(p): title_of(nb, p.stem) for p, nb in notebooks.items()}
    from .quiz import load_quizzes, quiz_page, section_anchors, site_page

    quizzes = {q.lecture: q for q in load_quizzes()}
    pages |= {site_page(q) for q in quizzes.values()}
    decks: set[Path] = set()
    if slides:
        from .deck import build_slides  # the decks import the site's helpers

        built = build_slides(out / "slides", static_dir, solutions=solutions, log=log)
        decks = {Path("slides") / d for d in built}
    exporter = site_exporter()
    for folder in folders:
        in_folder = [p for p in sources if p.parent.name == folder]
        for i, source in enumerate(in_folder):
            page = site_path(source)
            nb = executed(source, log) if folder == "notebooks" else notebooks[source]
            prev_next = (
                site_path(in_folder[i - 1]) if i > 0 else None,
                site_path(in_folder[i + 1]) if i + 1 < len(in_folder) else None,
            )
            extra = []
            for other in NOTEBOOK_DIRS:
                twin = Path(other) / page.name
                if other != folder and twin in pages:
                    extra.append(({"notebooks": "Lecture"}.get(other, other.title()), twin))
            deck = Path("slides") / page.name
            if folder == "notebooks" and deck in decks:
                extra.append(("Slides", deck))
            if folder == "notebooks" and source.stem in quizzes:
                extra.append(("Quiz", site_page(quizzes[source.stem])))
            browser = browser_link(source.relative_to(ROOT))
            if lite and browser is not None:
                extra.append((BROWSER_LABEL, browser))
            static = relative(Path("_static"), page) + "/"
            nav = _nav(page, prev_next, titles, extra)
            resources = {
                "site": {
                    "static": static,
                    "katex_head": katex_head(static),
                    "nav_top": f'<nav class="course-nav">{nav}</nav>',
                    "nav_bottom": f'<nav class="course-nav bottom">{nav}</nav>',
                },
                "metadata": {"name": titles[page]},
            }
            body, _ = exporter.from_notebook_node(label_figures(nb), resources=resources)
            body = rewrite_links(body, source, page, out, pages, broken, left_out)
            check_offline(body, str(page))
            (out / page).parent.mkdir(parents=True, exist_ok=True)
            (out / page).write_text(body, encoding="utf-8")
            log(f"wrote {page}")
    for quiz in quizzes.values():
        page = site_page(quiz)
        lecture = Path("notebooks") / f"{quiz.lecture}.html"
        written = out / lecture
        anchors = section_anchors(written.read_text(encoding="utf-8")) if written.exists() else {}
        static = relative(Path("_static"), page) + "/"
        nav = _nav(page, (None, None), titles, [("Lecture", lecture)] if written.exists() else [])
        head = f'<link rel="stylesheet" href="{static}site.css">\n{katex_head(static)}'
        body = quiz_page(quiz, f'<nav class="course-nav">{nav}</nav>', head,
                         relative(lecture, page), anchors, solutions)  # fmt: skip
        check_offline(body, str(page))
        (out / page).parent.mkdir(parents=True, exist_ok=True)
        (out / page).write_text(body, encoding="utf-8")
        log(f"wrote {page}")
    for source in md_sources:
        page = site_path(source)
        extra_nav = ""
        if page == Path("index.html") and decks:
            extra_nav = '<a data-site href="slides/index.html">Slides</a>'
        body = render_markdown_page(source, page, relative(Path("_static"), page) + "/", extra_nav)
        body = rewrite_links(body, source, page, out, pages, broken, left_out)
        check_offline(body, str(page))
        (out / page).write_text(body, encoding="utf-8")
        log(f"wrote {page}")
    if broken:
        raise BrokenLinks("links to files that do not exist:\n  " + "\n  ".join(broken))
    return sorted(pages | decks)
