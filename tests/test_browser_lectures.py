"""Opening a lecture in JupyterLab changes nothing: `git pull` of a course update then still works.

JupyterLab writes the kernel's metadata into every notebook it opens and autosaves it; a lecture
stored in any other form shows as modified and is rewritten within two minutes, unrun, and `git
pull` then refuses every update to it. The lectures are stored in the form JupyterLab saves
(tools/notebooks/notebook_form.py). This test serves a copy of the lectures the way `make lab` serves the
course (tools/dev/lab.py: its settings and pre-save hook, with a private HOME and Jupyter folders),
opens each lecture in headless Chromium (the first at its URL, the others from the file
browser, without loading JupyterLab again), lets its kernel start, saves it with Ctrl+S (what
autosave does, without waiting two minutes) and compares the saved file with the committed one
byte for byte.
"""

from __future__ import annotations

import difflib
import shutil
import sys
from pathlib import Path

import pytest
from _browser import Browser, environment_without_proxies
from _lab import TOASTS_JS, free_port, lab_process, open_and_save

from tools.dev.in_clean_clone import private_home

ROOT = Path(__file__).resolve().parents[1]
LECTURES = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (ROOT / ".venv" / ".installed").exists(), reason="needs `make venv` first"
    ),
]


def test_opening_and_saving_each_lecture_changes_nothing(chromium, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(ROOT / "notebooks", root / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))  # fmt: skip
    committed = {name: (root / "notebooks" / name).read_bytes() for name in LECTURES}
    env = private_home(tmp_path / "home", environment_without_proxies())
    env["PYTHONPATH"] = str(ROOT)
    changed = {}
    lab = [sys.executable, str(ROOT / "tools" / "dev" / "lab.py"), "--port", str(free_port()),
           "--root-dir", str(root)]  # fmt: skip
    with lab_process(lab, env) as (url, _, token, _, _), Browser(chromium, timeout=120) as browser:
        base = url.split("/lab/")[0]
        for i, name in enumerate(LECTURES):
            path = root / "notebooks" / name
            # JupyterLab is loaded once, at the first lecture's URL; the others are opened from
            # its file browser (which then shows notebooks/), as a student opens the next one.
            open_and_save(browser, base, token, path, f"notebooks/{name}", from_file_browser=i > 0)
            if path.read_bytes() != committed[name]:
                diff = difflib.unified_diff(committed[name].decode().splitlines(),
                                            path.read_text().splitlines(), lineterm="", n=1)  # fmt: skip
                changed[name] = "\n".join(list(diff)[:40])
        toasts = browser.evaluate(TOASTS_JS)
    assert not changed, "JupyterLab rewrote " + "\n".join(f"{k}:\n{v}" for k, v in changed.items())
    assert not [t for t in toasts if "news" in t.lower()], toasts
