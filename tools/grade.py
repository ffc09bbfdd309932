"""Grade exercise notebooks: the student's code runs in a sandbox, the verdict is computed here.

    python -m tools.grade NOTEBOOK.ipynb                       # one student: summary, exit 0 iff all pass
    python -m tools.grade FOLDER_OR_FILES... --csv out.csv     # a class, in parallel (--jobs)

How a notebook is graded:

1. **Identity.** The notebook is read as plain JSON (any malformed file gives a "not gradable"
   row). Its lecture is the official exercise notebook (``exercises/``) whose cells it contains,
   judged by content, never by file name or metadata; a file name whose lecture number
   disagrees is reported. Everything official (templates, ``course_lib``, the checks) is loaded
   once, before any student code runs.
2. **Sandbox.** The notebook runs in a fresh IPython process (``tools/grade_kernel.py``) in its
   own temporary folder, with a private copy of ``course_lib`` (read-only), a private HOME and
   IPython/Jupyter/matplotlib configuration, memory, file-size and time limits, and — on Linux with
   user namespaces — a new root file system holding only Python and that folder (the repository,
   ``solutions/`` and ``.git`` do not exist there), no network and no capabilities. Elsewhere it
   runs without that file-system and network isolation, and the grader says so.
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
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import csv
import hashlib
import importlib
import inspect
import io
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import secrets
import select
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course_lib.checks import ExerciseError, RemoteFunction
from tools import grade_kernel
from tools.make_exercises import CODE_STUB, MARKDOWN_STUB

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
_EXERCISE_TAG = re.compile(r"^exercise-(\d+\.\d+)$")
MAX_NOTEBOOK_BYTES = 20 * 2**20
DEFAULT_TIMEOUT = 300  # seconds for one notebook (all its cells and checks)
DEFAULT_MEMORY_MB = 4096


# --- results --------------------------------------------------------------------------------


@dataclass
class Result:
    notebook: str
    lecture: str | None
    exercises: dict[str, tuple[bool, str]] = field(default_factory=dict)  # id -> (ok, reason)
    error: str | None = None  # the notebook could not be graded at all
    uses_course_lib: list[str] = field(default_factory=list)  # exercises whose answer imports it
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def all_passed(self) -> bool:
        return (
            self.error is None
            and bool(self.exercises)
            and all(ok for ok, _ in self.exercises.values())
        )


class NotGradable(Exception):
    pass


# --- the notebook as data -------------------------------------------------------------------


@dataclass
class Cell:
    type: str
    source: str
    id: str | None = None
    exercise: str | None = None  # only for template check cells
    answer: bool = False  # only for template answer cells


def _text(value, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    raise NotGradable(f"{where}: source is {type(value).__name__}, not text")


def parse_notebook(data: bytes) -> list[Cell]:
    """The cells of a notebook file, checked by hand: nothing in it is trusted or executed."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotGradable(f"the file is {len(data) / 2**20:.0f} MB; a notebook must be < 20 MB")
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NotGradable(f"not a notebook (invalid JSON: {str(exc)[:120]})") from None
    if not isinstance(nb, dict):
        raise NotGradable(f"not a notebook (a JSON {type(nb).__name__}, not an object)")
    if "worksheets" in nb or nb.get("nbformat") not in (4, None):
        raise NotGradable(
            f"nbformat {nb.get('nbformat')!r} is not supported (save it with Jupyter 4+)"
        )
    if not isinstance(nb.get("cells"), list):
        raise NotGradable("not a notebook (no list of cells)")
    cells = []
    for i, c in enumerate(nb["cells"]):
        if not isinstance(c, dict):
            raise NotGradable(f"cell {i} is a {type(c).__name__}, not an object")
        kind = c.get("cell_type")
        if kind not in ("code", "markdown", "raw"):
            raise NotGradable(f"cell {i} has cell_type {str(kind)[:40]!r}")
        cell_id = c.get("id") if isinstance(c.get("id"), str) else None
        cells.append(Cell(kind, _text(c.get("source", ""), f"cell {i}"), cell_id))
    return cells


def _tags(cell: dict) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def exercise_id(cell) -> str | None:
    """The ``exercise-N.k`` tag of a notebook cell (dict or nbformat node), if any."""
    for tag in _tags(cell):
        m = _EXERCISE_TAG.match(tag)
        if m:
            return m.group(1)
    return None


@dataclass
class Check:
    exercise: str
    function: object  # the official check function
    args: list  # ("name", student name) or ("value", literal)


@dataclass
class Template:
    name: str
    cells: list[Cell]
    checks: dict[str, Check]  # exercise id -> check

    @property
    def lecture(self) -> str:
        return self.name[:2]


def _check_call(source: str, imports: dict[str, str], exercise: str) -> Check:
    """The check a template check cell calls, and where each of its arguments comes from."""
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
    call = next(c for c in calls if isinstance(c.func, ast.Name) and c.func.id in imports)
    module = importlib.import_module(imports[call.func.id])
    args = [
        ("name", a.id) if isinstance(a, ast.Name) else ("value", ast.literal_eval(a))
        for a in call.args
    ]
    return Check(exercise, getattr(module, call.func.id), args)


def load_template(path: Path, text: str | None = None) -> Template:
    nb = json.loads(path.read_text() if text is None else text)
    imports = {}
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            for node in ast.walk(ast.parse("".join(c["source"]))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "course_lib.checks"
                ):
                    imports.update({a.asname or a.name: node.module for a in node.names})
    cells, checks = [], {}
    for c in nb["cells"]:
        src = "".join(c["source"])
        cell = Cell(c["cell_type"], src, c.get("id"), exercise_id(c))
        cell.answer = CODE_STUB in src or MARKDOWN_STUB in src
        if cell.exercise and c["cell_type"] == "code":
            checks[cell.exercise] = _check_call(src, imports, cell.exercise)
        cells.append(cell)
    return Template(path.stem, cells, checks)


def _official(exercises: Path) -> list[tuple[Path, str | None]]:
    """The exercise templates as committed (``git ls-files``/``git show HEAD:``) when
    ``exercises`` is this repository's folder: a student may answer the exercises in place or
    save notebooks of their own there, and neither must change what the grader trusts. Outside a
    git clone (or for another folder), the files as they are."""
    try:
        rel = exercises.resolve().relative_to(ROOT).as_posix()
        listed = subprocess.run(["git", "ls-files", "-z", "--", f"{rel}/*.ipynb"], cwd=ROOT,
                                capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        names = sorted(n for n in listed.stdout.split("\0") if n)
        if names:
            shown = [subprocess.run(["git", "show", f"HEAD:{n}"], cwd=ROOT, capture_output=True,
                                    text=True, timeout=60, check=True).stdout for n in names]  # fmt: skip
            return [(ROOT / n, text) for n, text in zip(names, shown, strict=True)]
    except (ValueError, OSError, subprocess.SubprocessError):
        pass
    return [(p, None) for p in sorted(exercises.glob("*.ipynb"))]


class Course:
    """Everything the grader trusts, read once before any student code runs."""

    def __init__(self, exercises: Path = EXERCISES, library: Path = ROOT / "course_lib"):
        self.templates = {p.stem: load_template(p, text) for p, text in _official(exercises)}
        self.library = {
            str(p.relative_to(library.parent)): p.read_bytes()
            for p in sorted(library.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        }
        tools = Path(__file__).parent
        self.kernel_files = {
            name: (tools / name).read_bytes() for name in ("grade_kernel.py", "grade_sandbox.py")
        }

    def identify(self, cells: list[Cell], path: Path) -> Template:
        """The template whose official cells this notebook holds (by content, not by name)."""
        sources = {c.source.strip() for c in cells}
        scores = {
            name: sum(1 for c in t.cells if not c.answer and c.source.strip() in sources)
            for name, t in self.templates.items()
        }
        best = max(scores.values(), default=0)
        winners = [n for n, s in scores.items() if s == best]
        if best == 0:
            raise NotGradable("it matches none of the course's exercise notebooks")
        if len(winners) > 1:
            raise NotGradable(f"it matches several exercise notebooks equally: {winners}")
        template = self.templates[winners[0]]
        m = re.match(r"(\d\d)(?!\d)", path.name)
        if m and m.group(1) != template.lecture:
            raise NotGradable(
                f"this is the notebook of lecture {template.lecture} ({template.name}), but the "
                f"file name says lecture {m.group(1)}"
            )
        return template


# --- what runs where ------------------------------------------------------------------------


@dataclass
class Step:
    kind: str  # "run" (code in the sandbox) or "check" (a verdict computed here)
    source: str = ""
    exercise: str | None = None
    student: bool = False  # code written by the student (answer or extra cell)


def plan(cells: list[Cell], template: Template) -> list[Step]:
    """The student's notebook with every official cell restored; one check step per exercise."""
    by_id = {c.id: (i, c) for i, c in enumerate(template.cells) if c.id}
    used: set[int] = set()
    mapped: list[int | None] = []
    for cell in cells:
        hit = by_id.get(cell.id) if cell.id else None
        if hit and hit[0] not in used and hit[1].type == cell.type:
            used.add(hit[0])
            mapped.append(hit[0])
        else:
            mapped.append(None)
    for j, cell in enumerate(cells):  # no id match (nbformat 4.4, new ids): same official text
        if mapped[j] is None:
            for i, t in enumerate(template.cells):
                if i not in used and not t.answer and t.type == cell.type:
                    if t.source.strip() == cell.source.strip():
                        used.add(i)
                        mapped[j] = i
                        break

    def step(i: int | None, cell: Cell) -> Step | None:
        official = None if i is None else template.cells[i]
        if official is not None and official.exercise and official.type == "code":
            return Step("check", exercise=official.exercise)
        if cell.type != "code":
            return None
        if official is not None and not official.answer:
            return Step("run", official.source)
        return Step("run", cell.source, student=True)

    steps: list[tuple[int | None, Step | None]] = [
        (i, step(i, c)) for i, c in zip(mapped, cells, strict=True)
    ]
    for i, t in enumerate(template.cells):  # official cells the student deleted go back in place
        if i in used or t.answer:
            continue
        pos = max((k + 1 for k, (j, _) in enumerate(steps) if j is not None and j < i), default=0)
        steps.insert(pos, (i, step(i, t)))
    out = [s for _, s in steps if s is not None]
    last = max((k for k, s in enumerate(out) if s.kind == "check"), default=-1)
    return out[: last + 1]  # nothing after the last check can change a verdict


def imports_course_lib(source: str) -> bool:
    """Does this code import course_lib (statement, __import__ or importlib)?"""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return "course_lib" in source
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "course_lib" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "course_lib":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.split(".")[0] == "course_lib":
                return True
    return False


# --- the sandboxed process ------------------------------------------------------------------


class Aborted(BaseException):  # not an Exception: checks must not catch it
    """The notebook's process timed out or died: nothing more can be graded in it."""


_SANDBOX: dict = {}  # "ok": bool, "why": str — probed once per grader process


def sandbox_available() -> tuple[bool, str]:
    if "ok" not in _SANDBOX:
        ok, why = False, ""
        if sys.platform != "linux" or not shutil.which("unshare"):
            why = "needs Linux and util-linux's unshare"
        else:
            cmd = [*_UNSHARE, "true"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
                ok, why = r.returncode == 0, r.stderr.strip()[:200]
            except (OSError, subprocess.SubprocessError) as exc:
                why = str(exc)
        _SANDBOX.update(ok=ok, why=why)
    return _SANDBOX["ok"], _SANDBOX["why"]


_UNSHARE = ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork",
            "--kill-child"]  # fmt: skip


def _paths_python_needs() -> list[str]:
    paths = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        paths.add(os.path.realpath(p))
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(os.path.realpath(sysconfig.get_paths()[key]))
    exe = os.path.realpath(sys.executable)
    paths.add(os.path.dirname(exe))
    # only the top-most of nested paths (binding /usr twice is harmless but slow)
    return sorted(p for p in paths if not any(p != q and p.startswith(q + "/") for q in paths))


class Kernel:
    """One student's IPython process, in its own temporary folder (and sandbox when available)."""

    def __init__(self, course: Course, timeout: float, memory_mb: int, sandbox: bool):
        self.timeout, self.deadline = timeout, time.monotonic() + timeout
        self.tmp = Path(tempfile.mkdtemp(prefix="grade-"))
        box = self.tmp / "box"
        lib, home, work = box / "lib", box / "home", box / "work"
        for rel, data in course.library.items():
            (lib / rel).parent.mkdir(parents=True, exist_ok=True)
            (lib / rel).write_bytes(data)
        for name, data in course.kernel_files.items():
            (lib / name).write_bytes(data)
        for d in (home / ".ipython", home / ".jupyter", home / ".config", home / ".cache", work,
                  box / "tmp"):  # fmt: skip
            d.mkdir(parents=True)
        (self.tmp / "root").mkdir()
        to_kernel_r, self._to_kernel = os.pipe()
        self._from_kernel, from_kernel_w = os.pipe()
        config = {
            "path": [str(lib)]
            + [os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")],
            "cwd": str(work),
            "fd_in": to_kernel_r,
            "fd_out": from_kernel_w,
            "rlimits": {
                "RLIMIT_AS": memory_mb * 2**20,
                "RLIMIT_CPU": int(timeout) + 30,
                "RLIMIT_FSIZE": 256 * 2**20,
                "RLIMIT_CORE": 0,
            },
        }
        if sandbox:
            config["sandbox"] = {
                "root": str(self.tmp / "root"),
                "ro": _paths_python_needs(),
                "rw": [str(box)],
                "ro_inside": [str(lib)],
            }
        else:
            for p in lib.rglob("*"):  # read-only for a non-root user (root ignores it)
                p.chmod(0o555 if p.is_dir() else 0o444)
        (self.tmp / "config.json").write_text(json.dumps(config))
        (lib / "config.json").write_text(json.dumps(config))
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "IPYTHONDIR": str(home / ".ipython"),
            "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
            "JUPYTER_DATA_DIR": str(home / ".jupyter" / "data"),
            "MPLCONFIGDIR": str(home / ".config" / "matplotlib"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "TMPDIR": "/tmp" if sandbox else str(box / "tmp"),
            "MPLBACKEND": "Agg",
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        cmd = [sys.executable, "-S", "-E", "-s", "-B", str(lib / "grade_kernel.py"),
               str(lib / "config.json")]  # fmt: skip
        if sandbox:
            cmd = [*_UNSHARE, "--", *cmd]
        self._log = open(self.tmp / "kernel.log", "wb")  # closed in close()
        self.proc = subprocess.Popen(
            cmd,
            pass_fds=(to_kernel_r, from_kernel_w),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        os.close(to_kernel_r)
        os.close(from_kernel_w)

    def request(self, message: dict) -> dict:
        """Send one request and wait for its answer, within the notebook's time budget."""
        try:
            grade_kernel.send(self._to_kernel, message)
            (n,) = struct.unpack("!I", self._read(4))
            if n > grade_kernel.MAX_MESSAGE:
                raise Aborted(f"the notebook sent {n} bytes at once (limit 64 MB)")
            reply = json.loads(self._read(n))
        except (BrokenPipeError, EOFError, ConnectionError):
            raise Aborted(self._death()) from None
        except (ValueError, RecursionError) as exc:
            raise Aborted(f"the notebook's process sent garbage ({str(exc)[:80]})") from None
        if not isinstance(reply, dict):
            raise Aborted("the notebook's process sent garbage")
        if "toolarge" in reply:
            raise Aborted("the answer was too large to send (more than 64 MB)")
        return reply

    def _read(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_kernel], [], [], left)[0]:
                self.kill()
                raise Aborted(f"timed out after {self.timeout:g} s")
            chunk = os.read(self._from_kernel, min(n - got, 2**20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return "the notebook's process stopped answering"
        log = (self.tmp / "kernel.log").read_text(errors="replace").strip().splitlines()
        tail = f" ({log[-1][:160]})" if log else ""
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        if code == 137 or code == -9:
            how += ", e.g. out of memory"
        return f"the kernel died ({how}){tail}"

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._to_kernel)  # end of requests: the process exits by itself ...
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)  # (so its CPU time is accounted to us) ...
        self.kill()  # ... or is killed with everything it started
        with contextlib.suppress(OSError):
            os.close(self._from_kernel)
        self._log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _die_with_parent() -> None:  # in the child before exec: killed if the grader dies
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class StudentFunction(RemoteFunction):
    """The grader's stand-in for a student's function: each call runs in the sandbox."""

    def __init__(self, kernel: Kernel, name: str):
        self.kernel, self.name = kernel, name

    def call(self, *args, **kwargs):
        try:
            message = {
                "op": "call",
                "name": self.name,
                "args": [grade_kernel.encode_argument(a) for a in args],
                "kwargs": {k: grade_kernel.encode_argument(v) for k, v in kwargs.items()},
            }
        except grade_kernel.NotPlainData as exc:
            raise CheckProblem(
                f"the check passes a {exc} object, which cannot be sent to the student's "
                "process (checks must pass plain data or a Built recipe)"
            ) from None
        reply = self.kernel.request(message)
        gens = [a for a in [*args, *kwargs.values()] if _is_generator(a)]
        for gen, state in zip(gens, reply.get("states", []), strict=False):
            gen.bit_generator.state = grade_kernel.decode(state)  # the student used this rng
        if "raised" in reply:
            raise _exception(reply["raised"])
        try:
            return grade_kernel.decode(reply.get("value"))
        except (ValueError, TypeError, KeyError) as exc:
            raise CheckProblem(f"the answer could not be read ({exc})") from None

    def __repr__(self) -> str:
        return f"<your function {self.name}>"


class CheckProblem(BaseException):  # passes through call_student's `except Exception`
    """The check cannot be run in this grader (e.g. it passes an object instead of a recipe)."""


def _is_generator(x) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.random.Generator)


def _exception(info: dict) -> Exception:
    """An exception like the student's (same type name and message), made of data only."""
    name, message = str(info.get("type", "Exception")), str(info.get("message", ""))
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception) and cls is not ExerciseError):
        cls = type(name if name.isidentifier() else "Error", (Exception,), {})
    try:
        return cls(message)
    except Exception:  # builtins with other signatures (UnicodeError, OSError)
        return type(name, (Exception,), {})(message)


# --- one notebook -----------------------------------------------------------------------------


def _course() -> Course:
    if "course" not in _COURSE:
        _COURSE["course"] = Course()
    return _COURSE["course"]


_COURSE: dict = {}


def _message(err: BaseException) -> str:
    text = str(err)
    m = re.search(r"Exercise \d+\.\d+ is not right yet\.\n(.*)", text, re.S)
    return (m.group(1) if m else text).strip()


def run_check(kernel: Kernel, check: Check, hidden_seed: int) -> tuple[bool, str]:
    """Run one official check here, on the student's answers living in ``kernel``."""
    try:
        return _run_check(kernel, check, hidden_seed)
    except (CheckProblem, Exception) as err:  # e.g. an answer value too deeply nested to read
        return False, f"the check could not use your answer: {type(err).__name__}: {err}"


def _run_check(kernel: Kernel, check: Check, hidden_seed: int) -> tuple[bool, str]:
    args = []
    for kind, value in check.args:
        if kind == "value":
            args.append(value)
            continue
        got = kernel.request({"op": "get", "name": value})
        if got.get("kind") == "missing":
            return False, f"`{value}` is not defined when the check runs"
        if got.get("kind") == "callable":
            args.append(StudentFunction(kernel, value))
        else:
            args.append(grade_kernel.decode(got.get("value")))
    params = inspect.signature(check.function).parameters
    takes_seed = "seed" in params and params["seed"].kind is inspect.Parameter.KEYWORD_ONLY
    for seed in (0, hidden_seed) if takes_seed else (None,):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                check.function(*args, **({} if seed is None else {"seed": seed}))
        except ExerciseError as err:
            hidden = f" (on the grader's hidden inputs, seed={seed})" if seed else ""
            return False, _message(err) + hidden
        except CheckProblem as err:
            return False, f"not graded: {err}"
        except Exception as err:  # a check that cannot read the answer
            return False, f"the check could not use your answer: {type(err).__name__}: {err}"
    return True, ""


def grade(
    path: Path,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    memory_mb: int = DEFAULT_MEMORY_MB,
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
        cells = parse_notebook(path.read_bytes())
        template = course.identify(cells, path)
    except NotGradable as exc:
        result.error = f"not gradable: {exc}"
        return result
    except OSError as exc:
        result.error = f"not gradable: cannot read the file ({exc.strerror})"
        return result
    result.lecture = template.name
    steps = plan(cells, template)
    if sandbox is None:
        sandbox = sandbox_available()[0]
    if not sandbox:
        result.notes.append("no sandbox: " + (sandbox_available()[1] or "disabled"))
    seed = secrets.randbelow(2**31 - 1) + 1 if hidden_seed is None else hidden_seed
    try:
        kernel = Kernel(course, timeout, memory_mb, sandbox)
    except OSError as exc:  # no temporary space, no process: the grader's problem, said so
        result.error = f"not gradable: could not start a Python process for it ({exc})"
        return result
    last_error: dict | None = None
    flagged: set[str] = set()
    pending_flag = False
    try:
        for step in steps:
            if step.kind == "run":
                if step.student and imports_course_lib(step.source):
                    pending_flag = True
                reply = kernel.request({"op": "run", "code": step.source})
                if step.student:
                    last_error = (
                        reply.get("error") if isinstance(reply.get("error"), dict) else None
                    )
                continue
            if pending_flag:
                flagged.add(step.exercise)
                pending_flag = False
            ok, why = run_check(kernel, template.checks[step.exercise], seed)
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
    result.uses_course_lib = sorted(flagged, key=_order)
    result.seconds = round(time.monotonic() - started, 2)
    return result


# --- a class ----------------------------------------------------------------------------------


def _order(ex: str) -> list[int]:
    return [int(x) for x in ex.split(".")]


def _result_from(data: dict) -> Result:
    data["exercises"] = {k: tuple(v) for k, v in data["exercises"].items()}
    return Result(**data)


def _worker(conn, path: str, options: dict) -> None:
    try:
        result = grade(Path(path), **options)
    except BaseException as exc:  # report, never hang the parent
        result = Result(path, None, error=f"not gradable: the grader failed ({exc!r:.200})")
    conn.send_bytes(json.dumps(asdict(result)).encode())
    conn.close()


def grade_many(paths: list[Path], jobs: int, **options) -> list[Result]:
    """Grade notebooks in parallel, each in a forked copy of this (already loaded) grader."""
    course = _course()  # loaded before any student code runs; forked children share it
    sandbox_available()
    if jobs <= 1 or len(paths) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [grade(p, course=course, **options) for p in paths]
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


def print_summary(r: Result) -> None:
    print(f"\n{r.notebook}  ({r.lecture or '?'})")
    if r.error:
        print(f"  ❌ {r.error}")
        return
    for ex, (ok, why) in sorted(r.exercises.items(), key=lambda kv: _order(kv[0])):
        print(f"  {'✅' if ok else '❌'} Exercise {ex}" + ("" if ok else ":"))
        if not ok:
            print("     " + why.replace("\n", "\n     "))
    if r.uses_course_lib:
        print(f"  ⚠️  imports course_lib in the answer to {', '.join(r.uses_course_lib)}")
    passed = sum(ok for ok, _ in r.exercises.values())
    print(f"  {passed}/{len(r.exercises)} exercises passed")


def write_csv(results: list[Result], out: Path) -> None:
    ids = sorted({e for r in results for e in r.exercises}, key=_order)
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["notebook", "lecture", *[f"exercise {e}" for e in ids], "passed", "total",
                    "error", "uses course_lib", "reasons", "seconds"])  # fmt: skip
        for r in results:
            cells = [
                ("" if e not in r.exercises else "pass" if r.exercises[e][0] else "fail")
                for e in ids
            ]
            reasons = "; ".join(
                f"{e}: {' '.join(why.split())[:300]}"
                for e, (ok, why) in sorted(r.exercises.items(), key=lambda kv: _order(kv[0]))
                if not ok
            )
            w.writerow([r.notebook, r.lecture or "", *cells,
                        sum(ok for ok, _ in r.exercises.values()), len(r.exercises),
                        r.error or "", " ".join(r.uses_course_lib), reasons, r.seconds])  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks or folders of notebooks")
    parser.add_argument("--csv", type=Path, help="write one row per notebook to this CSV file")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="notebooks graded at once (default: the number of cores)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds for one notebook (default {DEFAULT_TIMEOUT})")  # fmt: skip
    parser.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB,
                        help="address-space limit of a notebook's process")  # fmt: skip
    parser.add_argument("--hidden-seed", type=int, help="fix the hidden inputs (default: random)")
    args = parser.parse_args(argv)
    if not args.paths and os.environ.get("NB"):  # `make grade NB=...` passes the name this way
        args.paths = [Path(os.environ["NB"])]
    files: list[Path] = []
    for p in args.paths:
        files += sorted(p.rglob("*.ipynb")) if p.is_dir() else [p]
    if not files:
        parser.error("no notebooks found")
    ok, why = sandbox_available()
    if not ok:
        print(f"note: no sandbox ({why or 'unavailable'}): notebooks run with your own rights "
              "and network; verdicts are still computed by the grader.", file=sys.stderr)  # fmt: skip
    options = {"timeout": args.timeout, "memory_mb": args.memory_mb}
    if args.hidden_seed is not None:
        options["hidden_seed"] = args.hidden_seed
    results = grade_many(files, args.jobs, **options)
    for r in results:
        print_summary(r)
    if args.csv:
        write_csv(results, args.csv)
        print(f"\nwrote {args.csv}")
    return 0 if all(r.all_passed for r in results) else 1


def file_digest(paths: list[Path]) -> str:
    """One hash of these files' contents (tests use it to show nothing trusted was modified)."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p).encode() + b"\0" + (p.read_bytes() if p.is_file() else b"-"))
    return h.hexdigest()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
