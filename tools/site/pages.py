"""The static site: README, the other Markdown pages and every notebook, with navigation.

Why nbconvert: it is already pinned (JupyterLab needs it), renders each notebook exactly with
its saved outputs in JupyterLab's look, and its templates let us drop every CDN script.
A lecture whose committed notebook leaves out large outputs (cells tagged ``strip-output``)
is executed before it is rendered.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from markdown_it import MarkdownIt
from nbconvert import HTMLExporter

from .deck import build_slides
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
from .quiz import load_quizzes, quiz_page, section_anchors, site_page
from .rendering import executed, fresh_output, katex_head, label_figures, template, title_of

__all__ = [
    "BROWSER_LABEL",
    "browser_link",
    "build_site",
    "notebook_sources",
]


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


def notebook_sources(folders=NOTEBOOK_DIRS) -> list[Path]:
    return [p for d in folders for p in sorted((ROOT / d).glob("[0-9][0-9]_*.ipynb"))]


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
    quizzes = {q.lecture: q for q in load_quizzes()}
    pages |= {site_page(q) for q in quizzes.values()}
    decks: set[Path] = set()
    if slides:
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
