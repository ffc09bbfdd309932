"""Grading one notebook (:func:`grade`: identify, plan, run in the sandbox, check here) and a
class in parallel (:func:`grade_many`: forked copies of the loaded grader, one notebook each).
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import secrets
import sys
import time
from dataclasses import asdict
from pathlib import Path

from tools.notebooks.make_exercises import CODE_STUB

from .course import Course, _course
from .notebook import NotGradable, parse_notebook, read_submission
from .plan import plan
from .reach import evidence
from .results import Result, _order, _result_from
from .sandbox import DEFAULT_DISK_MB, DEFAULT_MAX_PROCESSES, Aborted, Kernel, sandbox_available
from .verdict import run_check

DEFAULT_TIMEOUT = 300  # seconds for one notebook (all its cells and checks)
DEFAULT_MEMORY_MB = 4096


def grade(
    path: Path,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    memory_mb: int = DEFAULT_MEMORY_MB,
    max_processes: int = DEFAULT_MAX_PROCESSES,
    disk_mb: int = DEFAULT_DISK_MB,
    hidden_seed: int | None = None,
    sandbox: bool | None = None,
    course: Course | None = None,
) -> Result:
    """Grade one notebook file; never raises for anything the file contains."""
    started = time.monotonic()
    path = Path(path)
    course = course or _course()
    result = Result(str(path), None)
    try:
        cells = parse_notebook(read_submission(path))
        template = course.identify(cells, path)
    except NotGradable as exc:
        result.error = f"not gradable: {exc}"
        return result
    result.lecture = template.name
    if template.problem:
        result.error = f"not gradable: {template.problem}"
        return result
    result.warning = course.name_warning(template, path)
    steps = plan(cells, template)
    if sandbox is None:
        sandbox = sandbox_available()[0]
    if not sandbox:
        result.notes.append("no sandbox: " + (sandbox_available()[1] or "disabled"))
    seed = secrets.randbelow(2**31 - 1) + 1 if hidden_seed is None else hidden_seed
    result.hidden_seed = seed  # in the CSV: `--hidden-seed SEED` gives the same verdict again
    clock = time.monotonic()
    try:
        kernel = Kernel(course, timeout, memory_mb, sandbox, max_processes, disk_mb)
    except OSError as exc:  # no temporary space, no process: the grader's problem, said so
        result.error = f"not gradable: could not start a Python process for it ({exc})"
        return result
    stages = result.stages

    def lap(stage: str) -> None:  # wall seconds per stage (benchmarks/bench_grading.py)
        nonlocal clock
        now = time.monotonic()
        stages[stage] = round(stages.get(stage, 0.0) + now - clock, 3)
        clock = now

    last_error: dict | None = None
    earlier: list[str] = []  # the student's cells before the previous check (reach.evidence)
    sources: list[str] = []  # the student's cells since the previous check
    try:
        kernel.request({"op": "ping"})
        lap("start-up")
        if template.fixtures and any(s.student and CODE_STUB not in s.source for s in steps):
            kernel.request(
                {"op": "warm", "fixtures": list(template.fixtures)}
            )  # no student code yet
            lap("fixtures")
        for step in steps:
            if step.kind == "run":
                if step.student:
                    sources.append(step.source)
                reply = kernel.request({"op": "run", "code": step.source, "watch": step.student})
                if step.student:
                    last_error = (
                        reply.get("error") if isinstance(reply.get("error"), dict) else None
                    )
                lap("imports" if not step.student and _imports(step.source) else "cells")
                continue
            check = template.checks[step.exercise]
            ok, why = run_check(kernel, check, seed)
            reached = kernel.reached | kernel.reached_in_cells
            flags = evidence(check, sources, reached, kernel.tamper, earlier)
            if flags:
                result.course_lib[step.exercise] = flags
            earlier, sources = earlier + sources, []
            kernel.reached.clear()  # the cells' record stays: every cell before a check counts
            kernel.tamper.clear()
            if not ok and why.endswith("when the check runs"):
                if last_error:
                    why += (
                        f"; the cell before it raised {last_error.get('type')}: "
                        f"{str(last_error.get('message'))[:200]}"
                    )
                why += (
                    ".\nHint: define it in the answer cell above the check, spelled as in the "
                    "exercise, and make sure that cell runs without an error."
                )
            result.exercises[step.exercise] = (ok, why)
            lap("checks")
    except Aborted as exc:
        result.notes.append(str(exc))
        for ex in template.checks:
            if ex not in result.exercises:
                result.exercises[ex] = (False, f"not graded: {exc}")
                break
        for ex in template.checks:
            result.exercises.setdefault(ex, (False, f"not graded: {exc} earlier"))
    finally:
        kernel.close()
    for ex in template.checks:  # a check step is planned for every exercise; belt and braces
        result.exercises.setdefault(ex, (False, "the check cell did not run"))
    result.uses_course_lib = sorted(result.course_lib, key=_order)
    result.seconds = round(time.monotonic() - started, 2)
    return result


def _imports(source: str) -> bool:
    """Does this (official) cell import something? Its time is the notebook's "imports"."""
    return any(
        line.startswith(("import ", "from ")) for line in source.splitlines() if line.strip()
    )


# What one worker (a forked copy of the loaded grader, one notebook) may add to its private
# writable memory (RLIMIT_DATA): room for the checks' references and the largest answer the
# protocol lets through, but a grader bug or a decoder blow-up is a MemoryError, not the machine's.
WORKER_MEMORY_MB = 2048


def limit_memory(extra_mb: int = WORKER_MEMORY_MB) -> None:
    """Bound this process's private writable memory to what it holds now + ``extra_mb``."""
    import resource

    held = 0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmData:"):
                held = int(line.split()[1]) * 1024
    soft = held + extra_mb * 2**20
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _one_thread() -> int | None:
    """torch on one thread in the grader (the notebook's process has one too): a worker's
    references then compute as the student's code does, and two workers do not fight over the
    two cores (or fork a parent's thread pool). The previous number, or None without torch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    return before


def precompute(course: Course, paths: list[Path]) -> None:
    """Call once, before a class is graded, the ``precompute()`` of the checks of every lecture
    among ``paths`` (its notebooks identified by content, as :func:`grade` does): what every
    notebook's checks compare with is then computed once, in the grader, and shared by the
    forked workers. The notebooks themselves are only read here."""
    done: set = set()
    for path in paths:
        try:
            template = course.identify(parse_notebook(read_submission(path)), path)
        except Exception:  # not gradable (or a file that breaks the reader): its worker says so
            continue
        for function in template.precompute:
            if function not in done:
                done.add(function)
                try:
                    function()
                except Exception:  # computed again in each check, which reports the problem
                    pass


def _worker(conn, path: str, options: dict) -> None:
    try:
        if sys.platform == "linux":
            limit_memory()
        result = grade(Path(path), **options)
    except BaseException as exc:  # report, never hang the parent
        result = Result(path, None, error=f"not gradable: the grader failed ({exc!r:.200})")
    conn.send_bytes(json.dumps(asdict(result)).encode())
    conn.close()


def grade_many(paths: list[Path], jobs: int, **options) -> list[Result]:
    """Grade notebooks in parallel, each in a forked copy of this (already loaded) grader."""
    course = _course()  # loaded before any student code runs; forked children share it
    sandbox_available()
    threads = _one_thread()
    try:
        precompute(course, paths)
        return _grade_all(course, paths, jobs, **options)
    finally:
        if threads is not None:
            sys.modules["torch"].set_num_threads(threads)


def _grade_all(course: Course, paths: list[Path], jobs: int, **options) -> list[Result]:
    if "fork" not in multiprocessing.get_all_start_methods():
        return [grade(p, course=course, **options) for p in paths]
    jobs = max(1, jobs)  # even one at a time, each in a worker of its own (memory-limited)
    ctx = multiprocessing.get_context("fork")
    limit = options.get("timeout", DEFAULT_TIMEOUT) + 120
    results: dict[int, Result] = {}
    running: dict = {}  # connection -> (index, process, start)
    queue = list(enumerate(paths))
    while queue or running:
        while queue and len(running) < jobs:
            i, p = queue.pop(0)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker, args=(child, str(p), options), daemon=True)
            proc.start()
            child.close()
            running[parent] = (i, proc, time.monotonic())
        ready = multiprocessing.connection.wait(list(running), timeout=1.0)
        for conn in ready:
            i, proc, _ = running.pop(conn)
            try:
                results[i] = _result_from(json.loads(conn.recv_bytes()))
            except (EOFError, OSError, ValueError):
                proc.join(5)
                results[i] = Result(
                    str(paths[i]), None,
                    error=f"not gradable: the grader's worker died (exit code {proc.exitcode})",
                )  # fmt: skip
            proc.join(5)
        for conn, (i, proc, start) in list(running.items()):
            if time.monotonic() - start > limit:
                proc.kill()
                proc.join(5)
                running.pop(conn)
                results[i] = Result(str(paths[i]), None, error=f"timed out after {limit:g} s")
    return [results[i] for i in range(len(paths))]
