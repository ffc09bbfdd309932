"""Grading speed: seconds per notebook, and a class of 100 notebooks on 2 cores.

    python benchmarks/bench_grading.py                   # 100 notebooks, --jobs 2
    python benchmarks/bench_grading.py --class-size 20 --jobs 2

The class is generated from the sample submissions of tests/data/submissions/ (five lecture-01
notebooks: right, partly wrong, untouched, not a notebook, a typo), copied round-robin under
new names. Both are timed as an instructor runs them, ``python -m tools.grade`` in a subprocess
(start-up included): each notebook gets its own sandboxed kernel (a fresh process that imports
course_lib and torch) and the checks run in the grader. Prints wall time and the CPU time of the
grader and all kernels (``getrusage`` of the waited-for children), per notebook too. A benchmark, not
a test: it asserts nothing. On a loaded machine wall times are inflated; CPU times are not.
"""

from __future__ import annotations

import argparse
import csv
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "tests" / "data" / "submissions"


def _cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def _grade(paths: list[Path], jobs: int, out: Path) -> tuple[float, float, list[dict]]:
    t0, c0 = time.perf_counter(), _cpu()
    cmd = [sys.executable, "-m", "tools.grade", *map(str, paths), "--jobs", str(jobs)]
    subprocess.run([*cmd, "--csv", str(out)], cwd=ROOT, capture_output=True, check=False)
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return time.perf_counter() - t0, _cpu() - c0, rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class-size", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    samples = sorted(SUBMISSIONS.glob("*.ipynb"))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "grades.csv"
        _grade([samples[0]], 1, out)  # warm the page cache
        wall, cpu, _ = _grade([samples[0]], 1, out)
        print(
            f"one notebook ({samples[0].name}, whole command): {wall:.1f} s wall, {cpu:.1f} s CPU"
        )
        paths = []
        for i in range(args.class_size):
            src = samples[i % len(samples)]
            paths.append(Path(tmp) / "class" / f"{src.stem}_{i:03d}.ipynb")
            paths[-1].parent.mkdir(exist_ok=True)
            shutil.copy(src, paths[-1])
        wall, cpu, rows = _grade(paths, args.jobs, out)
    gradable = [r for r in rows if not r["error"]]
    print(
        f"class of {len(rows)} notebooks ({len(gradable)} gradable), --jobs {args.jobs}: "
        f"{wall:.0f} s wall ({wall / len(rows):.2f} s a notebook), {cpu:.0f} s CPU "
        f"({cpu / max(len(gradable), 1):.2f} s CPU a gradable notebook)"
    )
    print(
        f"passed everything: {sum(r['passed'] == r['total'] != '0' for r in rows)} of {len(rows)}"
    )


if __name__ == "__main__":
    main()
