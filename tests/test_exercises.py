"""The exercise pipeline: generated exercises stay in sync, and the grader can both pass and fail.

Grading runs each notebook in a fresh sandboxed kernel (a few seconds each): those tests are
marked ``slow``. The attacks of issue 17 are in tests/test_grading.py.
"""

from __future__ import annotations

import copy
import csv
from pathlib import Path

import nbformat
import pytest

from tools.grading import cli as grade
from tools.notebooks import make_exercises

ROOT = Path(__file__).resolve().parents[1]

SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))


def _check_ids(nb) -> list[str]:
    return [grade.exercise_id(c) for c in nb.cells if grade.exercise_id(c)]


def test_committed_exercises_are_generated_from_solutions():
    assert make_exercises.main(["--check"]) == 0, "run `make exercises` and commit exercises/"


def test_every_lecture_with_exercises_has_enough_checks():
    assert SOLUTIONS, "no solution notebooks"
    for path in SOLUTIONS:
        nb = nbformat.read(path, as_version=4)
        ids = _check_ids(nb)
        assert len(ids) == len(set(ids)), f"{path.name}: duplicate exercise ids {ids}"
        assert len(ids) >= 2, f"{path.name}: only {len(ids)} checked exercises"
        for cell in nb.cells:
            if grade.exercise_id(cell):
                assert "check" in cell.metadata["tags"], f"{path.name}: untagged check cell"


def test_stub_replacement_keeps_indentation():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\ny = 1"
    out = make_exercises.strip_solutions(src, "code")
    assert out == f"def f(x):\n    {make_exercises.CODE_STUB}\n\ny = 1"
    with pytest.raises(ValueError, match="unbalanced"):
        make_exercises.strip_solutions("### BEGIN SOLUTION\nx = 1", "code")


@pytest.mark.slow
@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_solutions_pass_and_untouched_stubs_fail(solution):
    ids = _check_ids(nbformat.read(solution, as_version=4))
    good = grade.grade(solution)
    assert good.error is None
    assert good.exercises == {i: (True, "") for i in ids}, good.exercises
    stub = grade.grade(ROOT / "exercises" / solution.name)
    assert set(stub.exercises) == set(ids)
    failed_on_stub = {i for i, (ok, _) in stub.exercises.items() if not ok}
    assert failed_on_stub == set(ids), (
        f"checks that pass on an untouched stub: {set(ids) - failed_on_stub}"
    )


# --- Tampering: the grader trusts nothing the student saved (lecture 01 as the example). ---

LECTURE01 = ROOT / "solutions" / "01_softmax.ipynb"


def _answer_cell(nb, marker: str):
    return next(c for c in nb.cells if c.cell_type == "code" and marker in c.source)


def _write(tmp_path: Path, nb, name="01_student.ipynb") -> Path:
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_wrong_answer_fails_even_with_saved_success_outputs(tmp_path):
    nb = nbformat.read(LECTURE01, as_version=4)  # has stored "passed" outputs everywhere
    cell = _answer_cell(nb, "def stable_softmax")
    cell.source = (
        "def stable_softmax(x):\n    e = np.exp(x)\n    return e / e.sum(axis=-1, keepdims=True)"
    )
    result = grade.grade(_write(tmp_path, nb))
    ok, why = result.exercises["1.1"]
    assert not ok and "expected" in why and "got" in why, why
    assert result.exercises["1.2"][0] and result.exercises["1.3"][0]
    assert not result.all_passed


@pytest.mark.slow
def test_correct_answer_written_differently_passes_with_extra_prints(tmp_path):
    nb = nbformat.read(ROOT / "exercises" / "01_softmax.ipynb", as_version=4)
    _answer_cell(nb, "def stable_softmax").source = (
        "def stable_softmax(x):\n"
        "    print('my own debugging output')\n"
        "    out = np.empty_like(x, dtype=float)\n"
        "    for idx in np.ndindex(x.shape[:-1]):\n"
        "        row = x[idx] - x[idx].max()\n"
        "        out[idx] = np.exp(row) / np.exp(row).sum()\n"
        "    return out"
    )
    _answer_cell(nb, "def softmax_with_temperature").source = (
        "def softmax_with_temperature(x, T):\n"
        "    assert T > 0 or (_ for _ in ()).throw(ValueError('T must be > 0'))\n"
        "    return stable_softmax(x / T)"
    )
    _answer_cell(nb, "def attention_weights").source = (
        "import math\n\ndef attention_weights(scores, d_k):\n"
        "    return stable_softmax(scores * (1 / math.sqrt(d_k)))"
    )
    check_14 = next(i for i, c in enumerate(nb.cells) if "check_saturation(" in c.source)
    _answer_cell(nb, "def mean_top_weight").source = (
        "def mean_top_weight(d_k, n_keys, scaled, rng, n_queries=500):\n"
        "    total = 0.0\n"
        "    for _ in range(n_queries):\n"
        "        s = rng.standard_normal((n_keys, d_k)) @ rng.standard_normal(d_k)\n"
        "        s = s / math.sqrt(d_k) if scaled else s\n"
        "        total += stable_softmax(s).max()\n"
        "    return total / n_queries"
    )
    nb.cells[check_14 - 1].source = "unscaled_dk = 2**4  # measured\nscaled_dk = None  # never"
    nb.cells.insert(3, nbformat.v4.new_code_cell("print('hello from the student')"))
    result = grade.grade(_write(tmp_path, nb, "alice_01.ipynb"))
    assert result.all_passed, result.exercises


@pytest.mark.slow
def test_edited_or_deleted_check_cells_are_restored(tmp_path):
    nb = nbformat.read(ROOT / "exercises" / "01_softmax.ipynb", as_version=4)
    checks = [c for c in nb.cells if grade.exercise_id(c)]
    checks[0].source = "print('✅ Exercise 1.1 passed: stable softmax')"  # a forged check
    nb.cells.remove(checks[1])  # and a deleted one
    result = grade.grade(_write(tmp_path, nb))
    assert set(result.exercises) == {"1.1", "1.2", "1.3", "1.4"}
    assert not any(ok for ok, _ in result.exercises.values())


@pytest.mark.slow  # runs the grader on notebooks
def test_broken_and_unknown_notebooks_are_reported(tmp_path):
    broken = tmp_path / "01_broken.ipynb"
    broken.write_text("{ not json")
    r = grade.grade(broken)
    assert r.error and "not gradable" in r.error and not r.all_passed
    unknown = nbformat.v4.new_notebook()
    r = grade.grade(_write(tmp_path, unknown, "homework.ipynb"))
    assert r.error and "matches none" in r.error


@pytest.mark.slow
def test_class_grading_writes_one_csv_row_per_notebook(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    right = nbformat.read(LECTURE01, as_version=4)
    nbformat.write(right, folder / "01_softmax_ada.ipynb")
    nbformat.write(
        nbformat.read(ROOT / "exercises" / "01_softmax.ipynb", as_version=4),
        folder / "01_softmax_bob.ipynb",
    )
    (folder / "01_softmax_eve.ipynb").write_text("{broken")
    out = tmp_path / "grades.csv"
    assert grade.main([str(folder), "--csv", str(out)]) == 1
    with out.open(newline="") as fh:
        rows = {Path(r["notebook"]).name: r for r in csv.DictReader(fh)}
    marks = ("exercise 1.1", "exercise 1.2", "exercise 1.3", "exercise 1.4", "passed", "total")
    assert [rows["01_softmax_ada.ipynb"][k] for k in marks] == ["pass"] * 4 + ["4", "4"]
    assert [rows["01_softmax_bob.ipynb"][k] for k in marks] == ["fail"] * 4 + ["0", "4"]
    assert "NotImplementedError" in rows["01_softmax_bob.ipynb"]["reasons"]
    assert "not gradable" in rows["01_softmax_eve.ipynb"]["error"]
    assert rows["01_softmax_bob.ipynb"]["hidden seed"].isdigit()  # any verdict reproducible


@pytest.mark.slow
def test_grader_copy_does_not_modify_student_file(tmp_path):
    nb = nbformat.read(LECTURE01, as_version=4)
    path = _write(tmp_path, copy.deepcopy(nb))
    before = path.read_text()
    grade.grade(path)
    assert path.read_text() == before


def test_every_cell_that_calls_a_check_is_tagged_and_graded():
    """A check cell without its exercise tag would never be graded (12.4 was, once)."""
    from tools.grading.course import calls_a_check, load_template

    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and calls_a_check(cell.source):
                assert grade.exercise_id(cell), f"{path.name} cell {i} calls a check untagged"
        template = load_template(path)
        assert template.problem is None, template.problem
        assert set(template.checks) == set(_check_ids(nb))


def test_the_grader_refuses_a_template_with_an_untagged_check(tmp_path):
    """The grader's own guard: a check it would not grade makes the notebook not gradable."""
    from tools.grading.course import Course

    folder = tmp_path / "exercises"
    folder.mkdir()
    nb = nbformat.read(ROOT / "exercises" / "12_fine_tuning.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "exercise-12.4" in c.metadata.get("tags", []))
    cell.metadata["tags"] = []
    nbformat.write(nb, folder / "12_fine_tuning.ipynb")
    course = Course(folder)
    assert "calls check_paired_counts" in course.templates["12_fine_tuning"].problem
    student = tmp_path / "12_student.ipynb"
    nbformat.write(nb, student)
    result = grade.grade(student, course=course, sandbox=False)
    assert result.error and "check the grader would not grade" in result.error
    assert not result.all_passed
