"""Lecture 09's attention views, drawn by a real browser with no network.

1. The lecture is executed and exported to HTML (tools/site/export_html.py) and opened in headless
   Chromium from a file:// URL.
2. The same executed notebook is saved (trusted), then opened in a JupyterLab 4 that this test
   starts on 127.0.0.1 with a random token and isolated config, data and runtime directories
   (and stops afterwards, with its kernel).
3. The same, in the classic notebook interface (Jupyter Notebook 7, ``jupyter notebook``), at
   ``/notebooks/<name>.ipynb``.

All three check, for every view: the SVG has one line per attention weight (heads x queries x
keys, or layers x heads x queries x keys for the model view); switching the head view's layer
redraws it; no console errors (in the servers, those of the views' frames: the front end's own
are not the views'); no request leaves the machine. Every wait is bounded. Skipped, with a
message, only where no Chromium is installed (.ci/run installs Debian's package).
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import nbformat
import pytest
from _browser import (
    SWITCH_LAYER_JS,
    VIEW_STATE_JS,
    Browser,
    environment_without_proxies,
)

from tools.notebooks.nbbuild import run_notebook
from tools.site.export_html import export_offline_html

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # `make slow`, not `make unit`
LECTURE = ROOT / "notebooks" / "09_attention_visualisation.ipynb"
VENV_BIN = Path(sys.executable).parent
DRAW_TIMEOUT = 90  # seconds for every view of a page to draw (2 busy cores)


@pytest.fixture(scope="module")
def executed_lecture(chromium) -> nbformat.NotebookNode:
    """Lecture 09 with its outputs: the committed file has the large view outputs stripped."""
    nb = nbformat.read(LECTURE, as_version=4)
    run_notebook(nb, LECTURE.parent, timeout=300)
    return nb


def expected_views(nb) -> dict[str, dict]:
    """Every view the notebook displays: its id, kind, layers and how many lines it draws."""
    views = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            page = out.get("data", {}).get("text/html", "")
            if "course-lib-attention-view" not in page:
                continue
            view_id = re.search(r'<iframe id="([^"]+)"', page).group(1)
            srcdoc = html.unescape(re.search(r'srcdoc="([^"]*)"', page).group(1))
            params = json.loads(re.search(r"const params = (.*?); // HACK", srcdoc, re.S).group(1))
            attn = params["attention"][0]["attn"]  # (layers, heads, n_q, n_k) as nested lists
            n_layers, n_heads, n_q, n_k = (
                len(attn),
                len(attn[0]),
                len(attn[0][0]),
                len(attn[0][0][0]),
            )
            kind = "model" if "total_heads" in params else "head"
            views[view_id] = {
                "kind": kind,
                "lines": n_heads * n_q * n_k * (n_layers if kind == "model" else 1),
                "layers": [str(x) for x in params["include_layers"]],
            }
    return views


def wait_until_drawn(browser: Browser, expected: dict[str, dict]) -> dict[str, tuple]:
    """Wait for every expected view to draw all its lines; return {id: (frame context key)}."""

    def drawn():
        found = {v["id"]: (key, v) for key, v in browser.evaluate_everywhere(VIEW_STATE_JS)}
        if set(found) >= set(expected) and all(
            found[i][1]["lines"] == expected[i]["lines"] for i in expected
        ):
            return found
        return None

    try:
        return browser.wait_for(drawn, DRAW_TIMEOUT, f"{len(expected)} attention views to draw")
    except TimeoutError:
        got = {v["id"]: v["lines"] for _, v in browser.evaluate_everywhere(VIEW_STATE_JS)}
        want = {i: e["lines"] for i, e in expected.items()}
        pytest.fail(
            f"views not drawn: expected lines {want}, got {got}; errors {browser.console_errors}"
        )


def check_layer_switch(browser: Browser, found: dict, expected: dict) -> None:
    """In each multi-layer head view, choosing another layer redraws the lines."""
    switched = 0
    for view_id, info in expected.items():
        if info["kind"] != "head" or len(info["layers"]) < 2:
            continue
        key, before = found[view_id]
        target = info["layers"][-1] if before["layer"] != info["layers"][-1] else info["layers"][0]
        browser.evaluate(SWITCH_LAYER_JS % json.dumps(target), *key)

        def redrawn(key=key, before=before, target=target):
            now = browser.evaluate(VIEW_STATE_JS, *key)
            return now if now["layer"] == target and now["drawing"] != before["drawing"] else None

        now = browser.wait_for(redrawn, 20, f"layer {target} of {view_id} to draw")
        assert now["lines"] == info["lines"]
        switched += 1
    assert switched >= 1, "the lecture should show at least one head view with several layers"


def test_exported_lecture_renders_offline(chromium, executed_lecture, tmp_path):
    expected = expected_views(executed_lecture)
    assert sum(v["kind"] == "model" for v in expected.values()) >= 1
    page = tmp_path / "09_attention_visualisation.html"
    page.write_text(export_offline_html(executed_lecture), encoding="utf-8")

    with Browser(chromium) as browser:
        browser.navigate(page.as_uri())
        found = wait_until_drawn(browser, expected)
        check_layer_switch(browser, found, expected)
        browser.pump(1.0)  # late errors, if any
        assert browser.console_errors == []
        assert browser.external_requests() == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Jupyter server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"the Jupyter server did not answer {url} within {timeout} s")


@contextlib.contextmanager
def _jupyter_server(app: str, executed_lecture, tmp_path: Path, extra_args: Sequence[str] = ()):
    """Save the lecture as a trusted notebook and serve it with ``jupyter {app}``.

    The server runs on 127.0.0.1 with a random token, with its own config, data, runtime and
    settings directories under ``tmp_path`` (nothing of the user's Jupyter set-up is read), and
    is stopped, with the kernels it started, on exit. Yields ``(base URL, token, notebook)``.
    """
    root, home = tmp_path / "root", tmp_path / "home"
    root.mkdir()
    env = environment_without_proxies()
    env.update(
        HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), HF_HUB_OFFLINE="1",
    )  # fmt: skip
    # Draw every cell, not only those in view (JupyterLab 4 and Notebook 7, which is built on
    # the same notebook plugin and reads the same settings, window long notebooks).
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    # Saved as a user's Jupyter saves it: with its outputs, and signed (trusted) for this
    # server; untrusted HTML outputs are not rendered.
    notebook = root / "09_attention_visualisation.ipynb"
    nbformat.write(executed_lecture, notebook)
    subprocess.run([str(VENV_BIN / "jupyter"), "trust", str(notebook)], env=env, check=True,
                   capture_output=True, timeout=60)  # fmt: skip

    port, token = _free_port(), secrets.token_hex(16)
    args = [
        str(VENV_BIN / "jupyter"), app, "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", *extra_args,
    ]  # fmt: skip
    if os.geteuid() == 0:
        args.append("--allow-root")  # both servers refuse to run as root without it
    log = open(tmp_path / f"{app}.log", "w")
    server = subprocess.Popen(
        args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for_server(f"{base}/api/status?token={token}", server, timeout=90)
        yield base, token, notebook
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)  # the server and the kernel it started
            server.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
        log.close()


def _check_views_in_server(chromium: str, url: str, notebook: Path) -> None:
    """Open ``url`` (a notebook page of a running server) and check every view in it."""
    expected = expected_views(nbformat.read(notebook, as_version=4))
    with Browser(chromium) as browser:
        browser.navigate(url)
        found = wait_until_drawn(browser, expected)
        check_layer_switch(browser, found, expected)
        browser.pump(1.0)  # late errors, if any
        # Only the views' frames: the front end itself may log unrelated errors (e.g. offline).
        view_sessions = {key[0] for key, _ in found.values()}
        view_errors = [e for e in browser.console_errors if e["session"] in view_sessions]
        assert view_errors == []
        assert browser.external_requests() == []


def test_saved_notebook_reopened_in_jupyterlab(chromium, executed_lecture, tmp_path):
    lab_args = ("--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate")  # fmt: skip
    with _jupyter_server("lab", executed_lecture, tmp_path, lab_args) as (base, token, notebook):
        _check_views_in_server(chromium, f"{base}/lab/tree/{notebook.name}?token={token}", notebook)


def test_saved_notebook_reopened_in_classic_notebook(chromium, executed_lecture, tmp_path):
    # Jupyter Notebook 7, the "classic" single-document interface (/notebooks/<path>).
    with _jupyter_server("notebook", executed_lecture, tmp_path) as (base, token, notebook):
        _check_views_in_server(
            chromium, f"{base}/notebooks/{notebook.name}?token={token}", notebook
        )
