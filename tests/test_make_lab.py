"""`make lab` really serves the course: localhost only, a non-empty token, the notebooks listed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # `make slow`, not `make unit`


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.skipif(not (ROOT / ".venv" / ".installed").exists(), reason="needs `make venv` first")
def test_make_lab_serves_the_course_with_a_token():
    port = _free_port()
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"LAB_PORT={port}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        url, lines = None, []
        deadline = time.monotonic() + 20
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            m = re.search(
                rf"http://127\.0\.0\.1:{port}/lab/tree/README\.md\?token=([0-9a-f]+)", line
            )
            if m:
                url, token = m.group(0), m.group(1)
        assert url, "make lab printed no URL:\n" + "".join(lines)
        assert len(token) >= 32
        api = f"http://127.0.0.1:{port}/api/contents/notebooks"
        deadline = time.monotonic() + 60
        while True:  # wait until the server answers
            try:
                code = _status(f"{api}?token={token}")
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "JupyterLab did not start within 60 s"
                time.sleep(0.5)
        assert code == 200
        assert _status(api) == 403, "the server must refuse requests without the token"
        with urllib.request.urlopen(f"{api}?token={token}", timeout=5) as r:
            names = {c["name"] for c in json.load(r)["content"]}
        assert "01_softmax.ipynb" in names
        if shutil.which("ss"):
            listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
            assert f"0.0.0.0:{port} " not in listening and f"*:{port} " not in listening
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
