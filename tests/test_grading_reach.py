"""Answers that call the course's reference are flagged, however spelled (issue 27, item 5).

Each spelling is written into exercise 13.1 (RoPE) of a solved lecture-13 notebook and graded in
the sandbox: the answer still passes (calling the reference gives the right numbers), and the
CSV's "uses course_lib" column names 13.1 with the evidence. An honest answer that uses ANOTHER
course_lib helper (``rope_frequencies``) is not flagged, and neither is any other exercise.

Fast tests: the source record (:func:`tools.grading.reach.source_record`), the references every
exercise declares, and the sandbox's copy of course_lib (no checks, no quiz answer keys).
"""

from __future__ import annotations

import copy
import csv
import importlib
import json
from pathlib import Path

import pytest

from tools.grading import cli as grade
from tools.grading import reach
from tools.grading.course import Course
from tools.grading.notebook import exercise_id

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "13_modern_transformer.ipynb"

# spelling -> (answer cell of 13.1, evidence the flag must give: each a substring of one reason)
SPELLINGS = {
    "from_import": (
        "from course_lib.rope import rope as _r\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n    return _r(x, positions, theta)\n",
        ["calls course_lib.rope.rope", "imports course_lib.rope.rope"],
    ),
    "attribute_walk": (
        "import course_lib\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    return course_lib.rope(x, positions, theta)\n",
        ["calls course_lib.rope.rope", "imports course_lib.rope"],
    ),
    "dunder_import": (
        "m = __import__('course' + '_lib.rope', fromlist=['x'])\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    return getattr(m, 'ro' + 'pe')(x, positions, theta)\n",
        ["calls course_lib.rope.rope", "uses __import__", "spells course_lib in a string"],
    ),
    "importlib": (
        "import importlib\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    return importlib.import_module('course_lib.' + 'rope').rope(x, positions, theta)\n",
        ["calls course_lib.rope.rope", "imports importlib"],
    ),
    "sys_modules": (
        "import sys\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    return sys.modules['course_lib.r' + 'ope'].rope(x, positions, theta)\n",
        ["calls course_lib.rope.rope", "uses .modules"],
    ),
    # a module imported whole, the function fetched by a built name: only the runtime record sees it
    "built_name": (
        "import torch\nimport course_lib.models.modern as mm\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    f = getattr(mm, 'rope' + '_qk')\n"
        "    t = torch.from_numpy(x)[None, None]\n"
        "    q, _ = f(t, t, torch.as_tensor(positions), theta)\n"
        "    return q[0, 0].numpy()\n",
        ["calls course_lib.nn.rope.rope_qk"],
    ),
    # switching the runtime record off around the call: the audit hook and the source see it
    "profile_off": (
        "import sys\nfrom course_lib.rope import rope as _r\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    p = sys.getprofile()\n    sys.setprofile(None)\n    try:\n"
        "        return _r(x, positions, theta)\n    finally:\n        sys.setprofile(p)\n",
        ["tampers with the grader's records (sys.setprofile)", "uses .setprofile"],
    ),
}
# The check's module is a stub in the sandbox: its __globals__ hold no reference (the answer
# fails), and the walk is flagged from the source.
GLOBALS_WALK = (
    "def rotate_pairs(x, positions, theta=10000.0):\n"
    "    return check_rotate_pairs.__globals__['rope'](x, positions, theta)\n"
)
HONEST_HELPER = (
    "from course_lib.rope import rope_frequencies\n\n"
    "def rotate_pairs(x, positions, theta=10000.0):\n"
    "    omega = rope_frequencies(x.shape[-1], theta)  # a helper of the library, not RoPE itself\n"
    "    angle = np.asarray(positions)[:, None] * omega\n"
    "    even, odd = x[:, 0::2], x[:, 1::2]\n"
    "    out = np.empty_like(x, dtype=float)\n"
    "    out[:, 0::2] = even * np.cos(angle) - odd * np.sin(angle)\n"
    "    out[:, 1::2] = even * np.sin(angle) + odd * np.cos(angle)\n"
    "    return out\n"
)


# --- fast ------------------------------------------------------------------------------------


def test_the_source_record_names_what_an_answer_imports_or_walks_to():
    names, dynamic = reach.source_record("from course_lib import softmax as stable_softmax")
    assert names == ["course_lib.softmax"] and not dynamic
    names, _ = reach.source_record("import course_lib.softmax\nf = course_lib.softmax.softmax")
    assert names == ["course_lib.softmax.softmax"]
    _, dynamic = reach.source_record("import importlib\nm = importlib.import_module('course_lib')")
    assert "imports importlib" in dynamic and "spells course_lib in a string" in dynamic
    assert reach.source_record("def f(x):\n    return np.exp(x)") == ([], [])
    # a package imported whole names nothing; what is walked to from it does
    names, _ = reach.source_record("from course_lib import nn\nff = nn.FeedForward(4, 8)")
    assert names == ["course_lib.nn.FeedForward"]


def test_ordinary_methods_are_not_dynamic():
    src = "import re\nimport torch\n\ndef f(model, s):\n    model.eval()\n    return re.compile(s)"
    assert reach.source_record(src) == ([], [])
    assert reach.source_record("eval('1 + 1')")[1] == ["uses eval"]


def test_no_solution_is_flagged_from_its_source():
    """The answers of solutions/ (between the solution markers) name no reference of their own
    exercise and no dynamic primitive (the slow tests grade two solutions whole)."""
    course = Course()
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        template = course.templates[path.stem]
        cells = json.loads(path.read_text())["cells"]
        for i, cell in enumerate(cells):
            source = "".join(cell["source"])
            if cell["cell_type"] != "code" or "### BEGIN SOLUTION" not in source:
                continue
            following = (exercise_id(c) for c in cells[i + 1 :])
            ex = next((e for e in following if e), None)
            if ex is None or ex not in template.checks:
                continue
            assert reach.evidence(template.checks[ex], [source], [], []) == [], (path.name, ex)


def test_every_exercise_declares_its_references_and_each_resolves():
    course = Course()
    for name, template in course.templates.items():
        for ex, check in template.checks.items():
            if ex.startswith("Q"):
                continue
            module = importlib.import_module(check.function.__module__)
            declared = module.REFERENCES.get(ex)
            assert declared is not None, f"{name}: exercise {ex} has no REFERENCES entry"
            for dotted in declared:
                assert reach._resolve(dotted) is not None, f"{ex}: {dotted} names nothing"


def test_a_reference_flags_its_exercise_and_a_helper_does_not():
    check = Course().templates["13_modern_transformer"].checks["13.1"]
    assert reach.evidence(check, [], ["course_lib.rope.rope"], []) == ["calls course_lib.rope.rope"]
    assert reach.evidence(check, [], ["course_lib.rope.rope_frequencies"], []) == []
    assert reach.evidence(check, ["from course_lib.rope import rope_frequencies"], [], []) == []
    other = Course().templates["02_qkv_self_attention"].checks["2.1"]
    assert reach.evidence(other, ["from course_lib import softmax"], ["course_lib.softmax.softmax"],
                          []) == []  # fmt: skip


def test_the_sandbox_gets_no_check_and_no_quiz_answer_key():
    library = Course().library
    checks = {k: v.decode() for k, v in library.items() if k.startswith("course_lib/checks/")}
    assert set(checks) >= {"course_lib/checks/given.py", "course_lib/checks/lecture13.py"}
    for path, text in checks.items():
        if path.endswith(("given.py", "given_torch.py")):
            assert "from . import" not in text and "import check" not in text
            continue
        assert "call_student" not in text and "REFERENCES" not in text, path
        assert "_checked_by_the_grader" in text or path.endswith("__init__.py"), path
    assert not [k for k in library if k.startswith("course_lib/quizzes/")]
    # what the templates import from a check module is defined there (a stub or a given)
    assert (
        "from course_lib.checks.given import halves_encoding"
        in checks["course_lib/checks/lecture04.py"]
    )


# --- slow: graded in the sandbox ------------------------------------------------------------


def _notebook(folder: Path, name: str, answer: str) -> Path:
    nb = json.loads(SOLUTION.read_text())
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb["cells"] if "def rotate_pairs" in "".join(c["source"]))
    cell["source"] = answer
    path = folder / f"13_{name}.ipynb"
    path.write_text(json.dumps(nb))
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reach")
    paths = [_notebook(folder, n, a) for n, (a, _) in SPELLINGS.items()]
    paths.append(_notebook(folder, "globals_walk", GLOBALS_WALK))
    paths.append(_notebook(folder, "honest_helper", HONEST_HELPER))
    paths.append(folder / "13_solution.ipynb")
    paths[-1].write_bytes(SOLUTION.read_bytes())
    results = grade.grade_many(paths, jobs=2, timeout=120)
    out = folder / "grades.csv"
    grade.write_csv(results, out)
    rows = {Path(r["notebook"]).stem: r for r in csv.DictReader(out.open())}
    return {Path(r.notebook).stem: r for r in results}, rows


@pytest.mark.slow
@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_each_spelling_of_the_reference_is_flagged(graded, spelling):
    results, rows = graded
    r = results[f"13_{spelling}"]
    assert r.error is None and r.all_passed, r  # the reference's numbers are right ...
    assert r.uses_course_lib == ["13.1"], r.course_lib  # ... and flagged, on 13.1 only
    for reason in SPELLINGS[spelling][1]:
        assert any(reason in why for why in r.course_lib["13.1"]), (reason, r.course_lib)
    row = rows[f"13_{spelling}"]
    assert row["uses course_lib"] == "13.1" and "13.1:" in row["course_lib evidence"]


@pytest.mark.slow
def test_a_checks_globals_hold_no_reference_in_the_sandbox(graded):
    r = graded[0]["13_globals_walk"]
    ok, why = r.exercises["13.1"]
    assert not ok and "KeyError" in why
    assert r.course_lib == {"13.1": ["uses .__globals__"]}


@pytest.mark.slow
def test_honest_answers_are_not_flagged(graded):
    for name in ("13_honest_helper", "13_solution"):
        r = graded[0][name]
        assert r.all_passed and r.uses_course_lib == [] and r.course_lib == {}, r
        assert graded[1][name]["uses course_lib"] == ""


# --- slow: 10.3's peak memory, which the answer can neither hide in torch nor reset -----------

SOLUTION_10 = ROOT / "solutions" / "10_attention_at_scale.ipynb"
MEMORY_ATTACKS = {
    # the full n x n scores held in torch: tracemalloc does not see torch's memory, VmHWM does
    "torch_full": (
        "def my_chunked_attention(q, k, v, block_size):\n"
        "    import torch\n\n"
        "    q, k, v = (torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v))\n"
        "    w = torch.softmax(q @ k.T / q.shape[1] ** 0.5, dim=-1)\n"
        "    return (w @ v).numpy()\n"
    ),
    # the full scores in numpy, then tracemalloc's peak reset before returning
    "reset_peak": (
        "import tracemalloc\n\n"
        "def my_chunked_attention(q, k, v, block_size):\n"
        "    s = q @ k.T / np.sqrt(q.shape[1])\n"
        "    w = np.exp(s - s.max(axis=1, keepdims=True))\n"
        "    out = (w / w.sum(axis=1, keepdims=True)) @ v\n"
        "    del s, w\n"
        "    tracemalloc.reset_peak()\n"
        "    return out\n"
    ),
}


@pytest.fixture(scope="module")
def graded_memory(tmp_path_factory):
    folder = tmp_path_factory.mktemp("memory")
    paths = []
    for name, answer in MEMORY_ATTACKS.items():
        nb = json.loads(SOLUTION_10.read_text())
        cell = next(c for c in nb["cells"] if "def my_chunked_attention" in "".join(c["source"]))
        cell["source"] = answer
        paths.append(folder / f"10_{name}.ipynb")
        paths[-1].write_text(json.dumps(nb))
    paths.append(folder / "10_solution.ipynb")
    paths[-1].write_bytes(SOLUTION_10.read_bytes())
    return {Path(r.notebook).stem: r for r in grade.grade_many(paths, jobs=2, timeout=180)}


@pytest.mark.slow
@pytest.mark.parametrize("attack", list(MEMORY_ATTACKS))
def test_the_full_matrix_is_seen_in_torch_and_after_a_reset(graded_memory, attack):
    r = graded_memory[f"10_{attack}"]
    ok, why = r.exercises["10.3"]
    assert not ok and "the full n x n score matrix" in why, why
    if attack == "reset_peak":
        assert any("tracemalloc.reset_peak" in w for w in r.course_lib["10.3"]), r.course_lib


@pytest.mark.slow
def test_the_chunked_solution_still_passes_the_memory_check(graded_memory):
    r = graded_memory["10_solution"]
    assert r.all_passed and not r.uses_course_lib, r
