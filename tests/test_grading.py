"""The grader against a dishonest or careless student (issue 17).

Fast tests read notebooks and plan their runs without any kernel. Tests marked ``slow`` grade
small notebooks built from the lecture-01 exercise: every attack below is tried in an *unsolved*
notebook, which must fail every exercise, and an untouched notebook graded after it in the same
run must fail every exercise too.
"""

from __future__ import annotations

import base64
import copy
import csv
import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from course_lib.checks import Built
from tools.grading import cli as grade
from tools.grading import grade_kernel

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "exercises" / "01_softmax.ipynb"
SOLUTION = ROOT / "solutions" / "01_softmax.ipynb"
IDS = ("1.1", "1.2", "1.3", "1.4")


def _nb(path=STUB):
    return nbformat.read(path, as_version=4)


def _with_cell(source: str, nb=None, at: int = 3, **metadata):
    """The lecture-01 notebook (unsolved by default) with one more code cell at position ``at``."""
    nb = copy.deepcopy(nb or _nb())
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata.update(metadata)  # unvalidated: tags may be anything a student saves
    nb.cells.insert(at, cell)
    return nb


def _write(folder: Path, name: str, nb) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(nb, (bytes, str)):
        path.write_bytes(nb if isinstance(nb, bytes) else nb.encode())
    else:
        path.write_text(json.dumps(nb))  # as saved, without nbformat's validation
    return path


# --- plain data across the process boundary --------------------------------------------------


def test_codec_round_trips_plain_data_and_never_unpickles():
    value = {
        "t": (1, 2.5, float("inf"), float("nan"), None, True, "s"),
        ("low", "er"): 5,  # tuple keys, as in exercise 8.3
        "big": 2**70,
        "arr": np.arange(6.0).reshape(2, 3),
        "mask": np.array([True, False]),
        "scalar": np.int64(3),
        "tensor": torch.tensor([[1.5, -2.0]]),
        "objects": np.array([1, "a"], dtype=object),
    }
    back = grade_kernel.decode(json.loads(json.dumps(grade_kernel.encode(value))))
    assert back["t"][:3] == (1, 2.5, float("inf")) and np.isnan(back["t"][3])
    assert back[("low", "er")] == 5 and back["big"] == 2**70
    np.testing.assert_array_equal(back["arr"], value["arr"])
    assert back["mask"].dtype == bool and type(back["scalar"]) is np.int64
    assert isinstance(back["tensor"], torch.Tensor) and back["tensor"].tolist() == [[1.5, -2.0]]
    assert back["objects"].tolist() == [1, "a"]


def test_objects_cross_as_inert_stand_ins_and_checks_may_only_send_recipes():
    class Sneaky(float):
        def __eq__(self, other):  # a student's "equal to everything"
            return True

    back = grade_kernel.decode(grade_kernel.encode([Sneaky(1.0), object()]))
    assert type(back[0]) is float and back[0] != 2.0
    assert type(back[1]).__name__ == "object" and isinstance(back[1], grade_kernel.Opaque)
    with pytest.raises(grade_kernel.NotPlainData):
        grade_kernel.encode_argument(torch.nn.Linear(2, 2))
    recipe = grade_kernel.encode_argument(
        Built("course_lib.checks.given_torch:scripted_model", script=[[3, 2]])
    )
    built = grade_kernel.decode(recipe, build=grade_kernel._build)
    assert built.script == [[3, 2]]
    with pytest.raises(ValueError, match="only built on the student's side"):
        grade_kernel.decode(recipe)
    gen = np.random.default_rng(5)
    copy_ = grade_kernel.decode(grade_kernel.encode(gen))
    assert copy_.random() == gen.random()


@functools.cache
def _scalar_forms() -> dict:
    """Every numpy and torch form a scalar answer takes (issue 40: a 0-d array became shape (1,))."""
    w = torch.tensor([0.5, -1.0], requires_grad=True)
    loss = (w**2).sum()
    with warnings.catch_warnings():  # torch's __array__ predates numpy 2's copy keyword
        warnings.simplefilter("ignore", DeprecationWarning)
        as_array = np.array(loss.detach())
    forms = {
        "np.array(0.8808)": np.array(0.8808),
        "np.array(3)": np.array(3),
        "np.array(True)": np.array(True),
        "np.array(1+2j)": np.array(1 + 2j),
        "0-d float32": np.array(0.25, dtype=np.float32),
        "0-d view": np.arange(4.0)[2, ...],
        "np.float64": np.float64(0.8808),
        "np.float32": np.float32(0.8808),
        "np.float16": np.float16(0.5),
        "np.int64": np.int64(3),
        "np.int8": np.int8(-3),
        "np.uint16": np.uint16(7),
        "np.bool_": np.bool_(True),
        "np.complex64": np.complex64(1 - 1j),
        "loss.numpy()": loss.detach().numpy(),
        "np.array(loss)": as_array,
        "np.asarray(loss.item())": np.asarray(loss.item()),
        "loss.item()": loss.item(),
        "loss (requires grad)": loss,
        "loss.detach()": loss.detach(),
        "torch.tensor(3)": torch.tensor(3),
        "torch.tensor(True)": torch.tensor(True),
        "torch float16": torch.tensor(0.5, dtype=torch.float16),
        "torch float64": torch.tensor(0.8808, dtype=torch.float64),
    }
    for name in list(forms):  # and each in a list and a tuple, as answers are returned
        forms[f"[{name}]"] = [forms[name]]
    return forms


@pytest.mark.parametrize("name", list(_scalar_forms()))
def test_every_scalar_form_crosses_unchanged(name):
    value = _scalar_forms()[name]
    back = grade_kernel.decode(json.loads(json.dumps(grade_kernel.encode(value))))
    for got, sent in [(back[0], value[0])] if isinstance(value, list) else [(back, value)]:
        assert type(got) is type(sent), (type(got), type(sent))
        if isinstance(sent, (np.ndarray, np.generic, torch.Tensor)):
            assert got.shape == sent.shape and got.dtype == sent.dtype, (got, sent)
            assert np.asarray(got.detach() if hasattr(got, "detach") else got).tolist() == (
                np.asarray(sent.detach() if hasattr(sent, "detach") else sent).tolist()
            )
        else:
            assert got == sent


def test_a_quiz_answer_given_as_a_0d_array_passes():
    from course_lib.checks.quiz import check_quiz

    check = grade.Check("Q1.1", check_quiz, [("name", "answer_1"), ("value", "01"), ("value", 1)])
    assert grade.run_check(_FakeKernel(np.array(0.8808)), check, hidden_seed=5) == (True, "")
    assert grade.run_check(_FakeKernel(np.float32(0.8808)), check, hidden_seed=5) == (True, "")


def test_decoding_is_bounded_in_elements_and_array_headers():
    many = [[] for _ in range(grade_kernel.MAX_ELEMENTS + 1)]
    with pytest.raises(ValueError, match="more than 2,097,152 elements"):
        grade_kernel.decode(many)
    assert len(grade_kernel.decode(many[:1000])) == 1000
    text = json.dumps(grade_kernel.encode(many)).encode()
    assert grade_kernel.elements(text) > 2 * grade_kernel.MAX_ELEMENTS  # refused before parsing
    # an .npy header claiming 10**12 elements for 8 bytes of data: refused, nothing allocated
    record = grade_kernel.encode(np.zeros(1))
    raw = base64.b64decode(record["npy"]).replace(b"(1,)", b"(1000000000000,)")
    record["npy"] = base64.b64encode(raw).decode()
    with pytest.raises(ValueError, match="header does not match"):
        grade_kernel.decode(record)


def test_a_grader_worker_is_bounded_in_memory():
    """Each notebook's grading runs in a forked worker whose private memory may grow by
    WORKER_MEMORY_MB at most: a blow-up is that worker's MemoryError, not the machine's."""
    from tools.grading import running

    assert running.WORKER_MEMORY_MB == 2048
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            running.limit_memory(64)
            try:
                bytearray(256 * 2**20)
                os.write(w, b"allocated")
            except MemoryError:
                os.write(w, b"MemoryError")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 100)
    os.waitpid(pid, 0)
    assert got == b"MemoryError"


# --- any file: a clear "not gradable" row, never a crash --------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "invalid JSON"),
        (b"{ not json", "invalid JSON"),
        (b"\xff\xfe\x00garbage", "invalid JSON"),
        (b"[1, 2]", "a JSON list"),
        (b'{"cells": 5, "nbformat": 4}', "no list of cells"),
        (b'{"cells": [7], "nbformat": 4}', "cell 0 is a int"),
        (b'{"cells": [{"cell_type": "code", "source": 3}], "nbformat": 4}', "source is int"),
        (b'{"cells": [{"cell_type": "shell", "source": ""}], "nbformat": 4}', "cell_type"),
        (b'{"worksheets": [], "nbformat": 3}', "nbformat 3"),
        (b"[" * 100000 + b"]" * 100000, "invalid JSON"),
        (b'{"cells": [], "nbformat": 4}', "matches none"),
    ],
)
def test_malformed_files_are_not_gradable(tmp_path, content, message):
    result = grade.grade(_write(tmp_path, "01_x.ipynb", content))
    assert result.error.startswith("not gradable") and message in result.error, result.error
    assert not result.all_passed


def test_a_missing_or_huge_file_is_not_gradable(tmp_path):
    assert "cannot read" in grade.grade(tmp_path / "nope.ipynb").error
    big = _write(tmp_path, "01_big.ipynb", b" " * (grade.MAX_NOTEBOOK_BYTES + 1))
    assert "20 MB" in grade.grade(big).error


def _grade_bounded(paths: list[Path], seconds: float = 60) -> dict[str, str]:
    """{file name: error} of grading ``paths`` one by one in a subprocess bounded in time and
    address space (before issue 40 a FIFO hung the grader and /dev/zero exhausted memory)."""
    code = (
        "import json, resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, resource.RLIM_INFINITY))\n"
        "from tools.grading import cli as grade\n"
        "print(json.dumps({p: grade.grade(p, 30).error for p in sys.argv[1:]}))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, *map(str, paths)], cwd=ROOT,
                       capture_output=True, text=True, timeout=seconds,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return {Path(p).name: e for p, e in json.loads(r.stdout.splitlines()[-1]).items()}


def test_only_regular_files_are_read_never_what_a_link_points_to(tmp_path):
    """A class folder from `git clone` or an archive keeps symlinks: a link named ….ipynb to a
    solution (absolute or relative), to /dev/zero, a FIFO, a device, a folder: each "not
    gradable" with the reason; the grader neither grades the target, nor hangs, nor fills memory."""
    folder = tmp_path / "class"
    folder.mkdir()
    solution = ROOT / "solutions" / "13_modern_transformer.ipynb"
    (folder / "13_absolute.ipynb").symlink_to(solution)
    (folder / "13_relative.ipynb").symlink_to(os.path.relpath(solution, folder))
    (folder / "01_zero.ipynb").symlink_to("/dev/zero")
    os.mkfifo(folder / "01_fifo.ipynb")
    (folder / "01_folder.ipynb").mkdir()
    kinds = {"13_absolute.ipynb": "a symbolic link", "13_relative.ipynb": "a symbolic link",
             "01_zero.ipynb": "a symbolic link to /dev/zero", "01_fifo.ipynb": "a named pipe",
             "01_folder.ipynb": "a folder"}  # fmt: skip
    if os.geteuid() == 0:  # an archive unpacked as root can hold device nodes
        os.mknod(folder / "01_device.ipynb", 0o644 | stat.S_IFCHR, os.makedev(1, 5))
        kinds["01_device.ipynb"] = "a device"
    errors = _grade_bounded(sorted(folder.iterdir()))
    for name, kind in kinds.items():
        assert errors[name].startswith(f"not gradable: it is {kind}"), (name, errors[name])
        assert "regular files" in errors[name]
    # what the command line collects from the folder: every one of them, each reported
    assert sorted(p.name for p in folder.rglob("*.ipynb")) == sorted(kinds)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "nan"], "--timeout must be"),
        (["--timeout", "inf"], "--timeout must be"),
        (["--timeout", "0"], "--timeout must be"),
        (["--hidden-seed", "-1"], "--hidden-seed must be"),
        (["--hidden-seed", "0"], "--hidden-seed must be"),
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--memory-mb", "0"], "--memory-mb must be at least"),
        (["--csv", "{nb}"], "is a notebook"),
        (["--csv", "{tmp}/out.ipynb"], "is a notebook"),
        (["--csv", "{tmp}/missing/out.csv"], "does not exist"),
        (["--csv", "{tmp}"], "is a folder"),
        (["--csv", "{tmp}/json.csv"], "holds JSON"),
        (["--csv", "/proc/out.csv"], "cannot write in /proc"),
    ],
)
def test_bad_command_lines_are_refused_before_grading(tmp_path, capsys, monkeypatch, args, message):
    nb = _write(tmp_path, "01_x.ipynb", _nb())
    (tmp_path / "json.csv").write_text('{"cells": []}')
    graded = []
    monkeypatch.setattr(grade, "grade_many", lambda *a, **k: graded.append(a) or [])
    args = [a.format(nb=nb, tmp=tmp_path) for a in args]
    with pytest.raises(SystemExit) as exit_:
        grade.main([str(nb), *args])
    assert exit_.value.code == 2 and not graded
    assert message in capsys.readouterr().err
    assert nb.read_text() == json.dumps(_nb())  # --csv never overwrote the notebook


@pytest.mark.slow  # grades two notebooks in the sandbox: 16 s, a quarter of make unit's budget
def test_identity_comes_from_content_not_name_or_metadata(tmp_path):
    course = grade._course()
    nb = _nb(SOLUTION)
    nb.metadata["course"] = {"exercise": "05_transformer_layer"}
    cells = grade.parse_notebook(nbformat.writes(nb).encode())
    assert course.identify(cells, Path("homework.ipynb")).name == "01_softmax"
    assert course.identify(cells, Path("05_transformer_layer.ipynb")).name == "01_softmax"
    # Graded by content all the same; the name mismatch is a warning (a CSV column).
    result = grade.grade(_write(tmp_path, "05_transformer_layer.ipynb", nb))
    assert result.error is None and result.lecture == "01_softmax" and result.all_passed, result
    assert "lecture 01" in result.warning and "file name says lecture 05" in result.warning
    assert grade.grade(_write(tmp_path, "01_mine.ipynb", nb)).warning is None


def _checks(nb) -> list[str]:
    course = grade._course()
    cells = grade.parse_notebook(nbformat.writes(nb).encode())
    return [
        s.exercise for s in grade.plan(cells, course.templates["01_softmax"]) if s.kind == "check"
    ]


def test_each_exercise_is_checked_exactly_once_whatever_the_tags_and_ids():
    nb = _nb()
    for ex in IDS:  # extra cells with the exercise tags, and one that "raises-exception"
        nb.cells.append(nbformat.v4.new_code_cell("pass", metadata={"tags": [f"exercise-{ex}"]}))
    nb.cells.append(nbformat.v4.new_code_cell("1/0", metadata={"tags": ["raises-exception"]}))
    check = next(c for c in nb.cells if grade.exercise_id(c) == "1.1")
    twin = copy.deepcopy(check)
    twin.id = "a-new-id"
    nb.cells.insert(nb.cells.index(check), twin)  # the check cell again, under a new id
    nb.cells[2].metadata["tags"] = 5  # an integer where a list of tags belongs
    nb.cells.remove(next(c for c in nb.cells if grade.exercise_id(c) == "1.3"))  # deleted
    assert _checks(nb) == list(IDS)
    old = _nb()  # nbformat 4.4: no cell ids at all
    old.nbformat_minor = 4
    for c in old.cells:
        del c["id"]
    assert _checks(old) == list(IDS)


@pytest.mark.slow  # runs make grade
def test_make_grade_never_hands_the_file_name_to_a_shell(tmp_path):
    name = "x`touch PWNED`$(touch PWNED2); 'q'.ipynb"
    r = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "grade", f"NB={tmp_path / name}", "STAMP=",
         f"PY={sys.executable}"],  # fmt: skip
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert not list(tmp_path.glob("PWNED*")) and not list(ROOT.glob("PWNED*"))
    assert "not gradable: cannot read the file" in r.stdout, r.stdout + r.stderr
    assert "***" not in r.stderr, r.stderr


# --- attacks, graded for real ------------------------------------------------------------------

SOLUTIONS_PATH = ROOT / "solutions" / "01_softmax.ipynb"
ATTACKS = {
    "showtraceback": "get_ipython().showtraceback = lambda *a, **k: None\n"
    "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)",
    "input_transformer": "get_ipython().input_transformers_post.append(\n"
    "    lambda lines: ['pass\\n'] if any('check_' in l for l in lines) else lines)",
    "rebind_and_patch": "import numpy as np, course_lib.checks as c, course_lib.checks.lecture01 as l\n"
    "np.allclose = lambda *a, **k: True\nc.check_array = l.check_array = lambda *a, **k: None\n"
    "c.call_student = l.call_student = lambda *a, **k: None\n"
    "check_stable_softmax = check_softmax_temperature = check_attention_weights = print",
    "fake_junit_then_kill": "import os, pathlib\nxml = '<testsuite><testcase name=\"Cell 3\"/></testsuite>'\n"
    "for d in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]:\n"
    "    try: (d / 'report.xml').write_text(xml)\n    except OSError: pass\n"
    "os.kill(os.getpid(), 9)",
    "exec_solutions": "import json, pathlib, course_lib\n"
    f"for p in [pathlib.Path(course_lib.__file__).resolve().parents[1], pathlib.Path({str(ROOT)!r})]:\n"
    "    s = p / 'solutions' / '01_softmax.ipynb'\n"
    "    if s.exists():\n"
    "        for c in json.loads(s.read_text())['cells']:\n"
    "            if c['cell_type'] == 'code' and 'def ' in ''.join(c['source']): exec(''.join(c['source']))",
    "startup_file": "import os, pathlib\nd = pathlib.Path.home() / '.ipython/profile_default/startup'\n"
    "d.mkdir(parents=True, exist_ok=True)\n"
    "(d / '00-win.py').write_text('import course_lib.checks as c; c.check_array = lambda *a, **k: None')",
    "system_exit": "raise SystemExit(0)",
    "memory_hog": "x = bytearray(2**40)",
}


IN_ANSWERS = {"exec_solutions"}  # written in place of every answer (after the stubs' definitions)


def _in_answers(code: str):
    nb = _nb()
    for cell in nb.cells:
        if 'raise NotImplementedError("Exercise' in cell.source:
            cell.source = code
    return nb


HANG_TIMEOUT = 30


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """One class run (2 jobs): each attack, then an untouched notebook, plus the usual suspects."""
    folder = tmp_path_factory.mktemp("class")
    names = []
    for attack, code in ATTACKS.items():
        nb = _in_answers(code) if attack in IN_ANSWERS else _with_cell(code)
        names.append(_write(folder, f"01_{attack}.ipynb", nb).name)
        names.append(_write(folder, f"01_{attack}_then_untouched.ipynb", _nb()).name)
    extra = {
        "01_tags_and_ids.ipynb": _tagged_mess(),
        "01_integer_tags.ipynb": _with_cell("x = 1", tags=7),
        "01_hang.ipynb": _with_cell("while True:\n    pass"),
        "01_dead.ipynb": _with_cell("import os\nos._exit(3)"),
        "01_solved with 'quotes' `ticks` $(x).ipynb": _nb(SOLUTION),
        "01_course_lib_answer.ipynb": _course_lib_answer(),
        "01_no_return.ipynb": _no_return(),
        "01_broken.ipynb": "{ not json",
    }
    for name, nb in extra.items():
        names.append(_write(folder, name, nb).name)
    paths = [folder / n for n in names]
    # 01_hang runs (and burns a core) until the timeout; the slowest other notebook, the solved
    # one, takes about 5 s on an idle core, so 30 s leaves room on a machine six times as busy.
    results = grade.grade_many(paths, jobs=2, timeout=HANG_TIMEOUT)
    return {Path(r.notebook).name: r for r in results}


def _tagged_mess():
    nb = _nb()
    for ex in IDS:
        nb.cells.append(
            nbformat.v4.new_code_cell("pass", metadata={"tags": [f"exercise-{ex}", "check"]})
        )
    nb.cells.append(
        nbformat.v4.new_code_cell("raise ValueError", metadata={"tags": ["raises-exception"]})
    )
    return nb


def _course_lib_answer():
    nb = _nb()
    answer = next(c for c in nb.cells if "def stable_softmax" in c.source)
    answer.source = "from course_lib import softmax as stable_softmax"
    return nb


def _no_return():
    nb = _nb()
    answer = next(c for c in nb.cells if "def stable_softmax" in c.source)
    answer.source = "def stable_softmax(x):\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n    e / e.sum(axis=-1, keepdims=True)"
    return nb


def _failed_all(result) -> bool:
    return (
        result.error is None
        and set(result.exercises) == set(IDS)
        and not any(ok for ok, _ in result.exercises.values())
    )


@pytest.mark.slow
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack_fails_and_the_next_untouched_notebook_still_fails(graded_class, attack):
    assert _failed_all(graded_class[f"01_{attack}.ipynb"]), graded_class[f"01_{attack}.ipynb"]
    assert _failed_all(graded_class[f"01_{attack}_then_untouched.ipynb"])


@pytest.mark.slow
def test_odd_notebooks_are_graded_and_reported(graded_class):
    assert _failed_all(graded_class["01_tags_and_ids.ipynb"])
    assert _failed_all(graded_class["01_integer_tags.ipynb"])
    hang = graded_class["01_hang.ipynb"]
    assert _failed_all(hang) and f"timed out after {HANG_TIMEOUT} s" in hang.exercises["1.1"][1]
    dead = graded_class["01_dead.ipynb"]
    assert _failed_all(dead) and "the kernel died (exit code 3)" in dead.exercises["1.1"][1]
    assert graded_class["01_solved with 'quotes' `ticks` $(x).ipynb"].all_passed
    assert "not gradable" in graded_class["01_broken.ipynb"].error


@pytest.mark.slow
def test_feedback_names_none_and_flags_course_lib(graded_class):
    no_return = graded_class["01_no_return.ipynb"].exercises["1.1"]
    assert not no_return[0] and "got None" in no_return[1] and "return" in no_return[1]
    flagged = graded_class["01_course_lib_answer.ipynb"]
    assert flagged.exercises["1.1"][0] and flagged.uses_course_lib == ["1.1"]
    assert "calls course_lib.softmax.softmax" in flagged.course_lib["1.1"]


@pytest.mark.slow
def test_a_notebook_cannot_change_what_the_grader_trusts(tmp_path):
    """Rewriting templates, checks and startup files, then an untouched notebook: both fail.

    Runs a copy of the grader (so nothing real is at risk) with one job, so the untouched
    notebook is graded by the same process right after the tampering one.
    """
    repo = tmp_path / "repo"
    for part in ("tools", "course_lib", "exercises"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    trusted = [p for p in repo.rglob("*") if p.is_file()]
    before = grade.file_digest(trusted)
    attack = (
        "import json, pathlib\n"
        f"repo = pathlib.Path({str(repo)!r})\n"
        "for path, text in [\n"
        "    (repo / 'course_lib/checks/__init__.py', 'def call_student(*a, **k): pass\\n'),\n"
        "    (repo / 'course_lib/checks/lecture01.py', 'check_stable_softmax = check_softmax_temperature = check_attention_weights = print\\n'),\n"
        "    (repo / 'exercises/01_softmax.ipynb', '{}'),\n"
        "    (repo / 'tools/grading/cli.py', 'raise SystemExit(0)'),\n"
        "    (repo / 'tools/grading/verdict.py', 'def run_check(*a, **k): return True, \"\"\\n'),\n"
        "    (pathlib.Path.home() / '.ipython/profile_default/startup/00-x.py', 'x = 1'),\n"
        "]:\n"
        "    try:\n"
        "        path.parent.mkdir(parents=True, exist_ok=True)\n"
        "        path.write_text(text)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    folder = tmp_path / "class"
    _write(folder, "01_a_tamper.ipynb", _with_cell(attack))
    _write(folder, "01_b_untouched.ipynb", _nb())
    out = tmp_path / "grades.csv"
    env = {**os.environ, "PYTHONPATH": str(repo)}
    r = subprocess.run(
        [sys.executable, "-m", "tools.grade", str(folder), "--jobs", "1", "--csv", str(out)],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    rows = {Path(row["notebook"]).name: row for row in csv.DictReader(out.open())}
    for row in rows.values():
        assert (row["exercise 1.1"], row["exercise 1.2"], row["exercise 1.3"]) == ("fail",) * 3
    if grade.sandbox_available()[0]:
        assert grade.file_digest(trusted) == before, "the sandbox let a notebook write the repo"


# The notebook keeps the grader's request pipe open but never reads it again (it reads an empty
# pipe instead); the grader's next request is 1 MB, more than a pipe holds.
SWAP_DESCRIPTOR = (
    "import json, os, sys\n"
    "fd = json.load(open(sys.argv[1]))['fd_in']\n"
    "KEEP = os.dup(fd)\n"
    "r, w = os.pipe()\n"
    "os.dup2(r, fd)\n"
)


@pytest.mark.slow
def test_a_kernel_that_stops_reading_cannot_hang_the_grader(tmp_path):
    nb = _with_cell(SWAP_DESCRIPTOR, _nb(SOLUTION))
    nb.cells.insert(4, nbformat.v4.new_code_cell("# " + "x" * 2**20))
    path = _write(tmp_path, "01_swap.ipynb", nb)
    out: dict = {}
    worker = threading.Thread(target=lambda: out.update(r=grade.grade(path, 10)), daemon=True)
    worker.start()
    worker.join(90)  # before issue 40 the grader's write blocked for ever
    assert not worker.is_alive(), "the grader hung on its write to the kernel"
    r = out["r"]
    assert _failed_all(r) and "timed out after 10 s" in r.exercises["1.1"][1], r


@pytest.mark.slow
def test_an_answer_of_millions_of_values_is_refused_unread(tmp_path):
    """56 MB of nested empty lists made the grader's decoder hold 2.2 GB (39x): any reply of more
    than MAX_ELEMENTS values is now refused unread (3 million empty lists here, 12 MB)."""
    nb = _nb()
    cell = next(c for c in nb.cells if "def stable_softmax" in c.source)
    cell.source = "def stable_softmax(x):\n    return [[]] * 3_000_000\n"
    r = grade.grade(_write(tmp_path, "01_lists.ipynb", nb), 120)
    ok, why = r.exercises["1.1"]
    assert not ok and "too large to read (more than 2,097,152 values)" in why, why


@pytest.mark.slow
def test_nbformat_44_without_ids_grades_like_the_original(tmp_path):
    nb = _nb(SOLUTION)
    nb.nbformat_minor = 4
    for c in nb.cells:
        del c["id"]
    assert grade.grade(_write(tmp_path, "01_old.ipynb", nb)).all_passed


class _FakeKernel:
    """Answers "get" with a value, as the sandbox does for a non-function answer."""

    def __init__(self, value):
        self.value = value

    def request(self, message):
        return {"kind": "value", "value": grade_kernel.encode(self.value)}


def test_checks_with_a_seed_also_run_on_hidden_inputs():
    from course_lib.checks import ExerciseError

    def check_answer(answer, *, seed: int = 0):
        if answer != seed % 7:  # a "hard-coded" answer is right for seed 0 only
            raise ExerciseError("9.9", f"expected {seed % 7}, got {answer}.")

    check = grade.Check("9.9", check_answer, [("name", "answer")])
    ok, why = grade.run_check(_FakeKernel(0), check, hidden_seed=12)
    assert not ok and "expected 5, got 0" in why and "hidden inputs, seed=12" in why
    assert grade.run_check(_FakeKernel(5), check, hidden_seed=12)[0] is False  # seed 0 first
    missing = grade.Check("9.9", check_answer, [("name", "answer")])
    kernel = _FakeKernel(None)
    kernel.request = lambda m: {"kind": "missing"}
    assert grade.run_check(kernel, missing, 1) == (
        False,
        "`answer` is not defined when the check runs",
    )


def test_student_exceptions_come_back_as_data_with_their_type_name():
    from course_lib.checks import ExerciseError

    assert (
        type(grade._exception({"type": "NotImplementedError", "message": "x"}))
        is NotImplementedError
    )
    mine = grade._exception({"type": "MyError", "message": "boom"})
    assert type(mine).__name__ == "MyError" and str(mine) == "boom"
    forged = grade._exception({"type": "ExerciseError", "message": "1.1 passed"})
    assert not isinstance(forged, ExerciseError)
    assert not isinstance(grade._exception({"type": "SystemExit", "message": ""}), SystemExit)


@pytest.mark.slow  # clones the course, loads the grader in a subprocess
def test_templates_are_the_committed_exercises_not_the_students_edits(tmp_path):
    """A student answers exercises/ in place and saves own notebooks there: the grader still
    trusts only the committed templates (issue 15: `make grade` works on either)."""
    from tools.dev.in_clean_clone import clean_clone

    clone = tmp_path / "clone"
    clean_clone(clone)
    ex = clone / "exercises" / "01_softmax.ipynb"
    ex.write_text(ex.read_text().replace("check_stable_softmax(stable_softmax)", "pass"))
    (clone / "exercises" / "99_mine.ipynb").write_text(STUB.read_text())
    code = (
        "from tools.grading import cli as grade; from tools.grading.course import QUIZZES; "
        "c = grade.Course(); "
        "t = c.templates['01_softmax']; print(sorted(c.templates) == sorted("
        "[p.stem for p in grade.EXERCISES.glob('[0-9][0-9]_*.ipynb') if p.stem != '99_mine'] "
        "+ [p.stem for p in QUIZZES.glob('[0-9][0-9]_*_quiz.ipynb')]), "
        "'1.1' in t.checks)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=clone, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(clone)}, timeout=300)  # fmt: skip
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]
