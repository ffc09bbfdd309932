"""Your own copy of a lecture's exercises in the git-ignored ``my-work/`` (what `make start` runs).

    python tools/dev/start.py 1          # or 01, 11, 01_softmax, exercises/01_softmax.ipynb
    -> my-work/01_softmax_exercises.ipynb

The copy is named ``NN_topic_exercises.ipynb`` so that its tab in JupyterLab is not confused with
the lecture's (``notebooks/NN_topic.ipynb``). An existing copy is never overwritten. The exercise
is copied as committed (``git show HEAD:...``), so answers typed into ``exercises/`` itself are not
carried over. A number or name that matches no lecture, or several, is refused with the list.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
USAGE = "usage: make start NB=01   (a lecture number, or a name such as 01_softmax)"


def exercises() -> list[str]:
    """The exercise notebooks' stems (``01_softmax``, ...), as committed if this is a git clone."""
    listed = subprocess.run(["git", "ls-files", "exercises/*.ipynb"], cwd=ROOT,
                            capture_output=True, text=True)  # fmt: skip
    names = listed.stdout.split() if listed.returncode == 0 else []
    names = names or [f"exercises/{p.name}" for p in (ROOT / "exercises").glob("*.ipynb")]
    return sorted(Path(n).stem for n in names if re.match(r"\d\d_", Path(n).name))


def choose(wanted: str, stems: list[str]) -> str:
    """The one exercise ``wanted`` names; SystemExit (with the list) for none or several."""
    key = Path(wanted.strip()).name.removesuffix(".ipynb").removesuffix("_exercises")
    if re.fullmatch(r"\d{1,2}", key):
        found = [s for s in stems if s[:2] == f"{int(key):02d}"]
    else:
        found = [s for s in stems if s == key] or [s for s in stems if s.startswith(key)]
    if len(found) == 1:
        return found[0]
    listing = "\n".join(f"  make start NB={s[:2]}   ({s})" for s in stems)
    if not key:
        raise SystemExit(USAGE)
    what = "several lectures: " + ", ".join(found) if found else "no lecture"
    raise SystemExit(f"NB={wanted} matches {what}. The lectures with exercises:\n{listing}")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    stem = choose(argv[0], exercises())
    dest = ROOT / "my-work" / f"{stem}_exercises.ipynb"
    rel = dest.relative_to(ROOT)
    if dest.exists():
        print(f"{rel} already exists: your work is kept, nothing copied.")
        return 0
    shown = subprocess.run(["git", "show", f"HEAD:exercises/{stem}.ipynb"], cwd=ROOT,
                           capture_output=True)  # fmt: skip
    text = (
        shown.stdout
        if shown.returncode == 0
        else (ROOT / "exercises" / f"{stem}.ipynb").read_bytes()
    )
    dest.parent.mkdir(exist_ok=True)
    dest.write_bytes(text)
    print(f"Your copy: {rel}  (grade it: make grade NB={rel})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
