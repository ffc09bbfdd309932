"""Where each repository file appears in the site, and links rewritten to match.

``notebooks/NN_topic.ipynb`` becomes ``notebooks/NN_topic.html``, ``README.md`` the site's
``index.html``, the other Markdown pages ``NAME.html``; any other repository file a page links
to (a badge, the licence, a source file) is copied to the same place in the site. A link to a
file that does not exist is reported (:class:`BrokenLinks`). A link to a page that is left out
on purpose (the solutions, when an instructor does not publish them) keeps its text and loses
its target.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = [
    "MARKDOWN_PAGES",
    "NOTEBOOK_DIRS",
    "ROOT",
    "BrokenLinks",
    "heading_ids",
    "relative",
    "rewrite_links",
    "site_path",
]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIRS = ("notebooks", "exercises", "solutions")
MARKDOWN_PAGES = ("README.md", "INSTRUCTORS.md", "CONTRIBUTING.md")
BROWSER_PAGE = "docs/browser-edition.md"  # where README's "browser" links point in the repository


def site_path(source: Path) -> Path | None:
    """Where a repository file appears in the site (relative), or None if it is not a page."""
    rel = source.relative_to(ROOT)
    if rel.suffix == ".ipynb" and rel.parts[0] in NOTEBOOK_DIRS and len(rel.parts) == 2:
        return rel.with_suffix(".html")
    if rel.suffix == ".ipynb" and rel.parts[0] == "quizzes" and len(rel.parts) == 2:
        return rel.with_suffix(".html")  # rendered from the quiz file (tools/site/quiz.py)
    if rel.as_posix() == "README.md":
        return Path("index.html")
    if len(rel.parts) == 1 and rel.name in MARKDOWN_PAGES:
        return rel.with_suffix(".html")
    return None


def relative(target: Path, page: Path) -> str:
    """``target`` (site-relative) as a link from the page at ``page`` (site-relative)."""
    up = "../" * (len(page.parts) - 1)
    return up + target.as_posix()


_HREF = re.compile(r'(<(?:a|img)\b[^>]*?\b(?:href|src)=")([^"]*)(")', re.I)


class BrokenLinks(ValueError):
    """Pages link to repository files that do not exist (the site is written all the same)."""


def rewrite_links(
    page_html: str,
    source: Path,
    page: Path,
    out: Path,
    pages: set[Path],
    broken: list[str],
    left_out: frozenset[Path] = frozenset(),
) -> str:
    """Point links at the site's pages; copy other repository files a page links to.

    Links to files that do not exist are appended to ``broken`` as ``"source: link"``; links
    to the pages in ``left_out`` (site paths) are disabled, their text kept.
    """
    missing: list[str] = []

    def fix(m: re.Match) -> str:
        if "data-site" in m.group(1):  # already a link between site pages (navigation)
            return m.group(0)
        url = html.unescape(m.group(2))
        parts = urlsplit(url)
        if parts.scheme or url.startswith(("#", "//")) or not parts.path:
            return m.group(0)
        if source.name == "README.md" and parts.path == BROWSER_PAGE and parts.fragment:
            # README's "browser" links open docs/browser-edition.md (how to build and serve it)
            # on GitHub and in JupyterLab; in the site they open the lecture in the browser edition
            lite = f"lite/lab/index.html?path=notebooks/{parts.fragment}.ipynb"
            if (out / "lite" / "lab" / "index.html").exists():
                return m.group(1) + html.escape(lite) + m.group(3)
            tag = m.group(1)[: -len('href="')] if m.group(1).endswith('href="') else m.group(1)
            return f'{tag}title="the browser edition is not in this build" data-left-out="{lite}"'
        target = (source.parent / unquote(parts.path)).resolve()
        try:
            target.relative_to(ROOT)
        except ValueError:
            missing.append(url)
            return m.group(0)
        mapped = site_path(target) if target.suffix in (".ipynb", ".md") else None
        if mapped is not None and mapped in left_out and target.exists():
            tag = m.group(1)[: -len('href="')] if m.group(1).endswith('href="') else None
            if tag is not None:  # <a ... href="..."> -> <a ... data-left-out="...">
                return f'{tag}title="not published on this site" data-left-out="{m.group(2)}"'
        if mapped is not None and target.exists():
            if mapped not in pages:
                missing.append(url)
            link = relative(mapped, page) + (f"#{parts.fragment}" if parts.fragment else "")
            return m.group(1) + html.escape(link) + m.group(3)
        if target.is_file():
            copy = out / target.relative_to(ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target, copy)
            return m.group(0)
        missing.append(url)
        return m.group(0)

    result = _HREF.sub(fix, page_html)
    broken += [f"{source.relative_to(ROOT)}: {url}" for url in missing]
    return result


def heading_ids(body: str) -> str:
    """GitHub-style ids on Markdown headings, so links such as INSTRUCTORS.md#grading work."""
    seen: dict[str, int] = {}

    def add(m: re.Match) -> str:
        text = re.sub(r"<[^>]+>", "", m.group(3))
        slug = re.sub(r"[^\w\- ]", "", html.unescape(text).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        slug = f"{slug}-{n}" if n else slug
        return f'<{m.group(1)}{m.group(2)} id="{html.escape(slug)}">{m.group(3)}</{m.group(1)}>'

    return re.sub(r"<(h[1-6])([^>]*)>(.*?)</\1>", add, body, flags=re.S)
