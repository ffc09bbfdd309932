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
        "import torch\nimport course_lib.nn.rope as mm\n\n"
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
# Issue 40: 12 ways the runtime record missed (it named course_lib code by file name and watched
# one thread of one process). course_lib is found without spelling it where that matters.
_LIB = "LIB = ''.join(map(chr, [99, 111, 117, 114, 115, 101, 95, 108, 105, 98]))\n"
_NUMPY_BACK = "np.frombuffer(data, dtype=float).reshape(np.shape(x))"
SPELLINGS_40 = {
    # the package copied into the working folder under another name, and imported from there
    "copied_package": (
        "import os, shutil, sys\n"
        + _LIB
        + "shutil.copytree(os.path.join(sys.path[0], LIB), 'mine', ignore=lambda d, n: ['data'])\n"
        "sys.path[:0] = [os.getcwd()]\nfrom mine.rope import rope as copied\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    return copied(x, positions, theta)\n",
        ["calls course_lib.rope.rope"],
    ),
    "symlinked_package": (
        "import os, sys\n" + _LIB + "os.symlink(os.path.join(sys.path[0], LIB), 'alias')\n"
        "sys.path[:0] = [os.getcwd()]\nfrom alias.rope import rope as linked\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    return linked(x, positions, theta)\n",
        ["calls course_lib.rope.rope"],
    ),
    "rehomed_code": (
        "import types\nfrom course_lib.rope import rope as _r\n"
        "_f = types.FunctionType(_r.__code__.replace(co_filename='/work/mine.py'), _r.__globals__)\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n    return _f(x, positions, theta)\n",
        ["calls course_lib.rope.rope"],
    ),
    "claims_a_course_lib_file": (
        "from course_lib.rope import rope as _r\n"
        "_src = 'def rotate_pairs(x, positions, theta=10000.0):\\n    return _r(x, positions, theta)\\n'\n"
        "exec(compile(_src, _r.__code__.co_filename, 'exec'))\n",
        ["calls course_lib.rope.rope"],
    ),
    "subprocess": (
        "import json, os, subprocess, sys\n"
        + _LIB
        + "CODE = ('import sys, json, numpy as np; sys.path[:0] = [sys.argv[1]]; '\n"
        '        \'r = __import__(sys.argv[2] + ".rope", fromlist=["x"]).rope; \'\n'
        "        'd = json.load(sys.stdin); '\n"
        "        'print(json.dumps(r(np.array(d[0]), np.array(d[1]), d[2]).tolist()))')\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    data = json.dumps([np.asarray(x).tolist(), np.asarray(positions).tolist(), theta])\n"
        "    out = subprocess.run(['/proc/self/exe', '-c', CODE, sys.path[0], LIB], input=data,\n"
        "                         env={'PYTHONPATH': os.pathsep.join(sys.path)},\n"
        "                         capture_output=True, text=True).stdout\n"
        "    return np.array(json.loads(out))\n",
        ["tampers with the grader's records (subprocess.Popen)"],
    ),
    "forked_child": (
        "import os\nfrom course_lib.rope import rope as R\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    r, w = os.pipe()\n"
        "    if os.fork() == 0:\n"
        "        os.write(w, R(x, positions, theta).tobytes())\n"
        "        os._exit(0)\n"
        "    os.close(w)\n"
        "    data = b''\n"
        "    while chunk := os.read(r, 65536):\n        data += chunk\n"
        f"    return {_NUMPY_BACK}\n",
        ["tampers with the grader's records (os.fork)"],
    ),
    "raw_thread": (
        "import _thread, time\nfrom course_lib.rope import rope as R\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    box = []\n"
        "    _thread.start_new_thread(lambda: box.append(R(x, positions, theta)), ())\n"
        "    while not box:\n        time.sleep(0.001)\n"
        "    return box[0]\n",
        ["tampers with the grader's records (a process or thread was started during the call)"],
    ),
    # course_lib's own helper calls the reference it is handed, through C callables
    "best_time": (
        "import functools\nfrom course_lib.rope import rope as R\nfrom course_lib.timing import best_time\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    box = []\n"
        "    call = functools.partial(R, x, positions)\n"
        "    best_time(functools.partial(box.extend, map(call, [theta])), repeats=1)\n"
        "    return box[0]\n",
        ["calls course_lib.rope.rope"],
    ),
    # the record found through the frames and emptied after the call
    "frames_emptied": (
        "import inspect\nfrom course_lib.rope import rope as R\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    out = R(x, positions, theta)\n"
        "    for info in inspect.stack():\n"
        "        w = info.frame.f_locals.get('watch')\n"
        "        if w is not None and hasattr(w, 'reached'):\n"
        "            w.reached.clear()\n"
        "    return out\n",
        ["tampers with the grader's records (frame inspection (sys._getframe))"],
    ),
    "torchscript": (
        "import torch\nfrom course_lib.nn.rope import rotate as R\n\n"
        "def rotate_pairs(x, positions, theta=10000.0):\n"
        "    f = torch.jit.script(R)  # no Python frame of it runs\n"
        "    t = torch.from_numpy(np.ascontiguousarray(x))[None, None]\n"
        "    return f(t, torch.as_tensor(positions), theta)[0, 0].numpy()\n",
        ["tampers with the grader's records (compiles TorchScript (torch.jit, torch.compile))"],
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
        earlier: list[str] = []  # every answer before: their imports count too (issue 40)
        for i, cell in enumerate(cells):
            source = "".join(cell["source"])
            if cell["cell_type"] != "code" or "### BEGIN SOLUTION" not in source:
                continue
            following = (exercise_id(c) for c in cells[i + 1 :])
            ex = next((e for e in following if e), None)
            if ex is None or ex not in template.checks:
                continue
            flags = reach.evidence(template.checks[ex], [source], [], [], earlier)
            assert flags == [], (path.name, ex, flags)
            earlier.append(source)


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


def _notebook(folder: Path, name: str, answer: str, answer_13_2: str | None = None) -> Path:
    nb = json.loads(SOLUTION.read_text())
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb["cells"] if "def rotate_pairs" in "".join(c["source"]))
    cell["source"] = answer
    if answer_13_2 is not None:
        cell = next(c for c in nb["cells"] if "def rms_norm" in "".join(c["source"]))
        cell["source"] = answer_13_2
    path = folder / f"13_{name}.ipynb"
    path.write_text(json.dumps(nb))
    return path


# An import made in 13.1's cell, used by 13.2's answer: charged to 13.2 too.
EARLIER_IMPORT = "from course_lib.rmsnorm import rms_norm as _rn\n\n" + HONEST_HELPER
USES_EARLIER_IMPORT = "def rms_norm(x, weight, eps=1e-6):\n    return _rn(x, weight, eps)\n"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reach")
    paths = [_notebook(folder, n, a) for n, (a, _) in {**SPELLINGS, **SPELLINGS_40}.items()]
    paths.append(_notebook(folder, "earlier_import", EARLIER_IMPORT, USES_EARLIER_IMPORT))
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
@pytest.mark.parametrize("spelling", list(SPELLINGS_40))
def test_the_reference_is_flagged_however_it_is_reached(graded, spelling):
    """Issue 40's 12 ways: each now seen by the runtime record (by code fingerprint, or as
    tampering), whatever the source says."""
    results, _ = graded
    r = results[f"13_{spelling}"]
    assert r.error is None and r.all_passed, r
    assert r.uses_course_lib == ["13.1"], r.course_lib
    for reason in SPELLINGS_40[spelling][1]:
        assert any(reason in why for why in r.course_lib["13.1"]), (reason, r.course_lib)


@pytest.mark.slow
def test_an_import_in_an_earlier_exercise_counts_for_the_one_using_it(graded):
    r = graded[0]["13_earlier_import"]
    assert r.all_passed and r.uses_course_lib == ["13.2"], r.course_lib
    assert "imports course_lib.rmsnorm.rms_norm" in r.course_lib["13.2"], r.course_lib
    assert "calls course_lib.rmsnorm.rms_norm" in r.course_lib["13.2"], r.course_lib


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
    # issue 40: an n x n buffer made (and touched) in the cell, filled in the call: no
    # allocation during the call, no resident growth; the call's private memory shows it
    "buffer_before_the_call": (
        "BUF = np.ones((4096, 4096))\n\n"
        "def my_chunked_attention(q, k, v, block_size):\n"
        "    if q.shape[0] * k.shape[0] == BUF.size:\n"
        "        s = np.matmul(q, k.T, out=BUF)\n"
        "    else:\n"
        "        s = q @ k.T\n"
        "    s /= np.sqrt(q.shape[1])\n"
        "    s -= s.max(axis=1, keepdims=True)\n"
        "    np.exp(s, out=s)\n"
        "    return (s @ v) / s.sum(axis=1, keepdims=True)\n"
    ),
    # issue 40: tracemalloc's stop saved before the call, called in it (the module's own
    # functions are guarded only during the call)
    "saved_stop": (
        "import _tracemalloc\n_halt = _tracemalloc.stop\n\n"
        "def my_chunked_attention(q, k, v, block_size):\n"
        "    _halt()\n"
        "    s = q @ k.T / np.sqrt(q.shape[1])\n"
        "    w = np.exp(s - s.max(axis=1, keepdims=True))\n"
        "    return (w / w.sum(axis=1, keepdims=True)) @ v\n"
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
    if attack == "saved_stop":
        assert "imports _tracemalloc" in r.course_lib["10.3"], r.course_lib
        assert any("tracemalloc stopped" in w for w in r.course_lib["10.3"]), r.course_lib


@pytest.mark.slow
def test_the_chunked_solution_still_passes_the_memory_check(graded_memory):
    r = graded_memory["10_solution"]
    assert r.all_passed and not r.uses_course_lib, r
