"""What a student sees when a check fails: the course's message, not the checking code's traceback.

A notebook runs in a real kernel (nbclient) and under nbval; the error output is read as
JupyterLab and the classic notebook show it (the ``traceback`` lines of the error output). A
wrong answer shows only "Exercise N.k is not right yet", expected, got and the hint; an error
raised inside the student's own function shows the student's traceback, then the hint.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from course_lib.checks import ExerciseError, call_student

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

CELLS = [
    "import numpy as np\nfrom course_lib.checks.lecture01 import check_stable_softmax",
    # a wrong answer: no max trick, so large logits give nan
    "def stable_softmax(x):\n    e = np.exp(x)\n    return e / e.sum(axis=-1, keepdims=True)",
    "check_stable_softmax(stable_softmax)",
    # the student's own bug: their function raises
    "def stable_softmax(x):\n"
    "    z = x - x.max(axis=-1, keepdims=True)\n"
    "    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)",
    "check_stable_softmax(stable_softmax)",
]


def _notebook() -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])


@pytest.fixture(scope="module")
def shown() -> dict[int, str]:
    """Cell index -> the error output's text as a notebook front end shows it (ANSI stripped)."""
    nb = _notebook()
    NotebookClient(nb, timeout=300, allow_errors=True).execute()
    errors = {}
    for i, cell in enumerate(nb.cells):
        for out in cell.outputs:
            if out.output_type == "error":
                errors[i] = ANSI.sub("", "\n".join(out.traceback))
    assert set(errors) == {2, 4}, errors
    return errors


@pytest.mark.slow  # runs a notebook in a real kernel
def test_a_wrong_answer_shows_only_the_course_message(shown):
    text = shown[2]
    assert text.startswith("ExerciseError: Exercise 1.1 is not right yet.")
    assert "expected [0.6652 0.2447 0.09  ]" in text and "got      [nan nan nan]" in text
    assert "Subtract the maximum of each row first" in text
    assert "Traceback" not in text and "course_lib" not in text
    assert len(text.splitlines()) <= 8, text


@pytest.mark.slow  # runs a notebook in a real kernel
def test_an_error_in_the_student_function_shows_their_traceback_then_the_hint(shown):
    text = shown[4]
    assert "Traceback (most recent call last)" in text
    assert "in stable_softmax" in text and "axis=1, keepdims=True" in text  # their line
    assert "AxisError: axis 1 is out of bounds" in text
    assert "call_student" not in text and "checks/__init__.py" not in text
    tail = text[text.index("ExerciseError: Exercise 1.1 is not right yet.") :]
    assert "your function raised AxisError" in tail and "Hint: read the error above" in tail
    assert text.index("in stable_softmax") < text.index("ExerciseError:")


@pytest.mark.slow  # runs a notebook in a real kernel
def test_nbval_reports_the_course_message(tmp_path):
    path = tmp_path / "student.ipynb"
    nb = _notebook()
    nb.cells = nb.cells[:3]
    nbformat.write(nb, path)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
         "--nbval-current-env", str(path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    text = ANSI.sub("", out.stdout)
    assert out.returncode == 1 and "1 failed" in text, text[-3000:]
    assert "ExerciseError: Exercise 1.1 is not right yet." in text
    assert "Subtract the maximum of each row first" in text
    assert "call_student" not in text and "check_array" not in text


def test_outside_ipython_the_message_and_the_plain_traceback_remain():
    def broken(x):
        return x.reshape(5)

    with pytest.raises(ExerciseError) as info:
        call_student("9.9", broken, [1, 2, 3])
    lines = info.value._render_traceback_()  # no IPython shell here: the standard formatter
    text = "\n".join(lines)
    assert "in broken" in text and "AttributeError" in text and "call_student" not in text
    assert ANSI.sub("", lines[-3]).startswith("ExerciseError: Exercise 9.9 is not right yet.")
