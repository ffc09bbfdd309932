"""Grading speed: a class of 100 notebooks of each lecture on 2 cores, with per-stage times.

    python -m benchmarks.bench_grading                          # lectures 01 and 11-18, 100 each
    python -m benchmarks.bench_grading --lectures 14 --class-size 20 --jobs 2

Lecture 01's class is made from the sample submissions of tests/data/submissions/ (five
notebooks: right, partly wrong, untouched, not a notebook, a typo); every other lecture's from
three notebooks: its solution (every exercise answered right), its exercise notebook untouched,
and the solution with its first answer taken back to the stub. They are copied round-robin
under new names, and the grader runs as an instructor runs it: its start-up (``python -c
"import tools.grade"`` and loading the course, in a subprocess) is timed once, then
``grade_many`` grades each class (its ``precompute`` of the lecture's checks included), each
notebook in its own sandboxed kernel. Issue 42's targets: at most 15 s for any one notebook and
5 minutes (3 s a notebook) for a class of 100 of any lecture, on 2 idle cores. Prints, per class:

- wall and CPU time (the grader and every kernel: ``getrusage`` of this process and its
  waited-for children), and seconds a notebook;
- the slowest notebook's own grading time;
- per stage, the mean over the gradable notebooks (wall seconds inside each notebook's
  grading): ``start-up`` (sandbox and a fresh IPython ready), ``fixtures`` (the lecture's
  cached fixtures, made in the notebook's process before its cells run), ``imports`` (the
  official import cells: numpy, ``course_lib``, torch where it is imported), ``cells`` (every
  other cell), ``checks`` (the official checks, calling the student's functions);
- whether the verdicts are the expected ones for every copy (lecture 01: those of
  tests/test_class_grading.py's table; others: the solution passes every exercise, the
  untouched notebook none, and every copy of a notebook gets the verdicts of its first copy);
- the load average before and after.

A benchmark, not a test: it asserts nothing. On a loaded machine wall times are inflated; CPU
times much less so. ``--table FILE`` also writes one JSON line per class.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "tests" / "data" / "submissions"
# As tests/test_class_grading.py expects them: (1.1, 1.2, 1.3, 1.4), None = not gradable.
EXPECTED = {
    "01_softmax_ada": (True, True, True, False),
    "01_softmax_ben": (False, True, False, False),
    "01_softmax_cleo": (False, False, False, False),
    "01_softmax_dan": None,
    "01_softmax_eve": (True, False, True, False),
}
STAGES = ("start-up", "fixtures", "imports", "cells", "checks")


def _cpu() -> float:
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _grader_start_up() -> float:
    code = "from tools.grading import cli as grade; grade._course(); grade.sandbox_available()"
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    return time.perf_counter() - t0


def _lectures(text: str) -> list[str]:
    """``"01,11-18"`` -> ``["01", "11", ..., "18"]``."""
    out: list[str] = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        out += [f"{n:02d}" for n in range(int(first), int(last or first) + 1)]
    return out


def _samples(lecture: str, folder: Path) -> list[Path]:
    """The notebooks a lecture's class is copied from (see the module's docstring)."""
    if lecture == "01":
        return sorted(SUBMISSIONS.glob("*.ipynb"))
    (solution,) = (ROOT / "solutions").glob(f"{lecture}_*.ipynb")
    (untouched,) = (ROOT / "exercises").glob(f"{lecture}_*.ipynb")
    right, stub = nbformat.read(solution, 4), nbformat.read(untouched, 4)
    stubs = {c.id: c.source for c in stub.cells}
    first = next(
        c for c in right.cells if c.cell_type == "code" and stubs.get(c.id, c.source) != c.source
    )
    first.source = stubs[first.id]  # the first answer taken back: that exercise fails
    partly = folder / f"{solution.stem}_partly.ipynb"
    nbformat.write(right, partly)
    return [solution, untouched, partly]


def _class(lecture: str, size: int, folder: Path) -> list[Path]:
    samples = _samples(lecture, folder)
    paths = []
    for i in range(size):
        src = samples[i % len(samples)]
        kind = "" if lecture == "01" else f"_{('right', 'untouched', 'partly')[i % 3]}"
        paths.append(folder / "class" / f"{src.stem.removesuffix('_partly')}{kind}_{i:03d}.ipynb")
        paths[-1].parent.mkdir(exist_ok=True)
        shutil.copy(src, paths[-1])
    return paths


def _verdicts(lecture: str, results) -> list[str]:
    """What differs from the expected verdicts (empty: all as expected)."""
    wrong, first = [], {}
    for r in results:
        name = Path(r.notebook).stem
        got = None if r.error else tuple(ok for _, (ok, _) in sorted(r.exercises.items()))
        if lecture == "01":
            want = EXPECTED[name.rsplit("_", 1)[0]]
        else:
            kind = name.split("_")[-2]
            want = first.setdefault(kind, got)
            if kind == "right" and (got is None or not all(got)):
                wrong.append(f"{name}: the solution does not pass: {r.error or r.exercises}")
            if kind == "untouched" and (got is None or any(got)):
                wrong.append(f"{name}: the untouched notebook passes: {r.error or got}")
        if got != want:
            wrong.append(f"{name}: {got} != {want}")
    return wrong


def _grade_class(lecture: str, paths: list[Path], jobs: int, start_up: float) -> dict:
    from tools.grading import cli as grade

    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu()
    results = grade.grade_many(paths, jobs)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    gradable = [r for r in results if r.error is None]
    n = max(len(gradable), 1)
    row = {
        "lecture": lecture,
        "notebooks": len(results),
        "jobs": jobs,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "s_per_notebook": round((start_up + wall) / len(results), 2),
        "slowest_notebook_s": max((r.seconds for r in gradable), default=0.0),
        "stages": {s: round(sum(r.stages.get(s, 0.0) for r in gradable) / n, 2) for s in STAGES},
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "differ": _verdicts(lecture, results),
    }
    print(f"lecture {lecture}: {len(results)} notebooks, --jobs {jobs}: {start_up + wall:.1f} s "
          f"wall (grader start-up {start_up:.1f} s + grading {wall:.1f} s; "
          f"{row['s_per_notebook']:.2f} s a notebook), {cpu:.1f} s CPU "
          f"({cpu / n:.2f} s a gradable notebook); slowest notebook "
          f"{row['slowest_notebook_s']:.1f} s; load {row['load_before']:.1f} -> "
          f"{row['load_after']:.1f}")  # fmt: skip
    print("  per stage, mean wall s a gradable notebook: "
          + ", ".join(f"{s} {v:.2f}" for s, v in row["stages"].items()))  # fmt: skip
    differ = row["differ"]
    print("  verdicts: " + ("as expected for every notebook" if not differ
                            else f"{len(differ)} DIFFER: {differ[:3]}"))  # fmt: skip
    sys.stdout.flush()
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lectures", default="01,11-18", help="e.g. 14 or 01,11-18 (default)")
    parser.add_argument("--class-size", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--table", type=Path, help="append one JSON line per class to this file")
    args = parser.parse_args(argv)
    from tools.grading import cli as grade

    print(f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; "
          f"{grade.isolation()}")  # fmt: skip
    start_up = _grader_start_up()
    for lecture in _lectures(args.lectures):
        with tempfile.TemporaryDirectory() as tmp:
            paths = _class(lecture, args.class_size, Path(tmp))
            row = _grade_class(lecture, paths, args.jobs, start_up)
        if args.table:
            with args.table.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
