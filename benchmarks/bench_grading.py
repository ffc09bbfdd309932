"""Grading speed: one notebook, and a class of 100 notebooks on 2 cores, with per-stage times.

    python -m benchmarks.bench_grading                   # 100 notebooks, --jobs 2 (from the root)
    python -m benchmarks.bench_grading --class-size 20 --jobs 2

The class is generated from the sample submissions of tests/data/submissions/ (five lecture-01
notebooks: right, partly wrong, untouched, not a notebook, a typo), copied round-robin under
new names. The grader runs as an instructor runs it: its start-up (``python -c "import
tools.grade"`` and loading the course, in a subprocess) is timed once, then ``grade_many`` grades
the notebooks, each in its own sandboxed kernel. Prints:

- wall and CPU time (the grader and every kernel: ``getrusage`` of this process and its
  waited-for children) for one notebook and for the class;
- per stage, summed over the gradable notebooks (wall seconds inside each notebook's grading):
  ``start-up`` (sandbox and a fresh IPython ready), ``imports`` (the official import cells:
  numpy, ``course_lib``, torch where it is imported), ``cells`` (every other cell),
  ``checks`` (the official checks, calling the student's functions);
- whether the verdicts are those of tests/test_class_grading.py's table for every copy.

A benchmark, not a test: it asserts nothing. On a loaded machine wall times are inflated (it
prints the load average before and after); CPU times are not.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
STAGES = ("start-up", "imports", "cells", "checks")


def _cpu() -> float:
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _grader_start_up() -> float:
    code = "from tools.grading import cli as grade; grade._course(); grade.sandbox_available()"
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    return time.perf_counter() - t0


def _grade(paths: list[Path], jobs: int):
    from tools.grading import cli as grade

    t0, c0 = time.perf_counter(), _cpu()
    results = grade.grade_many(paths, jobs)
    return time.perf_counter() - t0, _cpu() - c0, results


def _report(label: str, start_up: float, wall: float, cpu: float, results) -> None:
    gradable = [r for r in results if r.error is None]
    n = max(len(gradable), 1)
    total = start_up + wall
    print(f"{label}: {len(results)} notebooks ({len(gradable)} gradable): {total:.1f} s wall "
          f"(grader start-up {start_up:.1f} s + grading {wall:.1f} s; {total / len(results):.2f} s "
          f"a notebook), {cpu:.1f} s CPU ({cpu / n:.2f} s a gradable notebook)")  # fmt: skip
    sums = {s: sum(r.stages.get(s, 0.0) for r in gradable) for s in STAGES}
    print("  per stage, mean wall s a gradable notebook: "
          + ", ".join(f"{s} {sums[s] / n:.2f}" for s in STAGES))  # fmt: skip
    wrong = []
    for r in results:
        stem = Path(r.notebook).stem.rsplit("_", 1)[0]
        got = None if r.error else tuple(r.exercises[f"1.{k}"][0] for k in range(1, 5))
        if got != EXPECTED[stem]:
            wrong.append(f"{Path(r.notebook).name}: {got} != {EXPECTED[stem]}")
    print("  verdicts: " + ("as tests/test_class_grading.py expects for every notebook"
                            if not wrong else f"{len(wrong)} DIFFER: {wrong[:5]}"))  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class-size", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    from tools.grading import cli as grade

    print(f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; "
          f"{grade.isolation()}")  # fmt: skip
    samples = sorted(SUBMISSIONS.glob("*.ipynb"))
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(args.class_size):
            src = samples[i % len(samples)]
            paths.append(Path(tmp) / "class" / f"{src.stem}_{i:03d}.ipynb")
            paths[-1].parent.mkdir(exist_ok=True)
            shutil.copy(src, paths[-1])
        start_up = _grader_start_up()
        _grade(paths[:1], 1)  # warm the page cache
        _report("one notebook", start_up, *_grade(paths[:1], 1))
        _report(f"class, --jobs {args.jobs}", start_up, *_grade(paths, args.jobs))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
