"""Start JupyterLab for the course (what `make lab` runs) and print the URL that really serves it.

    python tools/dev/lab.py [--port 8888]

- Bound to 127.0.0.1 only, with a fresh random token every start. The token reaches the server
  in its environment (``JUPYTER_TOKEN``), never on a command line, where any local user could
  read it with ``ps``.
- If the port is taken (another JupyterLab, say), the next free one is used; the URL is printed
  only once the server answers on it with this token.
- The URL opens ``README.md`` rendered as a page (Markdown files open in the Markdown preview:
  a default setting in a private, temporary config folder; your own settings still win).
- Opening a lecture does not change it: JupyterLab writes the kernel's metadata into every
  notebook it opens, and the lectures are stored in that form (``tools/notebooks/nbbuild.py``), except the
  kernel's exact Python version, which this server does not save (:func:`pre_save`) and adds
  when it serves a notebook (``tools/dev/lab_contents.py``). So after opening (unrun) a lecture,
  ``git status`` stays clean and its tab shows no unsaved dot.
- No "Jupyter news" notification and no update check (the course pins its JupyterLab).
- Ctrl-C twice (or Ctrl-C and ``y``) stops the server, as usual for Jupyter.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
LANDING = "lab/tree/README.md"
# Markdown opens rendered, not in the text editor (JupyterLab's docmanager setting).
# No news or update notifications (JupyterLab asks on first start whether to fetch news).
SETTING_OVERRIDES = {
    "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"markdown": "Markdown Preview"}},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}
# The server's side: the hook below runs before every save; notebooks are served with the
# kernel's Python version, so that an unrun lecture opens without the unsaved dot
# (tools/dev/lab_contents.py).
SERVER_CONFIG = {
    "ContentsManager": {"pre_save_hook": "tools.dev.lab.pre_save"},
    "ServerApp": {"contents_manager_class": "tools.dev.lab_contents.CourseContentsManager"},
}


def pre_save(model: dict, path: str, **kwargs) -> None:
    """Jupyter pre-save hook: a notebook is saved without the kernel's exact Python version
    (``metadata.language_info.version``, which JupyterLab adds on opening). It differs from
    machine to machine, and would make every opened lecture differ from the committed one."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    info = model["content"].get("metadata", {}).get("language_info")
    if isinstance(info, dict):
        info.pop("version", None)


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port(start: int, tries: int = 50) -> int:
    """The first port from ``start`` on that nothing listens on."""
    for port in range(start, start + tries):
        if port_is_free(port):
            return port
    raise SystemExit(f"no free port in {start}..{start + tries - 1}; try: make lab LAB_PORT=9000")


def private_config_dir() -> Path:
    """A temporary Jupyter config folder (mode 0700) holding the course's default settings."""
    folder = Path(tempfile.mkdtemp(prefix="attention-course-lab-"))
    (folder / "labconfig").mkdir()
    overrides = folder / "labconfig" / "default_setting_overrides.json"
    overrides.write_text(json.dumps(SETTING_OVERRIDES, indent=1))
    (folder / "jupyter_server_config.json").write_text(json.dumps(SERVER_CONFIG, indent=1))
    return folder


def server_command(port: int, root: Path = ROOT) -> list[str]:
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ip={HOST}", f"--port={port}"]
    cmd += ["--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}"]
    if (
        hasattr(os, "getuid") and os.getuid() == 0
    ):  # containers, CI: Jupyter refuses root without it
        cmd.append("--allow-root")
    return cmd


def answers(port: int, token: str) -> bool:
    """True when the server on ``port`` accepts this token (so it is ours)."""
    req = urllib.request.Request(
        f"http://{HOST}:{port}/api/status", headers={"Authorization": f"token {token}"}
    )
    try:
        with urllib.request.urlopen(req, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def start(
    port: int, token: str, config: Path, timeout: float = 120, root: Path = ROOT
) -> subprocess.Popen | None:
    """Start the server on ``port``; return it once it answers, or None if it exited (port taken)."""
    env = dict(os.environ, JUPYTER_TOKEN=token)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
        filter(None, [str(config), os.environ.get("JUPYTER_CONFIG_PATH")])
    )
    # The server imports the pre-save hook (tools.dev.lab.pre_save) from this repository.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    proc = subprocess.Popen(server_command(port, root), cwd=root, env=env)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None:
            if answers(port, token):
                return proc
            if time.monotonic() > deadline:
                raise SystemExit(f"JupyterLab did not answer on port {port} within {timeout:.0f} s")
            time.sleep(0.3)
    except BaseException:  # Ctrl-C or the timeout while starting: do not leave the server behind
        proc.terminate()
        proc.wait()
        raise
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8888, help="first port to try (default 8888)")
    parser.add_argument("--root-dir", type=Path, default=ROOT,
                        help="the folder to serve (default: the course; tests serve a copy)")  # fmt: skip
    args = parser.parse_args(argv)
    token = secrets.token_hex(24)
    config = private_config_dir()
    try:
        return serve(args.port, token, config, args.root_dir.resolve())
    finally:
        shutil.rmtree(config, ignore_errors=True)


def serve(first_port: int, token: str, config: Path, root: Path = ROOT) -> int:
    print("Starting JupyterLab (the first start takes a little longer) ...", flush=True)
    port, proc = first_port, None
    for _ in range(5):  # another program may take the free port between our check and the start
        port = free_port(port)
        if port != first_port:
            print(f"Port {first_port} is in use; using port {port}.", flush=True)
        proc = start(port, token, config, root=root)
        if proc is not None:
            break
        port += 1
    if proc is None:
        raise SystemExit("JupyterLab could not start; see its messages above.")
    print(
        f"\n  Open the course at: http://{HOST}:{port}/{LANDING}?token={token}\n"
        "  (Ctrl-C twice to stop; pick the port: make lab LAB_PORT=9000)\n",
        flush=True,
    )
    signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # Jupyter asks or stops on Ctrl-C itself; we wait for it
            continue


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
