"""Take the course's updates (what `make update` runs), whatever you did in your clone.

    python tools/dev/update.py

`git pull` refuses an update to any file you changed, and opening, running and saving a lecture
changes it (its outputs). So this script first fetches the update, then sets aside each of your
changed or untracked files that the update would overwrite: it is copied to
``my-work/kept-<date-time>/<same path>`` (``my-work/`` is ignored by git) and the file returns to
the committed version. Then it fast-forwards to the update. Files the update does not touch stay
as they are, and nothing is ever deleted: your run of a lecture is in ``my-work/kept-...``, the
updated lecture in its place. If you made commits of your own, it stops and says so (then: git pull).

A JupyterLab (or Jupyter Notebook) serving the clone keeps the old version of every notebook
open in a tab, and its next save (autosave, Ctrl-S, or "Overwrite" in its "File Changed"
dialog) would write the old version back over the update. So before changing anything, this
script asks every running Jupyter server of yours that serves the clone (their files in
Jupyter's runtime folder) which notebooks are open in a tab (a kernel session with a browser
connected). If one of the notebooks the update changes is open, it stops, names them and asks
you to close those tabs; run it again afterwards, and reopen them to see the update.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def git(*args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed:\n{out.stderr.strip()}")
    return out.stdout


def lines(text: str) -> set[str]:
    return {line for line in text.split("\0") if line}


def runtime_dirs() -> list[Path]:
    """Where Jupyter servers write ``jpserver-<pid>.json`` (jupyter_core's rule, without it)."""
    if os.environ.get("JUPYTER_RUNTIME_DIR"):
        return [Path(os.environ["JUPYTER_RUNTIME_DIR"])]
    if os.environ.get("JUPYTER_DATA_DIR"):
        return [Path(os.environ["JUPYTER_DATA_DIR"]) / "runtime"]
    home = Path.home()
    if sys.platform == "darwin":
        data = home / "Library" / "Jupyter"
    elif os.name == "nt":
        data = Path(os.environ.get("APPDATA", home)) / "jupyter"
    else:
        data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share") / "jupyter"
    return [data / "runtime"]


def _alive(pid: object) -> bool:
    try:
        os.kill(int(pid), 0)  # signal 0: only asks whether the process exists
    except (OSError, TypeError, ValueError, OverflowError):
        return False
    return True


def servers() -> list[dict]:
    """The running Jupyter servers that serve this clone (its folder or a folder above it)."""
    found = []
    for folder in runtime_dirs():
        for info_file in sorted(folder.glob("*server-*.json")):  # jpserver- and nbserver-
            try:
                info = json.loads(info_file.read_text(encoding="utf-8"))
                root = Path(info.get("root_dir") or info["notebook_dir"]).resolve()
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if _alive(info.get("pid")) and (root == ROOT or root in ROOT.parents):
                found.append(dict(info, root=root))
    return found


def open_notebooks(server: dict) -> list[str] | None:
    """The notebooks (paths in this clone) that a browser has open on ``server``: those whose
    kernel has a connection. None if the server does not answer."""
    url = server.get("url", "").rstrip("/") + "/api/sessions"
    request = urllib.request.Request(
        url, headers={"Authorization": f"token {server.get('token', '')}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            sessions = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    paths = []
    for session in sessions:
        kernel = session.get("kernel") or {}
        if kernel.get("connections", 1) == 0:  # its tab was closed; the kernel still runs
            continue
        path = (server["root"] / urllib.parse.unquote(session.get("path", ""))).resolve()
        if ROOT in path.parents:
            paths.append(path.relative_to(ROOT).as_posix())
    return paths


def refuse_if_open(incoming: set[str]) -> None:
    """Stop, before anything changes, if a Jupyter server has one of ``incoming`` open."""
    for server in servers():
        where = server.get("url", "a Jupyter server")
        names = open_notebooks(server)
        if names is None:
            print(f"Note: a Jupyter server runs in this folder ({where}, process "
                  f"{server.get('pid')}) but did not answer; if it has a course notebook open, "
                  "close that tab now and reopen it after the update.")  # fmt: skip
            continue
        clash = sorted(set(names) & incoming)
        if clash:
            raise SystemExit(
                f"JupyterLab ({where}) has open the course files the update replaces:\n"
                + "".join(f"  {name}\n" for name in clash)
                + "Its next save (or autosave, or 'Overwrite' in its 'File Changed' dialog) "
                "would write the old version back over the update.\n"
                "Save what you want to keep, close those tabs (File > Close Tab), run "
                "`make update` again, then reopen them. Nothing was changed."
            )


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    if git("rev-parse", "--is-inside-work-tree", check=False).strip() != "true":
        raise SystemExit("not a git clone: download the course again to update it")
    upstream = git("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}", check=False).strip()
    if not upstream:
        raise SystemExit("this branch follows no upstream branch: run `git pull <remote> <branch>`")
    print(f"Fetching the course's updates ({upstream}) ...", flush=True)
    git("fetch", "--quiet")
    if git("rev-list", "--count", "@{u}..HEAD").strip() != "0":
        raise SystemExit("you have commits of your own on this branch: run `git pull` and merge")
    incoming = lines(git("diff", "-z", "--name-only", "HEAD", "@{u}"))
    if not incoming:
        print("Already up to date.")
        return 0
    refuse_if_open(incoming)
    changed = lines(git("diff", "-z", "--name-only", "HEAD"))  # staged or not
    untracked = lines(git("ls-files", "-z", "--others", "--exclude-standard"))
    clash = sorted((changed | untracked) & incoming)
    kept = ROOT / "my-work" / time.strftime("kept-%Y%m%d-%H%M%S")
    for rel in clash:
        src = ROOT / rel
        if src.exists():
            (kept / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, kept / rel)
        if rel in untracked:
            src.unlink()
        else:
            git("checkout", "HEAD", "--", rel)
    git("merge", "--ff-only", "--quiet", "@{u}")
    print(f"Updated: {len(incoming)} course files changed.")
    if clash:
        where = kept.relative_to(ROOT)
        print(f"Your versions of the {len(clash)} files the update changes are kept in {where}/:")
        print("\n".join(f"  {rel}" for rel in clash))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
