"""Start the course's JupyterLab (`make lab`, tools/dev/lab.py) for a test, in a private HOME.

Every server a test starts gets its own HOME and Jupyter config, data, runtime, workspaces and
settings folders (tools/dev/in_clean_clone.py's ``private_home``): it must neither reopen the tabs a
student left open in their own JupyterLab nor overwrite their workspace or settings.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from _browser import Browser

from tools.dev.in_clean_clone import private_home


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ROOT = Path(__file__).resolve().parents[1]
URL = re.compile(r"Open the course at: (http://127\.0\.0\.1:(\d+)/\S+\?token=(\w+))")
KERNEL_IDLE_JS = """(() => {
  const panel = '.jp-NotebookPanel:not(.lm-mod-hidden)';
  const nb = document.querySelector(panel + ' .jp-Notebook');
  const status = document.querySelector(panel + ' .jp-Notebook-ExecutionIndicator')
    || document.querySelector('.jp-Notebook-ExecutionIndicator');
  return !!nb && !!status && status.getAttribute('data-status') === 'idle';
})()"""
CURRENT_TAB_JS = """(() => {
  const t = document.querySelector(
    '#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel');
  return t ? t.innerText.trim() : null;
})()"""
# Where the file browser shows ``name`` (scrolled into view), or null.
LISTING_ITEM_JS = """(name => {
  const item = Array.from(document.querySelectorAll('.jp-DirListing-item')).find(
    e => (e.querySelector('.jp-DirListing-itemText') || e).innerText.trim() === name);
  if (!item) return null;
  item.scrollIntoView({block: 'center'});
  const r = item.getBoundingClientRect();
  return [r.left + 30, r.top + r.height / 2];
})(%s)"""
FIRST_CELL_JS = """(() => {
  const c = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell');
  const r = c.getBoundingClientRect();
  return [r.right - 40, r.top + 8];  // its text, not the collapser on the left
})()"""
TOASTS_JS = "Array.from(document.querySelectorAll('.Toastify__toast')).map(t => t.innerText)"


@contextlib.contextmanager
def lab_process(cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT):
    """Run ``cmd`` (make lab or tools/dev/lab.py) with a private HOME unless ``env`` is given; yield
    (url, port, token, process, output lines) once it prints the URL; stop it and its server."""
    home = Path(tempfile.mkdtemp(prefix="course-lab-home-"))
    env = private_home(home) if env is None else env
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        lines, m = [], None
        deadline = time.monotonic() + 120
        while m is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
            lines.append(line)
            m = URL.search(line)
        assert m, f"{' '.join(cmd)} printed no URL:\n" + "".join(lines)
        yield m.group(1), int(m.group(2)), m.group(3), proc, lines
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)


def press_ctrl_s(browser: Browser) -> None:
    x, y = browser.evaluate(FIRST_CELL_JS)
    for kind in ("mousePressed", "mouseReleased"):
        browser.send("Input.dispatchMouseEvent",
                     {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                     browser.session)  # fmt: skip
    for kind in ("keyDown", "keyUp"):
        browser.send("Input.dispatchKeyEvent",
                     {"type": kind, "modifiers": 2, "key": "s", "code": "KeyS",
                      "windowsVirtualKeyCode": 83, "nativeVirtualKeyCode": 83},
                     browser.session)  # fmt: skip


TABS_JS = """Array.from(document.querySelectorAll('.lm-TabBar-tab')).map(
  t => [(t.querySelector('.lm-TabBar-tabLabel') || t).innerText, t.className])"""


def tab_clean(browser: Browser, name: str) -> bool:
    """True when the main area has a tab labelled ``name`` and none so labelled is dirty."""
    tabs = [cls for label, cls in browser.evaluate(TABS_JS) if label.strip() == name]
    return bool(tabs) and not any("jp-mod-dirty" in cls.split() for cls in tabs)


def saved_and_settled(notebook: Path, before_ns: int, last: list[bytes | None]) -> bool:
    """True once ``notebook`` was written after ``before_ns`` and its bytes are a whole notebook
    that two reads in a row agree on. Jupyter's save truncates the file and rewrites it in place,
    so a read just after the mtime changes can see 0 bytes or half a file: the mtime alone is
    only a sign that a write began."""
    try:
        if notebook.stat().st_mtime_ns == before_ns:
            return False
        data = notebook.read_bytes()
        json.loads(data)
    except (OSError, ValueError):
        last[0] = None
        return False
    settled, last[0] = data == last[0], data
    return settled


def kernel_idle(base: str, token: str, rel: str) -> bool:
    """Does the server have a session for ``rel`` whose kernel is idle (started and answering)?"""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{base}/api/sessions?token={token}", timeout=10) as reply:
        sessions = json.load(reply)
    return any(
        s.get("path") == rel and (s.get("kernel") or {}).get("execution_state") == "idle"
        for s in sessions
    )


def double_click_in_file_browser(browser: Browser, name: str) -> None:
    """Open ``name`` as a student does from the file browser (which must show its folder)."""
    where = browser.wait_for(
        lambda: browser.evaluate(LISTING_ITEM_JS % json.dumps(name)), 60, f"{name} listed"
    )
    x, y = where
    for clicks in (1, 2):
        for kind in ("mousePressed", "mouseReleased"):
            browser.send("Input.dispatchMouseEvent",
                         {"type": kind, "x": x, "y": y, "button": "left", "clickCount": clicks},
                         browser.session)  # fmt: skip


def open_and_save(
    browser: Browser,
    base: str,
    token: str,
    notebook: Path,
    rel: str,
    *,
    from_file_browser: bool = False,
) -> None:
    """Open ``rel`` in JupyterLab, wait for its kernel, save it, and wait until the save is
    finished: the tab no longer dirty and the file a whole notebook that has stopped changing.

    ``from_file_browser``: double-click it in the file browser of the JupyterLab already loaded
    in ``browser`` (which shows its folder) instead of loading JupyterLab again at its URL."""
    if from_file_browser:
        double_click_in_file_browser(browser, notebook.name)
    else:  # ?reset: a fresh workspace, so the previous lecture is not reopened beside it
        browser.navigate(f"{base}/lab/tree/{rel}?reset&token={token}")
    # Its tab in front, its toolbar saying idle, and the server's kernel for it idle (the
    # toolbar can say idle before the kernel has started).
    browser.wait_for(
        lambda: (
            browser.evaluate(CURRENT_TAB_JS) == notebook.name
            and browser.evaluate(KERNEL_IDLE_JS)
            and kernel_idle(base, token, rel)
        ),
        300,
        f"{rel} open, kernel idle",
    )
    browser.pump(2.0)  # the kernel's metadata reaches the notebook model
    before = notebook.stat().st_mtime_ns
    press_ctrl_s(browser)
    last: list[bytes | None] = [None]
    browser.wait_for(lambda: saved_and_settled(notebook, before, last), 180, f"{rel} saved")
    try:
        browser.wait_for(lambda: tab_clean(browser, notebook.name), 60, f"{rel}'s tab clean")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; the tabs: {browser.evaluate(TABS_JS)}") from None
