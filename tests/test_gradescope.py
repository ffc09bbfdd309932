"""The Gradescope autograder (``make gradescope``, tools/grading/gradescope.py).

Fast: the notebook names resolve, results.json follows Gradescope's documented format
(``tests/data/gradescope_results.schema.json``, written from the fields its specification
lists), and a submission with no notebook, several or one too large is refused with the reason.

Slow: the zip holds what grading needs and nothing it must not (no solution, no other
template), byte for byte the same when built again; ``run_autograder`` itself, from the built zip unpacked into a temporary folder laid out as
Gradescope's (``source/``, ``submission/``, ``results/``), as root (this machine and Gradescope's
containers), on sample submissions: right (the official solution), wrong (forged outputs),
broken (not a notebook), none; and, as root and as a user, malicious (writes results.json
itself, reads the solution and the checks, leaves a process behind to write results.json
later).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from tools.grading import gradescope
from tools.grading.notebook import MAX_NOTEBOOK_BYTES
from tools.grading.results import Result

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "tests" / "data" / "gradescope_results.schema.json").read_text())
SUBMISSIONS = ROOT / "tests" / "data" / "submissions"
EXERCISES_01 = ["1.1", "1.2", "1.3", "1.4"]


def valid(data: dict) -> dict:
    jsonschema.validate(data, SCHEMA)
    return data


# --- the zip -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def zip_01(tmp_path_factory) -> Path:
    return gradescope.build("01", tmp_path_factory.mktemp("zip"))


@pytest.mark.slow  # a build, make or a subprocess
def test_the_zip_holds_the_grader_and_one_template_and_no_answer(zip_01):
    with zipfile.ZipFile(zip_01) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        config = json.loads(zf.read("course/gradescope.json"))
    names = set(infos)
    assert zip_01.name == "01_softmax_autograder.zip"
    # Gradescope's two files at the root of the archive, executable
    for name in ("setup.sh", "run_autograder"):
        assert name in names and (infos[name].external_attr >> 16) & 0o111, name
    assert {"course/course_lib/__init__.py", "course/course_lib/checks/lecture01.py",
            "course/tools/grade/__main__.py", "course/tools/grading/cli.py",
            "course/requirements.txt", "course/requirements-nodeps.txt",
            "course/pyproject.toml"} <= names  # fmt: skip
    templates = sorted(n for n in names if n.endswith(".ipynb"))
    assert templates == ["course/exercises/01_softmax.ipynb"]
    tops = {n.split("/")[1] for n in names if n.startswith("course/")}
    assert not tops & {"solutions", "notebooks", "tests", ".git", "quizzes", "build"}, tops
    assert not any("__pycache__" in n or "/cluster/" in n for n in names)
    assert config["template"] == "01_softmax" and config["visibility"] == "visible"
    assert len(config["commit"]) == 40


@pytest.mark.slow  # a build, make or a subprocess
def test_the_zip_is_the_same_byte_for_byte(zip_01, tmp_path):
    again = gradescope.build("01", tmp_path)
    assert again.read_bytes() == zip_01.read_bytes()


@pytest.mark.parametrize(
    "wanted, expected",
    [("01", ("exercises", "01_softmax")), ("1", ("exercises", "01_softmax")),
     ("01_softmax", ("exercises", "01_softmax")),
     ("exercises/01_softmax.ipynb", ("exercises", "01_softmax")),
     ("q01", ("quizzes", "01_softmax_quiz")), ("q1", ("quizzes", "01_softmax_quiz")),
     ("01_softmax_quiz", ("quizzes", "01_softmax_quiz"))],
)  # fmt: skip
def test_exercise_names_resolve_as_make_start_reads_them(wanted, expected):
    assert gradescope.choose_notebook(wanted) == expected


@pytest.mark.parametrize("wanted", ["99", "softmaxx", "q99"])
def test_an_unknown_exercise_is_refused_with_the_choices(wanted):
    with pytest.raises(gradescope.BuildError, match=r"EXERCISE='.*' names none .*01 \("):
        gradescope.choose_notebook(wanted)


def test_a_bad_visibility_is_refused(tmp_path):
    with pytest.raises(gradescope.BuildError, match="VISIBILITY must be one of .*got 'public'"):
        gradescope.build("01", tmp_path, visibility="public")


@pytest.mark.slow  # a build, make or a subprocess
def test_make_gradescope_without_exercise_says_how():
    out = subprocess.run(["make", "-s", "gradescope", "EXERCISE="], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2 and "usage: make gradescope EXERCISE=01" in out.stdout


# --- results.json ------------------------------------------------------------------------------


def test_results_json_has_one_test_per_exercise_in_gradescopes_format():
    r = Result("sub/01_softmax.ipynb", "01_softmax", hidden_seed=7, seconds=3.4)
    r.exercises = {"1.2": (False, "expected 0.5, got 0.7\nHint: divide by T"),
                   "1.1": (True, ""), "1.3": (True, ""), "1.4": (False, "nan \x1b[2J")}  # fmt: skip
    r.uses_course_lib, r.course_lib = ["1.3"], {"1.3": ["calls course_lib.softmax"]}
    data = valid(gradescope.results_json(r, EXERCISES_01, "after_due_date"))
    assert [t["number"] for t in data["tests"]] == EXERCISES_01
    assert [t["name"] for t in data["tests"]][:2] == ["Exercise 1.1", "Exercise 1.2"]
    assert [t["score"] for t in data["tests"]] == [1.0, 0.0, 1.0, 0.0]
    assert {t["max_score"] for t in data["tests"]} == {1.0}
    assert {t["visibility"] for t in data["tests"]} == {"after_due_date"}
    assert data["score"] == 2.0 and data["execution_time"] == 3
    assert data["tests"][1]["output"] == "expected 0.5, got 0.7\nHint: divide by T"
    assert "\x1b" not in data["tests"][3]["output"] and "\\x1b" in data["tests"][3]["output"]
    assert "2/4 exercises passed" in data["output"] and "seed 7" in data["output"]
    assert data["stdout_visibility"] == "hidden"
    # the reference flags are for the instructor (extra_data), not the student's page
    assert data["extra_data"]["uses_course_lib"] == {"1.3": ["calls course_lib.softmax"]}
    assert "course_lib" not in data["output"]


def test_results_json_of_a_file_that_is_not_a_notebook_fails_every_exercise_with_why():
    r = Result("sub/x.ipynb", None, error="not gradable: not a notebook (invalid JSON: …)")
    data = valid(gradescope.results_json(r, EXERCISES_01))
    assert data["score"] == 0 and len(data["tests"]) == 4
    assert all("invalid JSON" in t["output"] for t in data["tests"])
    assert data["output"].startswith("Your notebook could not be graded: not gradable")


def test_quiz_items_are_named_as_the_csv_names_them():
    r = Result("q.ipynb", "01_softmax_quiz", exercises={"Q1.1": (True, ""), "Q1.2": (True, "")})
    data = valid(gradescope.results_json(r, ["Q1.1", "Q1.2"]))
    assert [t["name"] for t in data["tests"]] == ["Quiz 1 item 1", "Quiz 1 item 2"]
    assert "2/2 items passed" in data["output"]


@pytest.mark.parametrize(
    "bad",
    [{"tests": [{"score": 1, "max_score": 1, "visibilty": "visible"}]},  # a misspelt field
     {"score": 1, "visibility": "public"}, {"score": "1"}, {"output": "no score anywhere"},
     {"tests": [{"max_score": 1}]}],
)  # fmt: skip
def test_the_schema_refuses_what_gradescope_does_not_document(bad):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


def test_a_refusal_is_valid_and_scores_zero():
    data = valid(gradescope.refusal("No notebook in your submission", EXERCISES_01, "hidden"))
    assert data["score"] == 0 and {t["visibility"] for t in data["tests"]} == {"visible"}
    assert all(t["output"] == "No notebook in your submission" for t in data["tests"])


# --- the submission folder ---------------------------------------------------------------------


def test_a_submission_without_a_notebook_is_refused_with_what_it_holds(tmp_path):
    (tmp_path / "answers.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("hi\n")
    nb, why = gradescope.find_submission(tmp_path, "01_softmax")
    assert nb is None
    assert "No notebook (.ipynb)" in why and "answers.py, notes.txt" in why
    assert "01_softmax.ipynb" in why
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "it is empty" in gradescope.find_submission(empty, "01_softmax")[1]


def test_several_notebooks_are_refused_and_checkpoints_ignored(tmp_path):
    shutil.copy(SUBMISSIONS / "01_softmax_ada.ipynb", tmp_path / "a.ipynb")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    shutil.copy(SUBMISSIONS / "01_softmax_ada.ipynb", tmp_path / ".ipynb_checkpoints" / "a.ipynb")
    assert gradescope.find_submission(tmp_path, "01_softmax") == (tmp_path / "a.ipynb", None)
    shutil.copy(SUBMISSIONS / "01_softmax_ben.ipynb", tmp_path / "b.ipynb")
    nb, why = gradescope.find_submission(tmp_path, "01_softmax")
    assert nb is None and "2 notebooks (a.ipynb, b.ipynb)" in why


def test_a_notebook_over_the_size_limit_is_refused_with_its_size(tmp_path):
    big = tmp_path / "01_softmax.ipynb"
    with big.open("wb") as fh:  # sparse: nothing is written but its size
        fh.truncate(MAX_NOTEBOOK_BYTES + 1)
    nb, why = gradescope.find_submission(tmp_path, "01_softmax")
    assert nb is None and "is 20.0 MB" in why and "at most 20 MB" in why
    assert "Clear its outputs" in why


def test_results_json_replaces_a_planted_file_or_link(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    (results / "results.json").symlink_to(target)
    gradescope.write_results(results, {"score": 1.0})
    assert not (results / "results.json").is_symlink()
    assert json.loads((results / "results.json").read_text()) == {"score": 1.0}
    assert target.read_text() == "{}"
    assert sorted(p.name for p in results.iterdir()) == ["results.json"]


# --- run_autograder (slow: the grader runs the notebooks) ---------------------------------------


def _malicious(root: Path) -> dict:
    """Lecture 01's exercise notebook whose 1.1 is right only if the notebook could read the
    course's checks or solution; it also writes results.json, a marker beside it, and leaves a
    process behind that writes results.json two seconds later."""
    nb = json.loads((ROOT / "exercises" / "01_softmax.ipynb").read_text())
    results = root / "results" / "results.json"
    secrets = [root / "source" / "course" / "course_lib" / "checks" / "lecture01.py",
               ROOT / "solutions" / "01_softmax.ipynb",
               ROOT / "course_lib" / "checks" / "lecture01.py"]  # fmt: skip
    forged = json.dumps({"score": 1000.0, "output": "forged"})
    attack = f"""import os, pathlib
FORGED = {forged!r}
READ = []
for secret in {[str(s) for s in secrets]!r}:
    try:
        READ.append(pathlib.Path(secret).read_text()[:100])
    except OSError:
        pass
for attempt in range(2):
    try:
        pathlib.Path({str(results)!r}).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path({str(results)!r}).write_text(FORGED)
        pathlib.Path({str(results.with_name("pwned"))!r}).write_text("pwned")
    except OSError:
        pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        time.sleep(2)
        try:
            pathlib.Path({str(results)!r}).write_text(FORGED)
        except OSError:
            pass
    os._exit(0)


def stable_softmax(x):
    import numpy as np
    x = np.asarray(x, dtype=float)
    if READ:  # only if the course's checks or the solution could be read
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return np.exp(x) / np.exp(x).sum()
"""
    for cell in nb["cells"]:
        if cell.get("id") == "cell-05":
            cell["source"] = attack
    return nb


def _gradescope_folder(tmp_path: Path, zipped: Path, submission: dict[str, bytes]) -> Path:
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    with zipfile.ZipFile(zipped) as zf:
        zf.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):
        (root / "source" / name).chmod(0o755)  # zipfile does not restore modes
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")  # as Gradescope does
    for name, data in submission.items():
        (root / "submission" / name).write_bytes(data)
    return root


def run_autograder(root: Path, prefix: list[str] | None = None) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, OMP_NUM_THREADS="1")
    out = subprocess.run([*(prefix or []), str(root / "run_autograder")], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads((root / "results" / "results.json").read_text()), out.stdout


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope's containers grade as root")
def test_run_autograder_on_right_wrong_and_broken_submissions(tmp_path, zip_01):
    root_nb = json.loads((ROOT / "solutions" / "01_softmax.ipynb").read_text())
    cases = {
        "right": {"01_softmax.ipynb": json.dumps(root_nb).encode()},
        "wrong": {"01_softmax.ipynb": (SUBMISSIONS / "01_softmax_ben.ipynb").read_bytes()},
        "broken": {"01_softmax.ipynb": (SUBMISSIONS / "01_softmax_dan.ipynb").read_bytes()},
        "no notebook": {"01_softmax.py": b"def stable_softmax(x): ...\n"},
    }
    got = {}
    for name, files in cases.items():
        root = _gradescope_folder(tmp_path / name.replace(" ", "_"), zip_01, files)
        got[name], stdout = run_autograder(root)
        valid(got[name])
        assert [t["number"] for t in got[name]["tests"]] == EXERCISES_01
    assert got["right"]["score"] == 4.0, got["right"]
    assert "4/4 exercises passed" in got["right"]["output"]
    wrong = {t["number"]: t for t in got["wrong"]["tests"]}
    assert got["wrong"]["score"] == 1.0  # 1.2 only: ben's forged "passed" outputs count for nothing
    assert wrong["1.1"]["score"] == 0 and "1.1" in wrong["1.1"]["number"]
    assert wrong["1.1"]["output"] and wrong["1.1"]["output"] != "Passed."
    assert got["broken"]["score"] == 0 and "invalid JSON" in got["broken"]["output"]
    assert got["no notebook"]["score"] == 0 and "01_softmax.py" in got["no notebook"]["output"]


MODES = ["root", "user"] if os.geteuid() == 0 else ["user"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_a_malicious_notebook_cannot_write_results_json_nor_read_the_answers(zip_01, mode):
    """As root (Gradescope's containers, this machine) and as a user (a container run with
    ``--user``, a laptop): the notebook's writes to results.json, the process it leaves behind
    and its reads of the checks and the solution all miss."""
    from test_grading_sandbox import USER_UID, _as_user_prefix

    base = Path(tempfile.mkdtemp(prefix="gradescope-"))
    try:
        root = base / "autograder"
        nb = json.dumps(_malicious(root)).encode()
        _gradescope_folder(base, zip_01, {"01_softmax.ipynb": nb})
        (root / "results").mkdir()
        for folder in (base, root, root / "results"):
            folder.chmod(0o777)  # the unprivileged grader writes results/ here
        prefix = _as_user_prefix(USER_UID) if mode == "user" and os.geteuid() == 0 else []
        data, stdout = run_autograder(root, prefix)
        assert "note: sandbox:" in stdout, stdout
        assert ("not host root" in stdout) == (mode == "root"), stdout
        time.sleep(3)  # the process it left behind would have written by now
        after = json.loads((root / "results" / "results.json").read_text())
        assert after == data, "a student's process wrote results.json"
        valid(data)
        assert data["output"] != "forged" and data["score"] < 1000
        tests = {t["number"]: t for t in data["tests"]}
        assert tests["1.1"]["score"] == 0, "the notebook read the checks or the solution"
        assert sorted(p.name for p in (root / "results").iterdir()) == ["results.json"]
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow  # a build, make or a subprocess
def test_the_malicious_notebook_does_what_it_says_outside_the_sandbox(tmp_path):
    """The attack of the slow test works where nothing isolates it (so that test can fail): run
    as a plain script, its cell forges results.json and reads a secret, and 1.1 is then right."""
    root = tmp_path / "autograder"
    secret = root / "source" / "course" / "course_lib" / "checks" / "lecture01.py"
    secret.parent.mkdir(parents=True)
    secret.write_text("# the checks\n")
    cell = next(c for c in _malicious(root)["cells"] if c.get("id") == "cell-05")
    script = cell["source"] + (
        "\nimport numpy as np\nx = np.array([1000.0, 999.0])\n"
        "print(np.allclose(stable_softmax(x), [0.7310585786, 0.2689414214]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.stdout.strip().endswith("True"), out.stdout + out.stderr
    time.sleep(2.5)
    assert json.loads((root / "results" / "results.json").read_text())["output"] == "forged"
    assert (root / "results" / "pwned").exists()


@pytest.mark.slow  # loads the course's templates and checks
def test_without_the_sandbox_no_student_code_runs_and_every_test_says_why(
    tmp_path, monkeypatch, capsys
):
    import tools.grading.running
    import tools.grading.sandbox

    monkeypatch.setattr(tools.grading.sandbox, "sandbox_available", lambda: (False, "no userns"))
    monkeypatch.delenv("AUTOGRADER_ALLOW_NO_SANDBOX", raising=False)

    def never(*args, **kwargs):
        raise AssertionError("a notebook was graded without the sandbox")

    monkeypatch.setattr(tools.grading.running, "grade_many", never)
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(SUBMISSIONS / "01_softmax_ada.ipynb", root / "submission")
    assert gradescope.run(root, {"template": "01_softmax", "visibility": "visible"}) == 0
    data = valid(json.loads((root / "results" / "results.json").read_text()))
    assert data["score"] == 0 and len(data["tests"]) == 4
    assert all("could not start its sandbox" in t["output"] for t in data["tests"])
    log = capsys.readouterr().out
    assert "cannot start in this container (no userns)" in log
    assert "AUTOGRADER_ALLOW_NO_SANDBOX=1" in log
