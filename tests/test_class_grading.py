"""Grading a whole class in one command, on the sample submissions of INSTRUCTORS.md.

``tests/data/submissions/`` holds five lecture-01 notebooks as students hand them in:

==========================  ==================================================================
``01_softmax_ada.ipynb``    every answer right (written differently from the solutions)
``01_softmax_ben.ipynb``    1.1 and 1.3 wrong (textbook softmax; divides by d_k), with forged
                            "passed" outputs pasted under every check
``01_softmax_cleo.ipynb``   handed in untouched (every answer still raises NotImplementedError)
``01_softmax_dan.ipynb``    a truncated upload: not a notebook at all
``01_softmax_eve.ipynb``    1.2 crashes with a NameError (a typo); 1.1 and 1.3 right
==========================  ==================================================================

The grader runs each in a fresh sandboxed kernel (a few seconds a notebook), two at a time.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from tools.grading import cli as grade

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # `make slow`, not `make unit`
SUBMISSIONS = ROOT / "tests" / "data" / "submissions"

# The submissions predate exercise 1.4 (predict, then measure), so none of them answers it.
EXPECTED = {  # notebook -> (1.1, 1.2, 1.3, 1.4, passed, total), or None for "not gradable"
    "01_softmax_ada.ipynb": ("pass", "pass", "pass", "fail", "3", "4"),
    "01_softmax_ben.ipynb": ("fail", "pass", "fail", "fail", "1", "4"),
    "01_softmax_cleo.ipynb": ("fail", "fail", "fail", "fail", "0", "4"),
    "01_softmax_dan.ipynb": None,
    "01_softmax_eve.ipynb": ("pass", "fail", "pass", "fail", "2", "4"),
    "05_ada_renamed.ipynb": ("pass", "pass", "pass", "fail", "3", "4"),  # ada's, misnamed
}


@pytest.mark.slow
def test_class_is_graded_into_one_csv(tmp_path, capsys):
    folder = tmp_path / "class"
    shutil.copytree(SUBMISSIONS, folder)
    shutil.copy(folder / "01_softmax_ada.ipynb", folder / "05_ada_renamed.ipynb")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    out = tmp_path / "grades.csv"
    # The one command of INSTRUCTORS.md: tools/grading/cli.py FOLDER --csv FILE (exit 1: not all pass).
    assert grade.main([str(folder), "--csv", str(out), "--jobs", "2"]) == 1
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:5] == ["notebook", "lecture", "exercise 1.1", "exercise 1.2",
                                 "exercise 1.3"]  # fmt: skip
    got = {Path(r["notebook"]).name: r for r in rows}
    assert set(got) == set(EXPECTED)
    for name, expected in EXPECTED.items():
        row = got[name]
        if expected is None:
            assert row["error"].startswith("not gradable"), row
            assert row["passed"] == "0" and row["lecture"] == ""
            continue
        cells = tuple(row[f"exercise 1.{k}"] for k in range(1, 5))
        assert (*cells, row["passed"], row["total"]) == expected, (name, row)
        assert row["lecture"] == "01_softmax" and row["error"] == ""
        # Graded by content; a file name naming another lecture is reported, not refused.
        assert ("file name says lecture 05" in row["warning"]) == name.startswith("05_"), row
        assert ("NameError" in row["reasons"]) == (name == "01_softmax_eve.ipynb")
    # The summary tells each student why, and the submissions are left as they were.
    printed = capsys.readouterr().out
    assert "NameError" in printed and "NotImplementedError" in printed and "nan" in printed
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
