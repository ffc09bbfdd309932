"""`make update` while the lecture it updates is open in JupyterLab: the update survives.

JupyterLab keeps the old version of an open notebook in its tab; its next save (autosave,
Ctrl+S, or "Overwrite", the focused default of its "File Changed" dialog) writes the old version
back over the update. tools/dev/update.py therefore asks the Jupyter servers that serve the
clone which notebooks a browser has open, and refuses to update one of them.

The test plays it in headless Chromium, with real mouse and key events, in a small clone (the
update script and lecture 01) of a small upstream served the way `make lab` serves the course
(tools/dev/lab.py, private HOME and Jupyter folders): the lecture is opened; `make
update` (the script) refuses, names the lecture, and changes nothing; the tab is closed; the
update then goes through; the lecture, opened again and saved, keeps the update.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from _browser import Browser, environment_without_proxies
from _lab import (
    KERNEL_IDLE_JS,
    TABS_JS,
    free_port,
    lab_process,
    open_and_save,
    press_ctrl_s,
    tab_clean,
)

from tools.dev.in_clean_clone import private_home
from tools.notebooks.notebook_form import write

ROOT = Path(__file__).resolve().parents[1]
LECTURE = "notebooks/01_softmax.ipynb"
MARK = "(Updated by the course.)"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (ROOT / ".venv" / ".installed").exists(), reason="needs `make venv` first"
    ),
]


def _git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _course(tmp: Path) -> tuple[Path, Path]:
    """An upstream with the update script and lecture 01, a clone of it, then an update of the
    lecture committed upstream (the clone has not fetched it)."""
    upstream, clone = tmp / "upstream", tmp / "clone"
    for rel in ("tools/dev/update.py", LECTURE):
        (upstream / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, upstream / rel)
    (upstream / ".gitignore").write_text("my-work/\n.ipynb_checkpoints/\n")
    ident = ["-c", "user.name=course", "-c", "user.email=course@example.org"]
    _git(tmp, "init", "-q", "-b", "main", str(upstream))
    _git(upstream, "add", "-A")
    _git(upstream, *ident, "commit", "-qm", "the course")
    _git(tmp, "clone", "-q", str(upstream), str(clone))
    nb = nbformat.read(upstream / LECTURE, as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace("\n", f" {MARK}\n", 1)
    write(nb, upstream / LECTURE)
    _git(upstream, *ident, "commit", "-qam", "an update of lecture 01")
    return upstream, clone


def _close_tab(browser: Browser, name: str) -> None:
    """Click the close icon of the tab labelled ``name`` (a real mouse event)."""
    x, y = browser.evaluate(f"""(() => {{
      const tab = Array.from(document.querySelectorAll('.lm-TabBar-tab')).find(
        t => (t.querySelector('.lm-TabBar-tabLabel') || t).innerText.trim() === {name!r});
      const r = tab.querySelector('.lm-TabBar-tabCloseIcon').getBoundingClientRect();
      return [r.left + r.width / 2, r.top + r.height / 2];
    }})()""")
    for kind in ("mousePressed", "mouseReleased"):
        browser.send("Input.dispatchMouseEvent",
                     {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                     browser.session)  # fmt: skip


def test_make_update_refuses_while_the_lecture_is_open_then_the_update_survives_a_save(
    chromium, tmp_path
):
    upstream, clone = _course(tmp_path)
    env = private_home(tmp_path / "home", environment_without_proxies())
    env["PYTHONPATH"] = str(ROOT)
    update = [sys.executable, str(clone / "tools" / "dev" / "update.py")]
    lab = [sys.executable, str(ROOT / "tools" / "dev" / "lab.py"), "--port", str(free_port()),
           "--root-dir", str(clone)]  # fmt: skip
    lecture = clone / LECTURE
    name = lecture.name
    with lab_process(lab, env) as (url, _, token, _, _), Browser(chromium, timeout=120) as browser:
        base = url.split("/lab/")[0]
        browser.navigate(f"{base}/lab/tree/{LECTURE}?reset&token={token}")
        browser.wait_for(lambda: browser.evaluate(KERNEL_IDLE_JS), 300, "the lecture's kernel")
        # Opened and not run, the lecture shows no unsaved dot (tools/dev/lab_contents.py),
        # also once the kernel's metadata has reached it.
        for _ in range(10):
            browser.pump(0.5)
            assert tab_clean(browser, name), browser.evaluate(TABS_JS)
        before = (lecture.read_bytes(), _git(clone, "rev-parse", "HEAD"))

        refused = subprocess.run(update, cwd=clone, env=env, capture_output=True, text=True)
        assert refused.returncode != 0, refused.stdout + refused.stderr
        assert LECTURE in refused.stderr and "close those tabs" in refused.stderr, refused.stderr
        assert "Nothing was changed" in refused.stderr
        assert (lecture.read_bytes(), _git(clone, "rev-parse", "HEAD")) == before
        assert not (clone / "my-work").exists()
        press_ctrl_s(browser)  # a save while the update waits changes nothing either
        browser.pump(3.0)
        assert (lecture.read_bytes(), _git(clone, "rev-parse", "HEAD")) == before

        _close_tab(browser, name)
        browser.wait_for(
            lambda: all(label.strip() != name for label, _ in browser.evaluate(TABS_JS)),
            60,
            f"{name}'s tab closed",
        )
        deadline = time.monotonic() + 60  # the kernel's websocket closes a moment later
        while True:
            done = subprocess.run(update, cwd=clone, env=env, capture_output=True, text=True)
            if done.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert done.returncode == 0, done.stdout + done.stderr
        assert _git(clone, "rev-parse", "HEAD") == _git(upstream, "rev-parse", "HEAD")
        assert MARK in lecture.read_text(encoding="utf-8")

        # Reopened and saved (what autosave would do), the lecture keeps the update.
        open_and_save(browser, base, token, lecture, LECTURE)
        assert browser.evaluate(KERNEL_IDLE_JS)
    assert MARK in lecture.read_text(encoding="utf-8")
    assert lecture.read_bytes() == (upstream / LECTURE).read_bytes()
    assert _git(clone, "status", "--porcelain") == ""
