"""Take the course's updates (what `make update` runs), whatever you did in your clone.

    python tools/dev/update.py

`git pull` refuses an update to any file you changed, and opening, running and saving a lecture
changes it (its outputs). So this script first fetches the update, then sets aside each of your
changed or untracked files that the update would overwrite: it is copied to
``my-work/kept-<date-time>/<same path>`` (``my-work/`` is ignored by git) and the file returns to
the committed version. Then it fast-forwards to the update. Files the update does not touch stay
as they are, and nothing is ever deleted: your run of a lecture is in ``my-work/kept-...``, the
updated lecture in its place. If you made commits of your own, it stops and says so (then: git pull).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def git(*args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed:\n{out.stderr.strip()}")
    return out.stdout


def lines(text: str) -> set[str]:
    return {line for line in text.split("\0") if line}


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
