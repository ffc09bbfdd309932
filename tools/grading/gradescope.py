"""Gradescope: an autograder zip for one exercise (or quiz) notebook, and what it runs there.

    make gradescope EXERCISE=01          # or 1, 01_softmax; q01 for lecture 01's quiz
    python -m tools.grading.gradescope build 01 [--out build/gradescope] [--visibility V]
    python -m tools.grading.gradescope run [--root /autograder]   # what run_autograder runs
    python -m tools.grading.gradescope check                      # can the sandbox start here?

``build`` writes ``build/gradescope/NN_topic_autograder.zip`` (``NN_topic_quiz_autograder.zip``):
``setup.sh`` and ``run_autograder`` at its root (Gradescope's two files), and ``course/``: the
course's tracked files that grading needs (``course_lib``, ``tools/grade``, ``tools/grading``,
the chosen template alone in ``exercises/`` or ``quizzes/``, the pinned requirements,
``pyproject.toml``) and ``gradescope.json`` (which template, the tests' visibility, the commit).
No solution, lecture, test or other template is in it. Upload it as the autograder of a
programming assignment with Gradescope's Ubuntu 24.04 base image.

``run`` grades the one notebook in ``ROOT/submission`` with the course's grader (the sandbox, the
checks in this process, a hidden seed) and writes ``ROOT/results/results.json`` in Gradescope's
format (https://gradescope-autograders.readthedocs.io/en/latest/specs/): one test per exercise
(name, number, score 1 or 0, max_score 1, output = the grader's feedback, visibility), the
total score, a summary as output, the student's stdout hidden, and the lecture, hidden seed and
"uses course_lib" flags in extra_data (for the instructor). The file is written by this
process after the notebook's processes are gone, into a new file renamed over any old one.

A submission with no notebook, several, a notebook over the grader's size limit
(:data:`~tools.grading.notebook.MAX_NOTEBOOK_BYTES`, 20 MB) or one that is not a notebook gets a
results.json with score 0 and the reason. Where the sandbox cannot start (a container without
namespaces), ``run`` refuses to run student code as root next to results.json: score 0 and the
reason, for the instructor in stdout; ``AUTOGRADER_ALLOW_NO_SANDBOX=1`` grades anyway (the
grader's note then says what is not isolated).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

from tools.dev.start import exercises as list_exercises
from tools.dev.start import wants_quiz
from tools.grading.notebook import MAX_NOTEBOOK_BYTES
from tools.grading.results import Result, _order, clean, label, print_summary

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONFIG = "gradescope.json"
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
# What grading needs of the course (tracked files only; the template is added alone).
SHIPPED = ("course_lib", "tools/__init__.py", "tools/grade", "tools/grading",
           "tools/notebooks/__init__.py", "tools/notebooks/make_exercises.py",
           "tools/dev/__init__.py", "tools/dev/start.py", "requirements.txt",
           "requirements-nodeps.txt", "pyproject.toml", "README.md", "LICENSE")  # fmt: skip
NOT_SHIPPED = ("tools/grading/cluster/",)  # cluster job files: not the autograder's
EXECUTABLE = ("setup.sh", "run_autograder")
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the same files give the same zip, byte for byte
POINTS = 1.0  # per exercise (per quiz item)


class BuildError(ValueError):
    pass


# --- build -------------------------------------------------------------------------------------


def choose_notebook(wanted: str) -> tuple[str, str]:
    """``"01"``, ``"1"``, ``"01_softmax"``, ``"exercises/01_softmax.ipynb"`` -> ``("exercises",
    "01_softmax")``; ``"q01"``, ``"01_softmax_quiz"`` -> ``("quizzes", "01_softmax_quiz")``."""
    folder = "quizzes" if wants_quiz(wanted) else "exercises"
    stems = list_exercises(folder)
    key = Path(wanted.strip()).name.removesuffix(".ipynb")
    key = re.sub(r"^[qQ]\s*(?=\d)", "", key).removesuffix("_quiz")
    by_lecture = {s.removesuffix("_quiz"): s for s in stems}
    if re.fullmatch(r"\d{1,2}", key):
        found = [s for s in by_lecture if s[:2] == f"{int(key):02d}"]
    else:
        found = [s for s in by_lecture if s == key] or [s for s in by_lecture if s.startswith(key)]
    if len(found) != 1:
        kind = "quiz" if folder == "quizzes" else "exercise notebook"
        prefix = "q" if folder == "quizzes" else ""
        choices = ", ".join(f"{prefix}{s[:2]} ({by_lecture[s]})" for s in by_lecture)
        what = "several: " + ", ".join(found) if found else "none"
        raise BuildError(
            f"EXERCISE={wanted!r} names {what} of the course's {kind}s; give one of: {choices}"
        )
    return folder, by_lecture[found[0]]


def _tracked(paths: tuple[str, ...]) -> list[str]:
    """The course's tracked files under ``paths`` (all files there outside a git clone)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
        names = sorted(n for n in out.split("\0") if n)
    except (OSError, subprocess.SubprocessError):
        names = []
    if not names:
        names = sorted(
            p.relative_to(ROOT).as_posix()
            for top in paths
            for p in ([ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        )
    return [n for n in names if not n.startswith(NOT_SHIPPED) and (ROOT / n).is_file()]


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def build(wanted: str, out: Path, visibility: str = "visible") -> Path:
    """Write the autograder zip for the notebook ``wanted`` names into ``out``; its path."""
    if visibility not in VISIBILITIES:
        raise BuildError(f"VISIBILITY must be one of {', '.join(VISIBILITIES)}, got {visibility!r}")
    folder, stem = choose_notebook(wanted)
    files = {f"course/{n}": (ROOT / n).read_bytes() for n in _tracked(SHIPPED)}
    files[f"course/{folder}/{stem}.ipynb"] = (ROOT / folder / f"{stem}.ipynb").read_bytes()
    config = {"template": stem, "folder": folder, "visibility": visibility,
              "points_per_test": POINTS, "commit": _commit()}  # fmt: skip
    files[f"course/{CONFIG}"] = (json.dumps(config, indent=1) + "\n").encode()
    for name in EXECUTABLE:
        files[name] = (HERE / "autograder" / name).read_bytes()
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{stem}_autograder.zip"
    partial = target.with_suffix(".zip.part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.external_attr = (0o755 if name in EXECUTABLE else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    os.replace(partial, target)
    return target


# --- run ---------------------------------------------------------------------------------------


def _results(tests: list[dict], output: str, seconds: float, extra: dict) -> dict:
    return {
        "score": sum(t["score"] for t in tests),
        "execution_time": round(seconds),
        "output": output,
        "stdout_visibility": "hidden",
        "extra_data": extra,
        "tests": tests,
    }


def _tests(exercises: list[str], verdicts: dict, visibility: str, points: float) -> list[dict]:
    tests = []
    for ex in exercises:
        ok, why = verdicts[ex]
        tests.append({
            "name": label(ex).capitalize(),
            "number": ex,
            "score": points if ok else 0.0,
            "max_score": points,
            "output": "Passed." if ok else clean(why, keep_newlines=True),
            "visibility": visibility,
        })  # fmt: skip
    return tests


def results_json(
    result: Result, exercises: list[str], visibility: str = "visible", points: float = POINTS
) -> dict:
    """Gradescope's results.json for one graded notebook: a test per exercise of the
    assignment (every one of them, failed with the reason when the notebook is not gradable)."""
    verdicts = {ex: result.exercises.get(ex, (False, result.error or "not graded"))
                for ex in exercises}  # fmt: skip
    passed = sum(ok for ok, _ in verdicts.values())
    lines = []
    if result.error:
        lines.append(f"Your notebook could not be graded: {clean(result.error)}")
    else:
        what = "items" if all(e.startswith("Q") for e in exercises) else "exercises"
        lines.append(f"Graded as {result.lecture}: {passed}/{len(exercises)} {what} passed.")
    if result.warning:
        lines.append(f"Note: {clean(result.warning)}")
    if result.hidden_seed is not None and passed < len(exercises):
        lines.append(f"(Hidden inputs: seed {result.hidden_seed}; your instructor can grade on "
                     "the same ones again.)")  # fmt: skip
    extra = {"lecture": result.lecture, "hidden_seed": result.hidden_seed,
             "uses_course_lib": {e: result.course_lib.get(e, []) for e in result.uses_course_lib},
             "notes": [clean(n) for n in result.notes]}  # fmt: skip
    tests = _tests(exercises, verdicts, visibility, points)
    return _results(tests, "\n".join(lines), result.seconds, extra)


def refusal(reason: str, exercises: list[str], visibility: str, seconds: float = 0.0) -> dict:
    """results.json when nothing can be graded: every test 0, with the reason."""
    verdicts = {ex: (False, reason) for ex in exercises}
    tests = _tests(exercises, verdicts, "visible" if visibility == "hidden" else visibility, POINTS)
    return _results(tests, reason, seconds, {"refused": True})


def find_submission(folder: Path, template: str) -> tuple[Path | None, str | None]:
    """The one notebook of a submission folder, or why there is none to grade."""
    if not folder.is_dir():
        return None, f"the submission folder {folder} does not exist (tell your instructor)"
    everything = sorted(
        p for p in folder.rglob("*") if ".ipynb_checkpoints" not in p.relative_to(folder).parts
    )
    notebooks = [p for p in everything if p.suffix == ".ipynb"]
    files = [clean(p.relative_to(folder)) for p in everything if not p.is_dir()]
    if not notebooks:
        listed = ", ".join(files[:8]) + (" …" if len(files) > 8 else "")
        found = f"it holds {len(files)} files ({listed})" if files else "it is empty"
        return None, (
            f"No notebook (.ipynb) in your submission: {found}. Upload your exercise notebook "
            f"({template}.ipynb, as Jupyter saved it)."
        )
    if len(notebooks) > 1:
        names = ", ".join(clean(p.relative_to(folder)) for p in notebooks[:8])
        return None, (
            f"Your submission holds {len(notebooks)} notebooks ({names}): upload only your "
            f"exercise notebook ({template}.ipynb)."
        )
    nb = notebooks[0]
    size = os.lstat(nb).st_size
    if size > MAX_NOTEBOOK_BYTES:
        return None, (
            f"{clean(nb.name)} is {size / 2**20:.1f} MB; the grader reads notebooks of at most "
            f"{MAX_NOTEBOOK_BYTES // 2**20} MB. Clear its outputs (Edit > Clear Outputs of All "
            "Cells), save it and upload it again."
        )
    return nb, None


def write_results(results_dir: Path, data: dict) -> Path:
    """results.json, written whole into a new file and renamed over any file of that name."""
    results_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=results_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    target = results_dir / "results.json"
    os.replace(tmp, target)
    return target


def run(root: Path, config: dict | None = None) -> int:
    """Grade ``root/submission`` and write ``root/results/results.json`` (what run_autograder
    does; ``config`` is the zip's gradescope.json); 0 when results.json was written."""
    from tools.grading.course import ROOT as COURSE_ROOT
    from tools.grading.course import _course
    from tools.grading.running import grade_many
    from tools.grading.sandbox import isolation, sandbox_available

    started = time.monotonic()
    if config is None:
        config = json.loads((COURSE_ROOT / CONFIG).read_text(encoding="utf-8"))
    visibility = config.get("visibility", "visible")
    points = float(config.get("points_per_test", POINTS))
    course = _course()  # every template, check and library file, before any student code
    template = course.templates[config["template"]]
    exercises = sorted(template.checks, key=_order)
    notebook, problem = find_submission(root / "submission", template.name)
    ok, why = sandbox_available()
    print(f"note: {isolation()}.")
    if problem is None and not ok and os.environ.get("AUTOGRADER_ALLOW_NO_SANDBOX") != "1":
        print(
            f"refused: the grader's sandbox cannot start in this container ({why}); student code "
            "would run as root beside results.json. Use a base image where it starts, or set "
            "AUTOGRADER_ALLOW_NO_SANDBOX=1 in run_autograder to grade without it."
        )
        problem = (
            "The autograder could not start its sandbox in this container, so it did not run "
            "your notebook: tell your instructor (the reason is in the autograder's log)."
        )
    if problem is not None:
        print(problem)
        write_results(root / "results", refusal(problem, exercises, visibility,
                                                time.monotonic() - started))  # fmt: skip
        return 0
    result = grade_many([notebook], 1)[0]
    print_summary(result)
    data = results_json(result, exercises, visibility, points)
    write_results(root / "results", data)
    print(f"\nscore {data['score']:g} of {len(exercises) * points:g}")
    return 0


def check() -> int:
    """Print whether the grader's sandbox can start here (setup.sh runs it; it never fails)."""
    from tools.grading.sandbox import isolation

    print(f"attention-course autograder: {isolation()}.")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.grading.gradescope",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the autograder zip of one exercise or quiz notebook")
    b.add_argument("exercise", help="01, 1, 01_softmax (exercises); q01, 01_softmax_quiz (quiz)")
    b.add_argument("--out", type=Path, default=ROOT / "build" / "gradescope",
                   help="the folder of the zip (default build/gradescope)")  # fmt: skip
    b.add_argument("--visibility", default="visible",
                   help=f"when students see each test: {', '.join(VISIBILITIES)}")  # fmt: skip
    r = sub.add_parser("run", help="grade ROOT/submission into ROOT/results/results.json")
    r.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")),
                   help="Gradescope's folder (default $AUTOGRADER_ROOT or /autograder)")  # fmt: skip
    sub.add_parser("check", help="say whether the grader's sandbox can start here")
    args = parser.parse_args(argv)
    if args.command == "check":
        return check()
    if args.command == "build":
        if not args.exercise.strip():
            parser.error("give the notebook: make gradescope EXERCISE=01 (or q01 for a quiz)")
        try:
            start = time.monotonic()
            zipped = build(args.exercise, args.out, args.visibility)
        except BuildError as exc:
            parser.error(str(exc))
        kib = zipped.stat().st_size / 1024
        print(f"wrote {zipped} ({kib:,.0f} KiB, {time.monotonic() - start:.1f} s): upload it as "
              "a programming assignment's autograder (base image: Ubuntu 24.04)")  # fmt: skip
        return 0
    try:
        return run(args.root)
    except Exception:  # a grader bug: Gradescope still gets a results.json saying so
        traceback.print_exc(file=sys.stdout)
        reason = "The autograder failed (not your notebook's fault): tell your instructor."
        try:
            write_results(args.root / "results", {"score": 0.0, "output": reason,
                                                  "stdout_visibility": "hidden"})  # fmt: skip
        except OSError:
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
