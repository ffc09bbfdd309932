"""A student's own clone: after ordinary use `make test` stays green and changes none of their
files or of their Jupyter's state, and `make update` takes a course update.

The test plays a student with their own HOME, in a clone of the course's repository (a branch
of HEAD): their JupyterLab settings; their `make lab` running; lectures 02 and 11 opened in it in
headless Chromium and saved, which leaves git status clean and their workspace holding the open
tab; lecture 01 executed for real and saved in place; every other lecture, solution and
exercise saved the way Jupyter saves a notebook that was run (the kernel's Python version in the
metadata, cells run out of order, a 3.6 MB output, a traceback with a home-folder path); every
exercise answered in place; their own notebooks and a script saved in the course folders and
elsewhere; a copy made with `make start`; and a new commit in the course's repository. The test
first shows that the hygiene checks run on that working tree do fail, then runs `make test` with
a subset of its targets (lint, the hygiene checks, the `make lab` tests, nbval on lecture 01: the
whole suite would take too long inside a test) and checks that it passes, that nbval collected
the committed notebooks and not the student's, and that not one file of the student, nor of
their HOME (workspace, settings, running server's files), changed, their server still running.
Then `git pull` refuses the update and `make update` takes it, keeping the run lecture aside.
`make grade` works on both places a student may answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from _browser import Browser, environment_without_proxies
from _lab import lab_process, open_and_save
from nbclient import NotebookClient

from tools.notebooks.make_exercises import CODE_STUB, MARKDOWN_STUB
from tools.notebooks.notebook_form import write

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.slow,  # clones the course and runs make test / make grade in it: `make slow`
    pytest.mark.skipif(
        not (ROOT / ".venv" / ".installed").exists(), reason="needs `make venv` first"
    ),
]
VENV = ROOT / ".venv"


# The student's own HOME (set by the fixture): their JupyterLab keeps its tabs, settings and
# running servers' files there, as on their laptop. No variable points Jupyter elsewhere.
STUDENT: dict = {}
_JUPYTER_VARS = ("JUPYTER_", "JUPYTERLAB_", "IPYTHONDIR", "MPLCONFIGDIR", "XDG_")


def _student_env(cwd: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "MAKEFLAGS", "MFLAGS") and not k.startswith(_JUPYTER_VARS)}  # fmt: skip
    env["PYTHONPATH"] = str(cwd)  # as in the student's clone: its own course_lib
    if "home" in STUDENT:
        env["HOME"] = str(STUDENT["home"])
    return env


def _run(cmd: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=_student_env(cwd), capture_output=True, text=True, **kw)


def _git(cwd: Path, *args: str) -> str:
    ident = ["-c", "user.name=Course", "-c", "user.email=course@example.org"]
    return subprocess.run(["git", *ident, *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


def _home_files(home: Path) -> dict[str, str]:
    return {p.relative_to(home).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file()}  # fmt: skip


def _student_files(clone: Path) -> dict[str, str]:
    """Every file of the clone (not .git, not the linked .venv) -> sha256 of its bytes."""
    files = {}
    for path in sorted(clone.rglob("*")):
        rel = path.relative_to(clone)
        if rel.parts[0] in (".git", ".venv") or not path.is_file():
            continue
        files[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def _saved_after_a_run(nb: nbformat.NotebookNode, big: bool) -> None:
    """Change ``nb`` the way running it in Jupyter (out of order) and saving it does."""
    nb.metadata["language_info"] = {
        "name": "python",
        "version": "3.11.7",
        "mimetype": "text/x-python",
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
    }
    code = [c for c in nb.cells if c.cell_type == "code"]
    for n, cell in enumerate(reversed(code), start=7):
        cell.execution_count = n
    error = nbformat.v4.new_output(
        "error",
        ename="ValueError",
        evalue="shapes (3,4) and (3,4) not aligned",
        traceback=['File "/home/student/course/notebooks/x.py", line 3'],
    )
    code[-1].outputs = [*code[-1].outputs, error]
    if big:
        blob = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0K" * 450_000})
        code[0].outputs = [*code[0].outputs, blob]


def _answer_in_place(exercise: Path, solution: Path) -> None:
    """Write the solution's answers into the exercise's answer cells, as a student would."""
    ex, sol = nbformat.read(exercise, as_version=4), nbformat.read(solution, as_version=4)
    answers = {c.id: c.source for c in sol.cells}
    for cell in ex.cells:
        if CODE_STUB in cell.source or MARKDOWN_STUB in cell.source:
            lines = answers[cell.id].splitlines()
            keep = [
                ln
                for ln in lines
                if "### BEGIN SOLUTION" not in ln and "### END SOLUTION" not in ln
            ]
            cell.source = "\n".join(keep)  # the answer without the markers
    nbformat.write(ex, exercise)


def _own_notebook(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cells = [nbformat.v4.new_code_cell("import os,sys\nx=[1,2 ,3]\nx")]  # fails ruff
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)


@pytest.fixture(scope="module")
def student_clone(tmp_path_factory, chromium):
    base = tmp_path_factory.mktemp("student")
    # The course's repository (a branch of it) and the student's clone of it.
    upstream = base / "upstream"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(upstream)], check=True)
    _git(upstream, "checkout", "--quiet", "-B", "course")
    clone = base / "attention-course"
    subprocess.run(["git", "clone", "--quiet", str(upstream), str(clone)], check=True)
    (clone / ".venv").symlink_to(VENV.resolve(), target_is_directory=True)
    py = str(clone / ".venv" / "bin" / "python")
    STUDENT.update(home=base / "home", upstream=upstream)
    home = STUDENT["home"]
    # Their JupyterLab settings (a dark theme), their running `make lab`, and lectures 02 and 11
    # opened in it in a real browser and saved (Ctrl+S, what autosave does): the saved lectures
    # are the committed ones, byte for byte, so git sees no change.
    theme = home / ".jupyter/lab/user-settings/@jupyterlab/apputils-extension"
    theme.mkdir(parents=True)
    (theme / "themes.jupyterlab-settings").write_text('{"theme": "JupyterLab Dark"}')
    stack = contextlib.ExitStack()
    env = _student_env(clone)
    env["NO_PROXY"] = environment_without_proxies()["NO_PROXY"]
    url, _, token, _, _ = stack.enter_context(
        lab_process(["make", "--no-print-directory", "-o", ".venv/.installed", "lab"], env, clone)
    )
    STUDENT.update(lab=url, token=token)
    lab = url.split("/lab/")[0]
    with Browser(chromium, timeout=120) as browser:
        for rel in ("notebooks/02_qkv_self_attention.ipynb", "notebooks/11_gpt.ipynb"):
            open_and_save(browser, lab, token, clone / rel, rel)
        browser.pump(3.0)  # JupyterLab saves the workspace (the open tab) a moment later
    assert _run(["git", "status", "--porcelain", "notebooks"], clone).stdout == ""
    workspaces = list((home / ".jupyter/lab/workspaces").glob("*.jupyterlab-workspace"))
    assert workspaces and "11_gpt.ipynb" in workspaces[0].read_text(), workspaces

    # Lecture 01, run for real in the student's kernel and saved in place.
    lecture = clone / "notebooks" / "01_softmax.ipynb"
    nb = nbformat.read(lecture, as_version=4)
    NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(lecture.parent)}}).execute()
    _saved_after_a_run(nb, big=False)
    own = nbformat.v4.new_code_cell("1 / 0  # trying something", execution_count=99)
    own.outputs = [
        nbformat.v4.new_output(
            "error", ename="ZeroDivisionError", evalue="division by zero", traceback=[]
        )
    ]
    nb.cells.insert(3, own)  # a cell of their own, which raises: nbval fails on this copy
    nbformat.write(nb, lecture)
    # Everything else: saved as after an out-of-order run; lecture 09 with a 3.6 MB output.
    for folder in ("notebooks", "solutions", "exercises"):
        for path in sorted((clone / folder).glob("[0-9][0-9]_*.ipynb")):
            if path != lecture:
                nb = nbformat.read(path, as_version=4)
                _saved_after_a_run(nb, big=path.name.startswith("09_"))
                nbformat.write(nb, path)
    # Every exercise answered in place.
    for exercise in sorted((clone / "exercises").glob("*.ipynb")):
        _answer_in_place(exercise, ROOT / "solutions" / exercise.name)
    # Their own files, in the course's folders and elsewhere.
    _own_notebook(clone / "notebooks" / "Untitled.ipynb")
    _own_notebook(clone / "exercises" / "my_try.ipynb")
    _own_notebook(clone / "scratch" / "notes.ipynb")
    (clone / "scratch" / "play.py").write_text("import numpy as np\nx=np.random.rand(3)\n")
    # A copy in my-work/, answered there.
    start = _run(["make", "--no-print-directory", "start", "NB=01"], clone)
    assert start.returncode == 0 and "my-work/01_softmax_exercises.ipynb" in start.stdout, start
    _answer_in_place(
        clone / "my-work" / "01_softmax_exercises.ipynb", ROOT / "solutions" / "01_softmax.ipynb"
    )
    assert _run([py, "-m", "ruff", "check", "--quiet", "."], clone).returncode != 0
    # The course moves on: lecture 01 (which the student ran and saved) and lecture 11 (opened
    # only) change upstream, and a new file appears.
    for rel in ("notebooks/01_softmax.ipynb", "notebooks/11_gpt.ipynb"):
        nb = nbformat.read(upstream / rel, as_version=4)
        nb.cells[0].source += "\n\n(Updated.)"  # the title cell
        write(nb, upstream / rel)
    (upstream / "CHANGES.md").write_text("A course update.\n")
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "--quiet", "-m", "A course update")
    with stack:
        yield clone


def test_the_student_files_would_fail_the_hygiene_checks_run_in_place(student_clone):
    """The counterfactual: the checks `make test` runs do fail on the student's working tree."""
    py = str(student_clone / ".venv" / "bin" / "python")
    out = _run([py, "-m", "pytest", "-q", "-x", "tests/test_repo.py"], student_clone)
    assert out.returncode == 1, out.stdout[-2000:]
    assert _run([py, "tools/notebooks/make_exercises.py", "--check"], student_clone).returncode == 1


def test_make_test_passes_and_changes_no_student_file(student_clone):
    before = _student_files(student_clone)
    status = _run(["git", "status", "--porcelain", "--untracked-files=all"], student_clone).stdout
    assert "exercises/01_softmax.ipynb" in status and "scratch/play.py" in status
    # `make check` runs lint, unit (which has hygiene), slow and notebooks: here lint, hygiene,
    # the `make lab` tests (their landing page is the README, not the student's open lecture 11)
    # and nbval of lecture 01.
    targets = "lint hygiene slow notebooks"
    cmd = ["make", "--no-print-directory", "-o", ".venv/.installed", "test"]
    cmd += [f"TEST_TARGETS={targets}", "NB_DIRS=notebooks/01_softmax.ipynb",
            "SLOW_TESTS=tests/test_make_lab.py"]  # fmt: skip
    home_before = _home_files(STUDENT["home"])
    started = time.monotonic()
    out = _run(cmd, student_clone, timeout=1800)
    print(f"make test (subset) took {time.monotonic() - started:.0f} s")
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    assert "Testing the course as committed" in out.stdout
    assert "passed" in out.stdout and "failed" not in out.stdout
    # nbval ran the committed lecture 01 (one item per code cell), not the student's copy.
    committed = nbformat.read(ROOT / "notebooks" / "01_softmax.ipynb", as_version=4)
    n_code = sum(c.cell_type == "code" for c in committed.cells)
    assert re.search(rf"^{n_code} passed", out.stdout, re.M), out.stdout[-3000:]
    assert _student_files(student_clone) == before, "make test changed the student's files"
    assert re.search(r"^3 passed", out.stdout, re.M), out.stdout[-3000:]  # test_make_lab.py
    # Their JupyterLab's workspace, settings and runtime files are as they were, and their
    # server still serves them.
    assert _home_files(STUDENT["home"]) == home_before, "make test changed the student's HOME"
    req = urllib.request.Request(STUDENT["lab"].split("/lab/")[0] + "/api/status",
                                 headers={"Authorization": f"token {STUDENT['token']}"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
    after = _run(["git", "status", "--porcelain", "--untracked-files=all"], student_clone).stdout
    assert after == status


def test_make_update_pulls_the_course_update_and_keeps_the_students_versions(student_clone):
    """After make test: `git pull` refuses (lecture 01 was run and saved); `make update` pulls,
    keeps the run lecture aside, and leaves the student's other files as they were."""
    pull = _run(["git", "pull", "--ff-only"], student_clone)
    assert pull.returncode != 0 and "would be overwritten" in pull.stderr, pull
    run_lecture = (student_clone / "notebooks" / "01_softmax.ipynb").read_bytes()
    answers = (student_clone / "my-work" / "01_softmax_exercises.ipynb").read_bytes()
    out = _run(["make", "--no-print-directory", "update"], student_clone, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    head = _git(student_clone, "rev-parse", "HEAD")
    assert head == _git(STUDENT["upstream"], "rev-parse", "HEAD"), out.stdout
    kept = list((student_clone / "my-work").glob("kept-*/notebooks/01_softmax.ipynb"))
    assert len(kept) == 1 and kept[0].read_bytes() == run_lecture, out.stdout
    assert "(Updated.)" in (student_clone / "notebooks" / "01_softmax.ipynb").read_text()
    assert "(Updated.)" in (student_clone / "notebooks" / "11_gpt.ipynb").read_text()
    assert (student_clone / "CHANGES.md").exists()
    assert (student_clone / "my-work" / "01_softmax_exercises.ipynb").read_bytes() == answers
    status = _run(["git", "status", "--porcelain"], student_clone).stdout
    assert "notebooks/01_softmax.ipynb" not in status and "exercises/01_softmax.ipynb" in status


@pytest.mark.parametrize(
    "where", ["exercises/01_softmax.ipynb", "my-work/01_softmax_exercises.ipynb"]
)
def test_make_grade_works_where_the_student_answers(student_clone, where):
    out = _run(["make", "--no-print-directory", "-o", ".venv/.installed", "grade", f"NB={where}"],
               student_clone, timeout=600)  # fmt: skip
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]


def test_in_clean_clone_sees_only_the_last_commit(tmp_path):
    clone = tmp_path / "attention-course"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(clone)], check=True)
    with (clone / "README.md").open("a") as f:
        f.write("my notes\n")
    (clone / "mine.txt").write_text("mine\n")
    probe = (
        "import os, pathlib, course_lib; "
        "print(pathlib.Path('README.md').read_text().endswith('my notes\\n'), "
        "pathlib.Path('mine.txt').exists(), os.getcwd(), course_lib.__file__, sep='|')"
    )
    out = _run([sys.executable, "tools/dev/in_clean_clone.py", sys.executable, "-c", probe], clone)
    assert out.returncode == 0, out.stderr
    assert "2 changed or untracked files" in out.stdout
    edited, untracked, cwd, lib = out.stdout.strip().splitlines()[-1].split("|")
    assert (edited, untracked) == ("False", "False")
    assert Path(cwd) != clone and lib.startswith(cwd), (cwd, lib)
    assert not Path(cwd).exists(), "the temporary clone was not removed"
    assert (clone / "README.md").read_text().endswith("my notes\n")
