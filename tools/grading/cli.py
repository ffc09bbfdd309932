"""Grade exercise notebooks: the student's code runs in a sandbox, the verdict is computed here.

    python -m tools.grade NOTEBOOK.ipynb                       # one student: summary, exit 0 iff all pass
    python -m tools.grade FOLDER_OR_FILES... --csv out.csv     # a class, in parallel (--jobs)
    python -m tools.grade FOLDER --shard I/N --csv shard-I.csv # one cluster task's share
    python -m tools.grade merge shard-*.csv -o class.csv --class FOLDER   # the shards joined

A class too big for one machine is graded in shards (``--shard I/N``, or ``--shards N`` with the
index from ``SLURM_ARRAY_TASK_ID`` or ``JOB_COMPLETION_INDEX``): see tools/grading/shards.py.

How a notebook is graded:

1. **Identity.** The notebook is read as plain JSON, from a regular file only (a symbolic link,
   FIFO or device is refused, never followed; at most 20 MB + 1 byte is read); any malformed
   file gives a "not gradable" row. Its lecture is the official exercise notebook
   (``exercises/``) whose cells it contains, judged by content, never by file name or metadata;
   a file name whose lecture number disagrees is reported. Everything official (templates, ``course_lib``, the checks) is loaded
   once, before any student code runs.
2. **Sandbox.** The notebook runs in a fresh IPython process (``tools/grading/grade_kernel.py``) that
   inherits nothing but its two pipes. On Linux (``tools/grading/grade_sandbox.py``): new mount, PID,
   network, IPC and UTS namespaces; a root file system holding only Python and a private
   read-only copy of ``course_lib`` with stubs for its checks and without the quizzes' answer
   keys (the repository, ``solutions/`` and ``.git`` do not exist there); all writable space one size-limited tmpfs; ``/proc/sys`` read-only; never host root
   (an unprivileged uid of its own when the grader is root); no capabilities; pids and memory
   limits for the whole group (``tools/grading/limits.py``: a cgroup where one can be made,
   otherwise ``RLIMIT_NPROC``); a new session keyring; a seccomp filter (file locks without
   effect; no inotify, fanotify, mincore or keys). Elsewhere it runs without that isolation,
   and the grader says so. Every read and write to it shares the notebook's deadline, and a
   watchdog kills its processes when that passes.
3. **Official cells.** Cells are matched to the template by id, then by content: official cells
   run as in the template (an edited or deleted one is restored), the student's answer cells and
   extra cells run as written. Check cells are not run in the sandbox.
4. **Verdict.** Where the notebook has a check cell, the grader calls that check (from its own
   ``course_lib.checks``) in this process with a stand-in for the student's function: every
   ``call_student`` the check makes is sent to the sandbox as plain data (JSON, arrays as .npy, never
   pickle; ``Built`` recipes are built there), the student's function runs there, and its result
   comes back as plain data that the check compares with its own reference. Checks that take a
   ``seed`` run on seed 0 (the inputs the notebook shows) and on a hidden seed. Nothing the
   notebook prints, raises, patches or writes changes a verdict.
5. **The reference.** An exercise whose answer uses its reference (the course_lib functions that
   compute it) is flagged in the "uses course_lib" column, from the student's source and from a
   record of the course_lib functions the student's code entered (``tools/grading/reach.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import tempfile
from pathlib import Path

# The grader lives in tools/grading/ (one module per idea); its names stay reachable as
# ``tools.grading.cli.X``, as tests and scripts use them.
from tools.grading.course import EXERCISES, ROOT, Check, Course, Template, _course, load_template
from tools.grading.notebook import (
    MAX_NOTEBOOK_BYTES,
    Cell,
    NotGradable,
    exercise_id,
    parse_notebook,
)
from tools.grading.plan import Step, plan
from tools.grading.reach import evidence, references, source_record
from tools.grading.results import Result, print_summary, write_csv
from tools.grading.running import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, grade, grade_many
from tools.grading.sandbox import (
    DEFAULT_DISK_MB,
    DEFAULT_MAX_PROCESSES,
    Aborted,
    Kernel,
    isolation,
    sandbox_available,
)
from tools.grading.shards import ShardError, merge_main, parse_shard, shard_from_env, share
from tools.grading.verdict import CheckProblem, StudentFunction, _exception, run_check

__all__ = [
    "EXERCISES", "ROOT", "Check", "Course", "Template", "_course", "load_template",
    "MAX_NOTEBOOK_BYTES", "Cell", "NotGradable", "exercise_id", "parse_notebook",
    "Step", "plan", "evidence", "references", "source_record",
    "Result", "print_summary", "write_csv",
    "DEFAULT_MEMORY_MB", "DEFAULT_TIMEOUT", "grade", "grade_many",
    "Aborted", "Kernel", "sandbox_available",
    "CheckProblem", "StudentFunction", "_exception", "run_check",
    "main", "file_digest", "list_notebooks",
]  # fmt: skip


def main(argv: list[str]) -> int:
    if argv[:1] == ["merge"]:  # a folder named merge: give it as ./merge
        return merge_main(argv[1:], list_notebooks)
    parser = argparse.ArgumentParser(
        prog="python -m tools.grade",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks or folders of notebooks")
    parser.add_argument("--csv", type=Path, help="write one row per notebook to this CSV file")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="notebooks graded at once (default: the number of cores)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds for one notebook (default {DEFAULT_TIMEOUT})")  # fmt: skip
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=DEFAULT_MEMORY_MB,
        help="memory of a notebook's processes together (where a cgroup can be "
        "made) and address space of each (default %(default)s)",
    )
    parser.add_argument(
        "--max-processes",
        type=int,
        default=DEFAULT_MAX_PROCESSES,
        help="processes and threads of a notebook together (default %(default)s)",
    )
    parser.add_argument("--disk-mb", type=int, default=DEFAULT_DISK_MB,
                        help="a notebook's writable space, in memory (default %(default)s)")  # fmt: skip
    parser.add_argument("--hidden-seed", type=int, help="fix the hidden inputs (default: random)")
    shard = parser.add_mutually_exclusive_group()
    shard.add_argument("--shard", metavar="I/N",
                       help="grade only shard I of N (from 0) of the sorted notebooks")  # fmt: skip
    shard.add_argument("--shards", metavar="N", type=int,
                       help="grade this task's shard of N: the index from SLURM_ARRAY_TASK_ID "
                       "(a Slurm job array) or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")  # fmt: skip
    args = parser.parse_args(_shard_value_glued(argv))
    if not args.paths and os.environ.get("NB"):  # `make grade NB=...` passes the name this way
        args.paths = [Path(os.environ["NB"])]
    files = list_notebooks(args.paths)
    if not files:
        parser.error(_no_notebooks(args.paths))
    problem = _invalid(args, files)
    if problem:  # before anything is graded: a clear message, exit 2
        parser.error(problem)
    if args.shard is not None or args.shards is not None:
        try:
            index, count = (parse_shard(args.shard) if args.shard is not None
                            else shard_from_env(args.shards))  # fmt: skip
        except ShardError as exc:
            parser.error(str(exc))
        everyone = len(set(files))
        files = share(files, index, count)
        print(f"note: shard {index}/{count}: {len(files)} of the class's {everyone} notebooks.",
              file=sys.stderr)  # fmt: skip
        if not files:  # more shards than notebooks: this one has nothing to do
            if args.csv:
                write_csv([], args.csv)
            return 0
    print(f"note: {isolation()}.", file=sys.stderr)
    options = {"timeout": args.timeout, "memory_mb": args.memory_mb,
               "max_processes": args.max_processes, "disk_mb": args.disk_mb}  # fmt: skip
    if args.hidden_seed is not None:
        options["hidden_seed"] = args.hidden_seed
    results = grade_many(files, args.jobs, **options)
    for r in results:
        print_summary(r)
    if args.csv:
        write_csv(results, args.csv)
        print(f"\nwrote {args.csv}")
    return 0 if all(r.all_passed for r in results) else 1


def _shard_value_glued(argv: list[str]) -> list[str]:
    """``--shard -1/2`` as ``--shard=-1/2``: argparse would read ``-1/2`` as an option and say
    only "expected one argument"; glued, the value reaches the check that says what is wrong."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--shard" and i + 1 < len(argv):
            out.append(f"--shard={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def list_notebooks(paths: list[Path]) -> list[Path]:
    """The notebooks the command grades: each folder walked (``*.ipynb``, sorted), each file
    given as it is."""
    files: list[Path] = []
    for p in paths:  # rglob lists links and FIFOs (reported) but never enters a linked folder
        files += sorted(p.rglob("*.ipynb")) if p.is_dir() else [p]
    return files


def _no_notebooks(paths: list[Path]) -> str:
    """Why nothing is graded: what was given, and what was found there instead."""
    if not paths:
        return "no notebooks found: give notebooks or a folder of notebooks (.ipynb)"
    found = sorted(str(f.relative_to(p)) for p in paths if p.is_dir()
                   for f in p.rglob("*") if f.is_file())  # fmt: skip
    said = " ".join(str(p) for p in paths)
    if not found:
        return f"no notebooks found in {said}: it holds no files; give the .ipynb notebooks"
    listed = ", ".join(found[:5]) + (" …" if len(found) > 5 else "")
    return (f"no notebooks found in {said}: {len(found)} files, none ending in .ipynb "
            f"({listed}); give the .ipynb notebooks")  # fmt: skip


def _invalid(args, files: list[Path]) -> str | None:
    """Why these arguments cannot grade a class (None: they can)."""
    if not (math.isfinite(args.timeout) and 0 < args.timeout <= 86400):
        return f"--timeout must be a number of seconds from 0 to 86400, got {args.timeout!r}"
    for name, least in (("jobs", 1), ("memory_mb", 256), ("max_processes", 8), ("disk_mb", 1)):
        if getattr(args, name) < least:
            flag = "--" + name.replace("_", "-")
            return f"{flag} must be at least {least}, got {getattr(args, name)}"
    if args.hidden_seed is not None and not 1 <= args.hidden_seed < 2**31:
        return f"--hidden-seed must be an integer from 1 to 2**31 - 1, got {args.hidden_seed}"
    if args.csv is not None:
        return _csv_problem(args.csv, files)
    return None


def _csv_problem(csv: Path, files: list[Path]) -> str | None:
    """Why ``csv`` cannot take the class's rows (checked before grading, not after)."""
    if csv.suffix.lower() == ".ipynb" or any(
        os.path.realpath(csv) == os.path.realpath(f) for f in files
    ):
        return f"--csv {csv} is a notebook: give a new file name ending in .csv"
    folder = csv.parent
    if not folder.is_dir():
        return f"--csv {csv}: the folder {folder} does not exist"
    if csv.is_dir():
        return f"--csv {csv} is a folder: give a file name ending in .csv"
    if csv.exists() or csv.is_symlink():
        if not csv.is_file():
            return f"--csv {csv} exists and is not a regular file"
        with open(csv, "rb") as fh:
            if fh.read(64).lstrip().startswith(b"{"):
                return f"--csv {csv} holds JSON (a notebook?): give a new file name"
        if not os.access(csv, os.W_OK):
            return f"--csv {csv} is not writable"
        return None
    try:  # the folder is writable: try it (access() says yes to root on a read-only mount)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        return f"--csv {csv}: cannot write in {folder} ({exc.strerror})"
    return None


def file_digest(paths: list[Path]) -> str:
    """One hash of these files' contents (tests use it to show nothing trusted was modified)."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p).encode() + b"\0" + (p.read_bytes() if p.is_file() else b"-"))
    return h.hexdigest()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
