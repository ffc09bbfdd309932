"""Build the course as a static site, and every lecture as a reveal.js slide deck, for offline use.

    python tools/build_site.py site [OUT]      # default build/site: README + every notebook, with outputs
    python tools/build_site.py slides [OUT]    # default build/slides: one deck per lecture

Why nbconvert: it is already pinned (JupyterLab needs it), renders each notebook exactly with
its saved outputs in JupyterLab's look, and its templates let us drop every CDN script.
Jupyter Book / MyST would add a Sphinx or Node tool-chain and re-execute or re-style the
lectures for little gain on a site of a dozen pages.

What "offline" means here: no page loads anything from another site. nbconvert's templates
load require.js, MathJax, mermaid, jQuery and reveal.js from CDNs; our templates drop them.
Formulas are typeset by KaTeX and slides run on reveal.js, both taken from the npm registry
at build time (``npm pack`` of a pinned version, checked against a pinned sha512 and cached in
``build/vendor/``) and copied into the site with their licences. The interactive attention
views carry their own JavaScript (course_lib.viz). A lecture whose committed notebook leaves
out large outputs (cells tagged ``strip-output``) is executed before it is rendered.

Links: ``notebooks/NN_topic.ipynb`` becomes ``notebooks/NN_topic.html``, ``README.md`` the
site's ``index.html``, other Markdown files ``NAME.html``; any other repository file a page
links to (a badge, the licence, a source file) is copied to the same place in the site. A link
to a file that does not exist stops the build.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
from jinja2 import DictLoader
from markdown_it import MarkdownIt
from nbclient import NotebookClient
from nbconvert import HTMLExporter, SlidesExporter

ROOT = Path(__file__).resolve().parents[1]
VENDOR_CACHE = ROOT / "build" / "vendor"
NOTEBOOK_DIRS = ("notebooks", "exercises", "solutions")
MARKDOWN_PAGES = ("README.md", "INSTRUCTORS.md", "CONTRIBUTING.md")


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    integrity: str  # the registry's sha512, as `npm view NAME@VERSION dist.integrity` prints it
    files: tuple[str, ...]  # what the site needs, relative to the tarball's package/ folder


KATEX = NpmPackage(
    "katex",
    "0.19.1",
    "sha512-jG8uKntjSEcm2EpQOh0XturpPuuC9r3Sq5HLHdsFdWZT27E672SF19QEi+of0/YeOy15lDgRhKvr5614uRrEfA==",
    ("LICENSE", "dist/katex.min.js", "dist/katex.min.css", "dist/contrib/auto-render.min.js",
     "dist/fonts/"),
)  # fmt: skip
REVEAL = NpmPackage(
    "reveal.js",
    "6.0.2",
    "sha512-JYIg5D9aoxoaLeb84O+OvAwsKWdIavVgEDScxtYEXFCT6t6TQrhNtSgogcjdCpdLsWglhJn3zyE3fUOwiH5KEg==",
    ("LICENSE", "dist/reveal.js", "dist/reveal.css", "dist/theme/white.css",
     "dist/plugin/notes.js"),
)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Vendored front-end packages, from the npm registry
# ---------------------------------------------------------------------------------------------


def _sri(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def npm_tarball(pkg: NpmPackage, cache: Path = VENDOR_CACHE) -> Path:
    """The package's tarball in ``cache``, fetched with ``npm pack`` if needed, integrity-checked."""
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"{pkg.name.replace('/', '-')}-{pkg.version}.tgz"
    if not tarball.exists() or _sri(tarball) != pkg.integrity:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(
                f"{pkg.name}@{pkg.version} is not in {cache} and npm is not installed: "
                "install Node.js/npm (Debian: apt-get install npm) to fetch it"
            )
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run(
                [npm, "pack", f"{pkg.name}@{pkg.version}", "--json", "--pack-destination", tmp],
                capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            if out.returncode != 0:
                raise RuntimeError(f"npm pack {pkg.name}@{pkg.version} failed:\n{out.stderr}")
            fetched = Path(tmp) / json.loads(out.stdout)[0]["filename"]
            shutil.move(fetched, tarball)
    if _sri(tarball) != pkg.integrity:
        tarball.unlink()
        raise RuntimeError(f"{pkg.name}@{pkg.version}: the tarball does not match its integrity")
    return tarball


def vendor(pkg: NpmPackage, dest: Path) -> Path:
    """Copy the files the site needs from the package's npm tarball into ``dest/NAME``."""
    target = dest / pkg.name
    if target.exists():
        shutil.rmtree(target)
    with tarfile.open(npm_tarball(pkg)) as tar:
        for member in tar.getmembers():
            rel = member.name.removeprefix("package/")
            if not member.isfile() or not any(
                rel == f or (f.endswith("/") and rel.startswith(f)) for f in pkg.files
            ):
                continue
            out = target / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(tar.extractfile(member).read())
    missing = [f for f in pkg.files if not (target / f).exists()]
    if missing:
        raise RuntimeError(f"{pkg.name}@{pkg.version} has no {missing}")
    return target


# ---------------------------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------------------------

# KaTeX renders $...$, $$...$$, \(...\) and \[...\] outside code; the page then marks itself
# `data-math="done"` (or "failed"), which the browser test waits for.
KATEX_HEAD = """
<link rel="stylesheet" href="{static}katex/dist/katex.min.css">
<script defer src="{static}katex/dist/katex.min.js"></script>
<script defer src="{static}katex/dist/contrib/auto-render.min.js"></script>
<script>
document.addEventListener("DOMContentLoaded", function () {{
  var root = document.documentElement;
  try {{
    renderMathInElement(document.body, {{
      delimiters: [
        {{left: "$$", right: "$$", display: true}},
        {{left: "\\\\[", right: "\\\\]", display: true}},
        {{left: "$", right: "$", display: false}},
        {{left: "\\\\(", right: "\\\\)", display: false}}
      ],
      ignoredTags: ["script", "noscript", "style", "textarea", "pre", "code", "option"],
      throwOnError: false
    }});
    root.dataset.math = "done";
  }} catch (err) {{
    root.dataset.math = "failed";
    console.error("KaTeX: " + err);
  }}
}});
</script>
"""

SITE_CSS = """
.course-nav { display: flex; gap: 1.5em; flex-wrap: wrap; align-items: baseline;
  font-family: system-ui, sans-serif; font-size: 15px; padding: 8px 16px;
  border-bottom: 1px solid #ddd; background: #f7f7f7; }
.course-nav.bottom { border-top: 1px solid #ddd; border-bottom: none; margin-top: 2em; }
.course-nav a { text-decoration: none; }
.course-nav .spacer { flex: 1; }
.course-page { max-width: 980px; margin: 0 auto; padding: 16px 24px;
  font-family: system-ui, sans-serif; line-height: 1.5; }
.course-page table { border-collapse: collapse; }
.course-page th, .course-page td { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; }
.course-page pre { background: #f5f5f5; padding: 8px; overflow-x: auto; }
.katex-display { overflow-x: auto; overflow-y: hidden; }
"""

NOTEBOOK_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mathjax -%}
<link rel="stylesheet" href="{{ resources.site.static }}site.css">
{{ resources.site.katex_head }}
{%- endblock html_head_js_mathjax -%}
{%- block body_header -%}
{{ super() }}
{{ resources.site.nav_top }}
{%- endblock body_header -%}
{% block body_footer %}
{{ resources.site.nav_bottom }}
{{ super() }}
{% endblock body_footer %}
"""

SLIDES_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_jquery -%}{%- endblock html_head_js_jquery -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mathjax -%}
{{ resources.site.katex_head }}
<style>
.reveal .slides > section, .reveal .slides > section > section {
  height: 100%; overflow-y: auto; overflow-x: hidden; }
</style>
{%- endblock html_head_js_mathjax -%}
{% block footer_js %}
<script src="{{ resources.reveal.url_prefix }}/dist/reveal.js"></script>
<script src="{{ resources.reveal.url_prefix }}/dist/plugin/notes.js"></script>
<script>
document.addEventListener("DOMContentLoaded", function () {
  Reveal.initialize({
    controls: true, progress: true, history: true, hash: true,
    transition: "none", slideNumber: "c/t", plugins: [RevealNotes],
    width: 1100, height: 760
  }).then(function () { document.documentElement.dataset.deck = "ready"; });
});
</script>
{% endblock footer_js %}
"""


# ---------------------------------------------------------------------------------------------
# Pages and links
# ---------------------------------------------------------------------------------------------


def site_path(source: Path) -> Path | None:
    """Where a repository file appears in the site (relative), or None if it is not a page."""
    rel = source.relative_to(ROOT)
    if rel.suffix == ".ipynb" and rel.parts[0] in NOTEBOOK_DIRS and len(rel.parts) == 2:
        return rel.with_suffix(".html")
    if rel.as_posix() == "README.md":
        return Path("index.html")
    if len(rel.parts) == 1 and rel.name in MARKDOWN_PAGES:
        return rel.with_suffix(".html")
    return None


def _relative(target: Path, page: Path) -> str:
    """``target`` (site-relative) as a link from the page at ``page`` (site-relative)."""
    up = "../" * (len(page.parts) - 1)
    return up + target.as_posix()


_HREF = re.compile(r'(<(?:a|img)\b[^>]*?\b(?:href|src)=")([^"]*)(")', re.I)


class BrokenLinks(ValueError):
    """Pages link to repository files that do not exist (the site is written all the same)."""


def rewrite_links(
    page_html: str, source: Path, page: Path, out: Path, pages: set[Path], broken: list[str]
) -> str:
    """Point links at the site's pages; copy other repository files a page links to.

    Links to files that do not exist are appended to ``broken`` as ``"source: link"``.
    """
    missing: list[str] = []

    def fix(m: re.Match) -> str:
        if "data-site" in m.group(1):  # already a link between site pages (navigation)
            return m.group(0)
        url = html.unescape(m.group(2))
        parts = urlsplit(url)
        if parts.scheme or url.startswith(("#", "//")) or not parts.path:
            return m.group(0)
        target = (source.parent / unquote(parts.path)).resolve()
        try:
            target.relative_to(ROOT)
        except ValueError:
            missing.append(url)
            return m.group(0)
        mapped = site_path(target) if target.suffix in (".ipynb", ".md") else None
        if mapped is not None and target.exists():
            if mapped not in pages:
                missing.append(url)
            link = _relative(mapped, page) + (f"#{parts.fragment}" if parts.fragment else "")
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


def _title(nb: nbformat.NotebookNode, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return fallback


def _nav(page: Path, prev_next: tuple[Path | None, Path | None], titles: dict, extra=()) -> str:
    links = [f'<a data-site href="{_relative(Path("index.html"), page)}">Course home</a>']
    links += [
        f'<a data-site href="{_relative(p, page)}">{html.escape(label)}</a>' for label, p in extra
    ]
    links.append('<span class="spacer"></span>')
    prev, nxt = prev_next
    if prev is not None:
        links.append(
            f'<a data-site href="{_relative(prev, page)}" rel="prev">← {html.escape(titles[prev])}</a>'
        )
    if nxt is not None:
        links.append(
            f'<a data-site href="{_relative(nxt, page)}" rel="next">{html.escape(titles[nxt])} →</a>'
        )
    return "".join(links)


def _heading_ids(body: str) -> str:
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


def render_markdown_page(source: Path, page: Path, static: str) -> str:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    body = _heading_ids(md.render(source.read_text(encoding="utf-8")))
    title = re.search(r"^#\s+(.+)$", source.read_text(encoding="utf-8"), re.M)
    title = title.group(1) if title else source.stem
    home = _relative(Path("index.html"), page)
    nav = f'<nav class="course-nav"><a data-site href="{home}">Course home</a></nav>'
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<link rel="stylesheet" href="{static}site.css">\n{KATEX_HEAD.format(static=static)}'
        f'</head>\n<body>\n{nav}\n<main class="course-page">\n{body}</main>\n</body>\n</html>\n'
    )


def needs_execution(nb: nbformat.NotebookNode) -> bool:
    """True if the committed notebook leaves out outputs on purpose (``strip-output`` cells)."""
    return any("strip-output" in c.metadata.get("tags", []) for c in nb.cells)


_EXECUTED: dict[tuple[Path, int], nbformat.NotebookNode] = {}  # (path, mtime) -> executed copy


def executed(source: Path, log=print) -> nbformat.NotebookNode:
    """``source`` run top to bottom (once per process: the site and the slides share it)."""
    key = (source, source.stat().st_mtime_ns)
    if key not in _EXECUTED:
        log(f"executing {source.relative_to(ROOT)} (its committed outputs are partial)")
        nb = nbformat.read(source, as_version=4)
        NotebookClient(
            nb, timeout=600, kernel_name="python3",
            resources={"metadata": {"path": str(source.parent)}},
        ).execute()  # fmt: skip
        _EXECUTED[key] = nb
    return copy.deepcopy(_EXECUTED[key])


# Anything that would make a browser fetch from another site.
EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe|source|video|audio)\b[^>]*\b(?:src|href)\s*=\s*[\"']?"
    r"(?:https?:)?//",
    re.I,
)


def _check_offline(text: str, where: str) -> None:
    found = EXTERNAL.search(text)
    if found:
        raise RuntimeError(f"{where} would load from the web: {found.group(0)!r}")


def notebook_sources() -> list[Path]:
    return [p for d in NOTEBOOK_DIRS for p in sorted((ROOT / d).glob("[0-9][0-9]_*.ipynb"))]


def _fresh_output(out: Path) -> Path:
    """Empty ``out``, create ``out/_static`` with KaTeX (site and decks both render maths)."""
    if out.exists():
        shutil.rmtree(out)
    static_dir = out / "_static"
    static_dir.mkdir(parents=True)
    vendor(KATEX, static_dir)
    return static_dir


def build_site(out: Path, *, log=print) -> list[Path]:
    """Render README, the other Markdown pages and every notebook into ``out``; return the pages."""
    out = Path(out)
    static_dir = _fresh_output(out)
    (static_dir / "site.css").write_text(SITE_CSS, encoding="utf-8")

    sources = notebook_sources()
    broken: list[str] = []
    md_sources = [ROOT / n for n in MARKDOWN_PAGES if (ROOT / n).exists()]
    pages = {site_path(p) for p in [*sources, *md_sources]}
    notebooks = {p: nbformat.read(p, as_version=4) for p in sources}
    titles = {site_path(p): _title(nb, p.stem) for p, nb in notebooks.items()}
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"course_site.html.j2": NOTEBOOK_TEMPLATE})],
        template_file="course_site.html.j2",
        embed_images=True,
    )
    for folder in NOTEBOOK_DIRS:
        in_folder = [p for p in sources if p.parent.name == folder]
        for i, source in enumerate(in_folder):
            page = site_path(source)
            nb = notebooks[source]
            if folder == "notebooks" and needs_execution(nb):
                nb = executed(source, log)
            prev_next = (
                site_path(in_folder[i - 1]) if i > 0 else None,
                site_path(in_folder[i + 1]) if i + 1 < len(in_folder) else None,
            )
            extra = []
            for other in ("notebooks", "exercises", "solutions"):
                twin = Path(other) / page.name
                if other != folder and twin in pages:
                    extra.append(({"notebooks": "Lecture"}.get(other, other.title()), twin))
            static = _relative(Path("_static"), page) + "/"
            resources = {
                "site": {
                    "static": static,
                    "katex_head": KATEX_HEAD.format(static=static),
                    "nav_top": f'<nav class="course-nav">{_nav(page, prev_next, titles, extra)}</nav>',
                    "nav_bottom": '<nav class="course-nav bottom">'
                    f"{_nav(page, prev_next, titles, extra)}</nav>",
                },
                "metadata": {"name": titles[page]},
            }
            body, _ = exporter.from_notebook_node(nb, resources=resources)
            body = rewrite_links(body, source, page, out, pages, broken)
            _check_offline(body, str(page))
            (out / page).parent.mkdir(parents=True, exist_ok=True)
            (out / page).write_text(body, encoding="utf-8")
            log(f"wrote {page}")
    for source in md_sources:
        page = site_path(source)
        body = render_markdown_page(source, page, _relative(Path("_static"), page) + "/")
        body = rewrite_links(body, source, page, out, pages, broken)
        _check_offline(body, str(page))
        (out / page).write_text(body, encoding="utf-8")
        log(f"wrote {page}")
    if broken:
        raise BrokenLinks("links to files that do not exist:\n  " + "\n  ".join(broken))
    return sorted(pages)


def build_slides(out: Path, *, log=print) -> list[Path]:
    """One reveal.js deck per lecture (``notebooks/NN_*.ipynb``) in ``out``, plus an index."""
    out = Path(out)
    static_dir = _fresh_output(out)
    vendor(REVEAL, static_dir)
    exporter = SlidesExporter(
        extra_loaders=[DictLoader({"course_slides.html.j2": SLIDES_TEMPLATE})],
        template_file="course_slides.html.j2",
        embed_images=True,
        reveal_url_prefix="_static/reveal.js",
        reveal_theme="white",
    )
    decks = []
    items = []
    for source in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(source, as_version=4)
        if needs_execution(nb):
            nb = executed(source, log)
        deck = Path(source.stem + ".html")
        resources = {
            "site": {"katex_head": KATEX_HEAD.format(static="_static/")},
            "metadata": {"name": _title(nb, source.stem)},
        }
        body, _ = exporter.from_notebook_node(nb, resources=resources)
        # Links to other lectures go to their decks; anything else stays a plain link.
        body = re.sub(r'href="(\d\d_[\w-]+)\.ipynb', r'href="\1.html', body)
        _check_offline(body, str(deck))
        (out / deck).write_text(body, encoding="utf-8")
        decks.append(deck)
        items.append(
            f'<li><a href="{deck.as_posix()}">{html.escape(_title(nb, source.stem))}</a></li>'
        )
        log(f"wrote {deck}")
    index = (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        "<title>attention-course: slides</title></head>\n<body>\n<h1>Lecture slides</h1>\n"
        f"<ul>\n{chr(10).join(items)}\n</ul>\n<p>Arrow keys move; <kbd>s</kbd> opens the "
        "speaker notes; <kbd>Esc</kbd> gives an overview.</p>\n</body>\n</html>\n"
    )
    (out / "index.html").write_text(index, encoding="utf-8")
    return decks


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("site", "slides") or len(argv) > 2:
        print(__doc__)
        return 2
    what = argv[0]
    out = Path(argv[1]) if len(argv) == 2 else ROOT / "build" / what
    try:
        (build_site if what == "site" else build_slides)(out)
    except BrokenLinks as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"open {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
