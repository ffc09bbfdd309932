"""Author's tool: turn a py:percent script into an executed notebook, or re-execute one.

    python -m tools.notebooks.nbbuild SCRIPT.py NOTEBOOK.ipynb   # build from a script, then execute
    python -m tools.notebooks.nbbuild NOTEBOOK.ipynb            # re-execute in place (refresh outputs)

Script format: cells start with ``# %%`` (code) or ``# %% [markdown]`` (markdown, every line
prefixed with ``# ``). Tags go on the marker line: ``# %% tags=["nbval-ignore-output"]``.
A cell tagged ``["nbval-ignore-output", "strip-output"]`` runs, but its outputs are not saved.
Execution uses this interpreter's kernel, from the notebook's folder, so stored outputs are
exactly what nbval will compare against; cell ids are stable (``cell-01``, ...).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools.notebooks.add_slide_metadata import add_slide_metadata
from tools.notebooks.notebook_form import KERNELSPEC, LANGUAGE_INFO, write

MARKER = re.compile(r"^# %%(?P<md> \[markdown\])?(?:\s+tags=(?P<tags>\[.*\]))?\s*$")


def parse_script(text: str) -> nbformat.NotebookNode:
    """Split a py:percent script into notebook cells (no outputs yet)."""
    nb = nbformat.v4.new_notebook()
    cells: list[tuple[str, list[str], list[str]]] = []
    for line in text.splitlines():
        m = MARKER.match(line)
        if m:
            tags = json.loads(m.group("tags")) if m.group("tags") else []
            cells.append(("markdown" if m.group("md") else "code", tags, []))
        elif cells:
            cells[-1][2].append(line)
        elif line.strip():
            raise ValueError(f"text before the first '# %%' marker: {line!r}")
    for i, (kind, tags, lines) in enumerate(cells, start=1):
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if kind == "markdown":
            src = "\n".join(re.sub(r"^# ?", "", ln) for ln in lines)
            cell = nbformat.v4.new_markdown_cell(src)
        else:
            cell = nbformat.v4.new_code_cell("\n".join(lines))
        cell.id = f"cell-{i:02d}"
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


def run_notebook(
    nb: nbformat.NotebookNode, folder: Path, timeout: int = 600, kernel_args: tuple = ()
) -> None:
    """Execute ``nb`` in place, top to bottom, in a python3 kernel whose working directory is
    ``folder`` (the one place the tools and tests call nbclient); ``kernel_args`` go to the
    kernel's command line (e.g. ``--IPKernelApp.exec_lines=...``)."""
    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(folder)}},
        extra_arguments=list(kernel_args),
    ).execute()  # fmt: skip


def execute(nb: nbformat.NotebookNode, folder: Path, timeout: int = 600) -> None:
    """:func:`run_notebook`, then make the metadata and outputs machine-independent."""
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = LANGUAGE_INFO
    run_notebook(nb, folder, timeout)
    # nbclient records the exact python version; keep metadata machine-independent.
    nb.metadata["language_info"] = LANGUAGE_INFO
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            if out.output_type == "error":  # the full traceback holds this machine's paths
                out.traceback = [f"\x1b[0;31m{out.ename}\x1b[0m: {out.evalue}"]
        # Large or run-dependent outputs (interactive attention views, ~0.5 MB each) are not
        # committed: the cell ran (execution count kept), nbval is told to ignore its output.
        # A displayed object keeps its one-line text version, so that a reader of the saved
        # notebook sees what the cell shows instead of nothing.
        tags = cell.metadata.get("tags", [])
        if "strip-output" in tags:
            if "nbval-ignore-output" not in tags:
                raise ValueError(f"{cell.id}: tag strip-output needs nbval-ignore-output too")
            cell.outputs = [
                _text_only(out) for out in cell.outputs if "text/plain" in out.get("data", {})
            ]


def _text_only(out: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A display output reduced to its ``text/plain`` (for cells tagged ``strip-output``)."""
    return nbformat.v4.new_output(
        "display_data", data={"text/plain": out["data"]["text/plain"]}, metadata={}
    )


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    if len(argv) == 1 and argv[0].endswith(".ipynb"):
        out = Path(argv[0])
        nb = nbformat.read(out, as_version=4)
    elif len(argv) == 2:
        out = Path(argv[1])
        nb = parse_script(Path(argv[0]).read_text())
    else:
        print(__doc__)
        return 2
    execute(nb, out.resolve().parent)
    if out.resolve().parent.name == "notebooks":  # lectures double as reveal.js decks
        add_slide_metadata(nb)
    write(nb, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
