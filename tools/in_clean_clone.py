"""Run a command in a temporary clean clone of this repository's last commit.

    python tools/in_clean_clone.py make check      # what `make test` runs

`make test` checks the course, not the student's work: a student opens, runs and saves the
lectures, answers the exercises in place and saves notebooks of their own anywhere in their
clone, and none of that may fail the tests or be touched by them. So the tests run in a fresh
`git clone --shared` of HEAD in a temporary folder (a fraction of a second: the objects are
shared, not copied), exactly what CI sees on its clean checkout. The clone gets links to the
installed `.venv` and to the `build/vendor/` download cache; nothing else of the working tree.
`PYTHONPATH` points at the clone, so its `course_lib` is the one imported (also by the notebook
kernels nbval starts), not the working tree's. The folder is removed afterwards.

Uncommitted changes are therefore not tested: maintainers run `make check` on the working tree.
Without git (a downloaded zip), the command runs on the working tree and says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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


def main(argv: list[str]) -> int:
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
        env = dict(os.environ, PYTHONPATH=path)
        return subprocess.call(argv, cwd=dest, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
