"""Grade exercise notebooks with nbval, trusting nothing the student saved.

    python tools/grade.py NOTEBOOK.ipynb                 # one student: summary, exit 0 iff all pass
    python tools/grade.py FOLDER_OR_FILES... --csv out.csv   # a class: one CSV row a notebook

How a notebook is graded:
1. The lecture it belongs to is read from its metadata (``course.exercise``, written by
   tools/make_exercises.py) or, failing that, from its file name (``NN_topic``).
2. Every cell that is not an answer cell is restored from the official exercise notebook
   (matched by cell id; a deleted check cell is put back), so editing a check changes nothing.
3. All saved outputs are dropped and every cell is tagged ``nbval-ignore-output``: nbval then
   re-executes the notebook top to bottom and a cell fails only if it raises. Checks raise on a
   wrong answer, so a saved "passed" line, or a student's own extra prints, decide nothing.
4. The per-cell results of nbval are mapped back to the exercises (check cells are tagged
   ``exercise-N.k``) and summarised.
"""

from __future__ import annotations

import argparse
import copy
import csv
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from make_exercises import CODE_STUB, MARKDOWN_STUB  # noqa: E402

EXERCISES = ROOT / "exercises"
_EXERCISE_TAG = re.compile(r"^exercise-(\d+\.\d+)$")


@dataclass
class Result:
    notebook: str
    lecture: str | None
    exercises: dict[str, tuple[bool, str]] = field(default_factory=dict)  # id -> (ok, reason)
    error: str | None = None  # the notebook could not be graded at all

    @property
    def all_passed(self) -> bool:
        return (
            self.error is None
            and bool(self.exercises)
            and all(ok for ok, _ in self.exercises.values())
        )


def exercise_id(cell) -> str | None:
    for tag in cell.get("metadata", {}).get("tags", []):
        m = _EXERCISE_TAG.match(tag)
        if m:
            return m.group(1)
    return None


def is_answer(cell) -> bool:
    return CODE_STUB in cell.source or MARKDOWN_STUB in cell.source


def find_template(nb: nbformat.NotebookNode, path: Path) -> Path:
    name = nb.metadata.get("course", {}).get("exercise")
    candidates = [name] if name else []
    m = re.match(r"(\d\d)", path.stem) or re.search(r"(\d\d)_", path.stem)
    if m:
        candidates += [p.stem for p in EXERCISES.glob(f"{m.group(1)}_*.ipynb")]
    for c in candidates:
        if (EXERCISES / f"{c}.ipynb").exists():
            return EXERCISES / f"{c}.ipynb"
    raise ValueError(f"cannot tell which lecture {path.name} belongs to (no course metadata)")


def assemble(student: nbformat.NotebookNode, template: nbformat.NotebookNode):
    """The notebook that is actually run: student answers, everything else official."""
    official = {c.id: c for c in template.cells if not is_answer(c)}
    cells = [copy.deepcopy(official.get(c.get("id"), c)) for c in student.cells]
    present = {c.get("id") for c in cells}
    for i, t in enumerate(template.cells):
        if t.id in official and t.id not in present:
            earlier = {tc.id for tc in template.cells[:i]}
            pos = max((j + 1 for j, c in enumerate(cells) if c.get("id") in earlier), default=0)
            cells.insert(pos, copy.deepcopy(t))
    nb = copy.deepcopy(template)
    nb.cells = cells
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            tags = [t for t in cell.metadata.get("tags", []) if not t.startswith("nbval-")]
            cell.metadata["tags"] = [*tags, "nbval-ignore-output"]
    return nb


def _reason(failure_text: str) -> str:
    """The student-facing line of a failure: our ExerciseError message, else the error's last line."""
    m = re.search(r"Exercise \d+\.\d+ is not right yet\.\n(.*?)(?:\n\n|\Z)", failure_text, re.S)
    if m:
        return " ".join(m.group(1).split())[:300]
    errors = re.findall(r"^\s*(\w*(?:Error|Exception)\w*: .*)$", failure_text, re.M)
    return errors[-1].strip()[:300] if errors else "the cell raised an error"


def grade(path: Path, timeout: int = 300) -> Result:
    path = Path(path)
    try:
        student = nbformat.read(path, as_version=4)
        template_path = find_template(student, path)
        template = nbformat.read(template_path, as_version=4)
    except Exception as exc:  # unreadable JSON, unknown lecture
        return Result(str(path), None, error=f"not gradable: {type(exc).__name__}: {exc}")
    result = Result(str(path), template_path.stem)
    nb = assemble(student, template)
    checks = {}  # nbval's "Cell N" (N counts code cells) -> exercise id
    n = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            if exercise_id(cell):
                checks[f"Cell {n}"] = exercise_id(cell)
            n += 1
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        run_nb, report = Path(tmp) / "graded.ipynb", Path(tmp) / "report.xml"
        nbformat.write(nb, run_nb)
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval",
            "--nbval-current-env",
            f"--nbval-cell-timeout={timeout}",
            "-o",
            "addopts=",
            f"--junitxml={report}",
            str(run_nb),
        ]
        subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=30 * timeout)
        if not report.exists():
            result.error = "nbval did not run"
            return result
        for case in ET.parse(report).getroot().iter("testcase"):
            ex = checks.get(case.get("name", "").split("::")[-1].strip())
            if ex is None:
                continue
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            if bad is None and case.find("skipped") is None:
                result.exercises[ex] = (True, "")
            else:
                text = "" if bad is None else (bad.get("message", "") + "\n" + (bad.text or ""))
                result.exercises[ex] = (False, _reason(text) if bad is not None else "skipped")
    for ex in checks.values():
        result.exercises.setdefault(ex, (False, "the check cell did not run"))
    return result


def print_summary(r: Result) -> None:
    print(f"\n{r.notebook}  ({r.lecture or '?'})")
    if r.error:
        print(f"  ❌ {r.error}")
        return
    for ex, (ok, why) in sorted(
        r.exercises.items(), key=lambda kv: [int(x) for x in kv[0].split(".")]
    ):
        print(f"  {'✅' if ok else '❌'} Exercise {ex}" + ("" if ok else f": {why}"))
    passed = sum(ok for ok, _ in r.exercises.values())
    print(f"  {passed}/{len(r.exercises)} exercises passed")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", type=Path, help="notebooks or folders of notebooks")
    parser.add_argument("--csv", type=Path, help="write one row per notebook to this CSV file")
    args = parser.parse_args(argv)
    files = []
    for p in args.paths:
        files += sorted(p.rglob("*.ipynb")) if p.is_dir() else [p]
    if not files:
        parser.error("no notebooks found")
    results = [grade(f) for f in files]
    for r in results:
        print_summary(r)
    if args.csv:
        ids = sorted(
            {e for r in results for e in r.exercises}, key=lambda s: [int(x) for x in s.split(".")]
        )
        with args.csv.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(
                ["notebook", "lecture", *[f"exercise {e}" for e in ids], "passed", "total", "error"]
            )
            for r in results:
                cells = [
                    ("" if e not in r.exercises else "pass" if r.exercises[e][0] else "fail")
                    for e in ids
                ]
                w.writerow(
                    [
                        r.notebook,
                        r.lecture or "",
                        *cells,
                        sum(ok for ok, _ in r.exercises.values()),
                        len(r.exercises),
                        r.error or "",
                    ]
                )
        print(f"\nwrote {args.csv}")
    return 0 if all(r.all_passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
