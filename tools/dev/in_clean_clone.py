"""Run a command in a temporary clean clone of this repository's last commit.

    python tools/dev/in_clean_clone.py make check      # what `make test` runs

`make test` checks the course, not the student's work: a student opens, runs and saves the
lectures, answers the exercises in place and saves notebooks of their own anywhere in their
clone, and none of that may fail the tests or be touched by them. So the tests run in a fresh
`git clone --shared` of HEAD in a temporary folder (a fraction of a second: the objects are
shared, not copied), exactly what CI sees on its clean checkout. The clone gets links to the
installed `.venv` and to the `build/vendor/` download cache; nothing else of the working tree.
`PYTHONPATH` points at the clone, so its `course_lib` is the one imported (also by the notebook
kernels nbval starts), not the working tree's. The folder is removed afterwards.

Nor does `make test` share any state with the student's own Jupyter, IPython or matplotlib:
JupyterLab keeps open tabs (workspaces), settings and its running servers' files under the home
folder, and a test server started with the defaults would reopen the student's tabs and overwrite
their workspace. Everything runs with a private, temporary HOME and Jupyter config, data, runtime,
workspaces and settings folders (:func:`private_home`), removed afterwards with the clone.

Uncommitted changes are therefore not tested: maintainers run `make check` on the working tree.
Without git (a downloaded zip), the command runs on the working tree and says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINKED = (".venv", "build/vendor")  # installed tools and download caches, not course content


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def clean_clone(dest: Path) -> str:
    """Clone HEAD of ROOT into ``dest`` (which must not exist), link LINKED; return HEAD's hash."""
    subprocess.run(
        ["git", "clone", "--quiet", "--shared", "--no-checkout", str(ROOT), str(dest)],
        check=True,
    )
    head = _git("rev-parse", "HEAD")
    subprocess.run(["git", "checkout", "--quiet", "--detach", head], cwd=dest, check=True)
    for rel in LINKED:
        src = ROOT / rel
        if src.exists():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).symlink_to(src.resolve(), target_is_directory=True)
    return head


# Where Jupyter, JupyterLab, IPython, matplotlib and other XDG programs keep per-user state.
_STATE_DIRS = {
    "JUPYTER_CONFIG_DIR": ".jupyter",
    "JUPYTER_DATA_DIR": ".local/share/jupyter",
    "JUPYTER_RUNTIME_DIR": ".local/share/jupyter/runtime",
    "JUPYTERLAB_SETTINGS_DIR": ".jupyter/lab/user-settings",
    "JUPYTERLAB_WORKSPACES_DIR": ".jupyter/lab/workspaces",
    "IPYTHONDIR": ".ipython",
    "MPLCONFIGDIR": ".config/matplotlib",
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_DATA_HOME": ".local/share",
}
# Variables that would make Jupyter read or write the user's folders anyway.
_UNSET = ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_PREFER_ENV_PATH", "JUPYTER_TOKEN",
          "JUPYTER_PLATFORM_DIRS", "XDG_RUNTIME_DIR")  # fmt: skip


def private_home(home: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with HOME = ``home`` (created, mode 0700)
    and every Jupyter/IPython/matplotlib/XDG state folder inside it: a server, kernel or browser
    started with it reads and writes none of the user's."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k not in _UNSET}
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    env["HOME"] = str(home)
    for var, rel in _STATE_DIRS.items():
        (home / rel).mkdir(mode=0o700, parents=True, exist_ok=True)
        env[var] = str(home / rel)
    return env


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    if not argv:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    try:
        _git("rev-parse", "--verify", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        print("in_clean_clone: not a git clone; running on the working tree instead.", flush=True)
        return subprocess.call(argv, cwd=ROOT)
    os.environ["GIT_OPTIONAL_LOCKS"] = "0"  # `git status` must not even refresh the index
    changed = [line for line in _git("status", "--porcelain").splitlines() if line]
    with tempfile.TemporaryDirectory(prefix="attention-course-") as tmp:
        dest = Path(tmp) / "clone"
        head = clean_clone(dest)
        print(f"Testing the course as committed ({head[:10]}) in a clean clone: {dest}", flush=True)
        if changed:
            print(
                f"  ({len(changed)} changed or untracked files in {ROOT} are yours and are "
                "neither tested nor touched; maintainers: `make check` tests the working tree)",
                flush=True,
            )
        path = os.pathsep.join(filter(None, [str(dest), os.environ.get("PYTHONPATH")]))
        env = private_home(Path(tmp) / "home", dict(os.environ, PYTHONPATH=path))
        return subprocess.call(argv, cwd=dest, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
