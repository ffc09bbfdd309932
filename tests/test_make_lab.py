"""`make lab` really serves the course: localhost only, a fresh token kept off every command line,
the README as landing page rendered as Markdown, and a busy port handled by moving to a free one.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from _lab import free_port, lab_process

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,  # `make slow`, not `make unit`
    pytest.mark.skipif(
        not (ROOT / ".venv" / ".installed").exists(), reason="needs `make venv` first"
    ),
]


def _get(url: str, token: str | None = None):
    """(status, body) of a GET, with the token in the Authorization header when given."""
    headers = {"Authorization": f"token {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def _session_cmdlines(pgid: int) -> list[str]:
    """Command lines of every process in the process group (make, the launcher, the server)."""
    lines = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if os.getpgid(int(proc.name)) == pgid:
                lines.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ProcessLookupError):
            continue
    return lines


def make_lab(port: int):
    """Run `make lab LAB_PORT=port` with a private HOME and Jupyter folders (tests/_lab.py);
    yield (url, port, token, process, output lines) once the URL is printed."""
    return lab_process(["make", "--no-print-directory", "lab", f"LAB_PORT={port}"])


def test_make_lab_serves_the_course_with_a_token():
    port = free_port()
    with make_lab(port) as (url, got_port, token, proc, _):
        assert got_port == port
        assert url == f"http://127.0.0.1:{port}/lab/tree/README.md?token={token}"
        assert len(token) >= 32
        # The URL is printed only once the server answers: no waiting needed.
        status, _ = _get(url)
        assert status == 200, "the landing page does not open"
        api = f"http://127.0.0.1:{port}/api/contents/notebooks"
        assert _get(api)[0] == 403, "the server must refuse requests without the token"
        status, body = _get(api, token)
        assert status == 200 and "01_softmax.ipynb" in {
            c["name"] for c in json.loads(body)["content"]
        }
        # README.md opens rendered (the Markdown preview), not as text in the editor.
        plugin = "@jupyterlab/docmanager-extension:plugin"
        status, body = _get(f"http://127.0.0.1:{port}/lab/api/settings/{plugin}", token)
        assert status == 200
        viewers = json.loads(body)["schema"]["properties"]["defaultViewers"]["default"]
        assert viewers["markdown"] == "Markdown Preview"
        # No "Jupyter news" question on first start, no update check (a default setting too).
        plugin = "@jupyterlab/apputils-extension:notification"
        status, body = _get(f"http://127.0.0.1:{port}/lab/api/settings/{plugin}", token)
        props = json.loads(body)["schema"]["properties"]
        assert props["fetchNews"]["default"] == "false", props["fetchNews"]
        assert props["checkForUpdates"]["default"] is False
        # The token is on no command line (`ps` shows those to every local user).
        cmdlines = _session_cmdlines(os.getpgid(proc.pid))
        assert any("jupyterlab" in c for c in cmdlines), cmdlines
        assert not [c for c in cmdlines if token in c]
        if shutil.which("ss"):
            listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
            assert f"0.0.0.0:{port} " not in listening and f"*:{port} " not in listening


def test_make_lab_moves_to_a_free_port_when_its_port_is_taken():
    with socket.socket() as busy:  # someone else's server on the requested port
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with make_lab(taken) as (url, port, token, _, lines):
            assert port != taken, "make lab printed a URL for the busy port"
            assert any(f"Port {taken} is in use; using port {port}" in line for line in lines)
            status, body = _get(f"http://127.0.0.1:{port}/api/contents/notebooks", token)
            assert status == 200 and b"01_softmax.ipynb" in body
            assert _get(url)[0] == 200


def test_the_landing_page_is_the_readme_rendered(chromium):
    """In a real browser the printed URL shows README.md as a page, with links to the lectures."""
    from _browser import Browser

    with make_lab(free_port()) as (url, _, _, _, _), Browser(chromium, timeout=120) as browser:
        browser.navigate(url)
        title = browser.wait_for(
            lambda: browser.evaluate(
                "(() => { const h = document.querySelector('.jp-RenderedMarkdown h1');"
                " return h && h.textContent; })()"
            ),
            180,
            "the README rendered as Markdown",
        )
        assert title.startswith("attention-course")
        links = browser.evaluate(
            "Array.from(document.querySelectorAll('.jp-RenderedMarkdown a'))"
            ".map(a => a.getAttribute('href') || '')"
        )
        assert any("notebooks/01_softmax.ipynb" in h for h in links), links
        editors = browser.evaluate("document.querySelectorAll('.jp-FileEditor').length")
        assert editors == 0, "README.md opened in the text editor"
