"""Give every cell of the lecture notebooks reveal.js slide metadata.

The metadata serves ``jupyter nbconvert --to slides`` and RISE-style slide views of a
notebook. The course's own decks (``make slides``, tools/site/deck.py) cut each lecture
themselves and read only ``skip`` from it.

    python -m tools.notebooks.add_slide_metadata [NOTEBOOK.ipynb ...]   # default: notebooks/[0-9][0-9]_*.ipynb
    python -m tools.notebooks.add_slide_metadata --check [...]          # exit 1 if a notebook would change

The rule, so that a deck follows the lecture's own structure:

* the title cell (``# NN · ...``) and every Markdown cell starting with ``## `` open a slide;
* a Markdown cell starting with ``### `` opens a sub-slide (reveal.js: one step down);
* the Colab installer cell is skipped (it means nothing on a projector);
* every other cell continues the current slide (``-``).

Only ``cell.metadata.slideshow`` is written; sources, outputs and execution counts are left
byte for byte as they were (the file is rewritten only if the metadata changes), so running
it twice changes nothing the second time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from tools.notebooks.notebook_form import write

ROOT = Path(__file__).resolve().parents[2]
SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")


def slide_type(cell, index: int) -> str:
    """The slide type the rule above gives ``cell`` (the ``index``-th cell)."""
    source = cell.source.lstrip()
    if cell.cell_type == "markdown":
        if index == 0 or source.startswith("# ") or source.startswith("## "):
            return "slide"
        if source.startswith("### "):
            return "subslide"
        return "-"
    if cell.cell_type == "code" and '"google.colab" in sys.modules' in source:
        return "skip"
    return "-"


def add_slide_metadata(nb: nbformat.NotebookNode) -> bool:
    """Set ``metadata.slideshow.slide_type`` on every cell; True if anything changed."""
    changed = False
    for i, cell in enumerate(nb.cells):
        wanted = slide_type(cell, i)
        if cell.metadata.get("slideshow", {}).get("slide_type") != wanted:
            cell.metadata.setdefault("slideshow", {})["slide_type"] = wanted
            changed = True
    return changed


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"] or sorted(
        (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
    )
    stale = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if add_slide_metadata(nb):
            stale.append(path)
            if not check:
                write(nb, path)
                print(f"updated {path}")
    if check and stale:
        print("slide metadata missing or stale in: " + ", ".join(str(p) for p in stale))
        print("run: .venv/bin/python -m tools.notebooks.add_slide_metadata")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
