"""Export a notebook to one HTML page that opens with no network (for handouts and tests).

    python -m tools.site.export_html NOTEBOOK.ipynb OUT.html            # the saved outputs
    python -m tools.site.export_html NOTEBOOK.ipynb OUT.html --execute  # run it first

nbconvert's default "lab" template loads require.js and MathJax (and, when needed, mermaid
and the widget manager) from a CDN. This template keeps the lab look but drops those
scripts: the course's interactive views carry their own JavaScript (course_lib.viz), and
formulas are left as TeX source. The result is checked by :func:`tools.site.offline_html.check_offline`:
nothing in it may load from another site.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from nbconvert import HTMLExporter

from tools.notebooks.nbbuild import run_notebook
from tools.site.offline_html import check_offline, offline_template

# The lab look without CDN scripts; MathJax dropped too (formulas stay TeX source).
OFFLINE_TEMPLATE = offline_template(
    "{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}\n"
)


def export_offline_html(nb: nbformat.NotebookNode) -> str:
    """The notebook as one self-contained HTML page; raise if anything would be fetched."""
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"offline_lab.html.j2": OFFLINE_TEMPLATE})],
        template_file="offline_lab.html.j2",
        embed_images=True,
    )
    body, _ = exporter.from_notebook_node(nb)
    check_offline(body, "the exported page")
    return body


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--execute"):
        print(__doc__)
        return 2
    src, out = Path(argv[0]), Path(argv[1])
    nb = nbformat.read(src, as_version=4)
    if len(argv) == 3:
        run_notebook(nb, src.resolve().parent)
    out.write_text(export_offline_html(nb), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
