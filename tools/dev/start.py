"""Your own copy of a lecture's exercises (or quiz) in the git-ignored ``my-work/`` (what
`make start` runs).

    python tools/dev/start.py 1          # or 01, 11, 01_softmax, exercises/01_softmax.ipynb
    -> my-work/01_softmax_exercises.ipynb
    python tools/dev/start.py q1         # or q01, 01_softmax_quiz, quizzes/01_softmax_quiz.ipynb
    -> my-work/01_softmax_quiz.ipynb

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
USAGE = (
    "usage: make start NB=01   (a lecture number, or a name such as 01_softmax);\n"
    "       make start NB=q01  (that lecture's quiz)"
)


def exercises(folder: str = "exercises") -> list[str]:
    """The stems of the notebooks in ``folder`` (``01_softmax``, ... or ``01_softmax_quiz``, ...),
    as committed if this is a git clone."""
    listed = subprocess.run(["git", "ls-files", f"{folder}/*.ipynb"], cwd=ROOT,
                            capture_output=True, text=True)  # fmt: skip
    names = listed.stdout.split() if listed.returncode == 0 else []
    names = names or [f"{folder}/{p.name}" for p in (ROOT / folder).glob("*.ipynb")]
    return sorted(Path(n).stem for n in names if re.match(r"\d\d_", Path(n).name))


def wants_quiz(wanted: str) -> bool:
    """``q14``, ``Q 14``, ``14_assistant_quiz``, ``quizzes/14_assistant_quiz.ipynb``: a quiz."""
    key = Path(wanted.strip()).name.removesuffix(".ipynb")
    return bool(re.fullmatch(r"[qQ]\s*\d{1,2}", key)) or key.endswith("_quiz")


def choose(wanted: str, stems: list[str]) -> str:
    """The one exercise ``wanted`` names; SystemExit (with the list) for none or several."""
    key = Path(wanted.strip()).name.removesuffix(".ipynb").removesuffix("_exercises")
    key = re.sub(r"^[qQ]\s*(?=\d)", "", key).removesuffix("_quiz")
    stems_by_lecture = {s.removesuffix("_quiz"): s for s in stems}
    stems = list(stems_by_lecture)
    found = _find(key, stems)
    if len(found) == 1:
        return stems_by_lecture[found[0]]
    quiz = any(s != t for t, s in stems_by_lecture.items())
    prefix = "q" if quiz else ""
    listing = "\n".join(f"  make start NB={prefix}{s[:2]}   ({stems_by_lecture[s]})" for s in stems)
    if not key:
        raise SystemExit(USAGE)
    what = "several lectures: " + ", ".join(found) if found else "no lecture"
    kind = "quizzes" if quiz else "lectures with exercises"
    raise SystemExit(f"NB={wanted} matches {what}. The {kind}:\n{listing}")


def _find(key: str, stems: list[str]) -> list[str]:
    if re.fullmatch(r"\d{1,2}", key):
        return [s for s in stems if s[:2] == f"{int(key):02d}"]
    return [s for s in stems if s == key] or [s for s in stems if s.startswith(key)]


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    if len(argv) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    folder = "quizzes" if wants_quiz(argv[0]) else "exercises"
    stem = choose(argv[0], exercises(folder))
    dest = (
        ROOT / "my-work" / (f"{stem}.ipynb" if folder == "quizzes" else f"{stem}_exercises.ipynb")
    )
    rel = dest.relative_to(ROOT)
    if dest.exists():
        print(f"{rel} already exists: your work is kept, nothing copied.")
        return 0
    shown = subprocess.run(["git", "show", f"HEAD:{folder}/{stem}.ipynb"], cwd=ROOT,
                           capture_output=True)  # fmt: skip
    text = shown.stdout if shown.returncode == 0 else (ROOT / folder / f"{stem}.ipynb").read_bytes()
    dest.parent.mkdir(exist_ok=True)
    dest.write_bytes(text)
    grade = "check it in the notebook" if folder == "quizzes" else f"grade it: make grade NB={rel}"
    print(f"Your copy: {rel}  ({grade})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
