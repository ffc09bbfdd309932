"""The form in which the course stores its notebooks: exactly as JupyterLab 4.6 saves a notebook
right after opening it (unrun), so that opening a lecture, solution or exercise changes nothing.

Measured, not guessed: every notebook of the course opened in JupyterLab 4.6.6 in headless
Chromium with a python3 kernel, autosaved, and diffed against the committed file. JupyterLab
(1) replaces ``language_info`` with the kernel's (``codemirror_mode``, ``file_extension``,
``mimetype``, ``nbconvert_exporter``, ``version``), (2) writes every integral float as an integer
(the notebook is held as JavaScript objects: 10.0 is 10; ipywidgets' stored state has many), and
the server writes the JSON with nbformat (indent 1, sorted keys, a final newline). The browser
test ``tests/test_browser_lectures.py`` repeats the measurement on every lecture.

Only the kernel's exact Python ``version`` is left out: it differs between machines, so `make lab`
does not save it either (``tools/dev/lab.py``'s pre-save hook).

Dependency-free (tools/notebooks/make_exercises.py runs as a script and imports it).

    python tools/notebooks/notebook_form.py [NOTEBOOK.ipynb ...]   # default: notebooks/ and solutions/
    (then `python tools/notebooks/make_exercises.py` writes exercises/ in the same form)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
}


def _as_javascript_numbers(value):
    """``value`` with every integral float as an int: the front end holds the notebook as
    JavaScript objects, where 10.0 is 10, and saves it so (e.g. in ipywidgets' stored state)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _as_javascript_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_javascript_numbers(v) for v in value]
    return value


def as_jupyterlab_saves(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` in the form JupyterLab 4.6 saves it right after opening it (unrun), so that opening a
    lecture does not change it: the kernel's metadata as JupyterLab writes it, numbers as
    JavaScript writes them, nbformat 4.5 (cell ids)."""
    nb = nbformat.from_dict(_as_javascript_numbers(nb))
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = json.loads(json.dumps(LANGUAGE_INFO))
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def writes(nb: nbformat.NotebookNode) -> str:
    """The file's text, exactly as Jupyter's server writes a notebook JupyterLab saved."""
    text = nbformat.writes(as_jupyterlab_saves(nb))
    return text if text.endswith("\n") else text + "\n"


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    Path(path).write_text(writes(nb), encoding="utf-8")


def sync_folder(folder: Path, texts: dict[str, str], *, check: bool, make_target: str) -> int:
    """Write each generated notebook ``texts[name]`` to ``folder/name``; with ``check``, write
    nothing and list the files that differ or that no longer have a source. Returns the exit code."""
    stale = []
    for name, text in texts.items():
        target = folder / name
        if check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(f"{folder.name}/{name}")
        else:
            folder.mkdir(exist_ok=True)
            target.write_text(text, encoding="utf-8")
            print(f"wrote {folder.name}/{name}")
    stale += [
        f"{folder.name}/{n}" for n in sorted({p.name for p in folder.glob("*.ipynb")} - set(texts))
    ]
    if stale:
        print(f"out of date (run `make {make_target}`):", *stale, sep="\n  ")
        return 1
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    root = Path(__file__).resolve().parents[2]
    paths = [Path(a) for a in argv] or [
        p for folder in ("notebooks", "solutions") for p in sorted((root / folder).glob("*.ipynb"))
    ]
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = writes(nbformat.reads(text, as_version=4))
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
