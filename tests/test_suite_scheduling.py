"""`make unit` and `make slow` keep each test file on one worker (tests/conftest.py::_FileScopes).

pytest-xdist's own `--dist loadgroup` silently stopped grouping under pytest 9 (it renames
`item._nodeid`, which pytest 9 no longer reads): every file's tests were then spread over both
workers and each made the file's module-scoped fixtures again — a graded class, a built site,
a student's clone — about a third of the slow tier's time. This runs a small suite the way the
Makefile does and checks where each test ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

CONFTEST = f"""
import importlib.util, sys
sys.path[:0] = [{str(ROOT / "tests")!r}, {str(ROOT)!r}]
spec = importlib.util.spec_from_file_location("course_conftest", {str(ROOT / "tests" / "conftest.py")!r})
course_conftest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(course_conftest)
pytest_xdist_make_scheduler = course_conftest.pytest_xdist_make_scheduler
"""

MODULE = """
import json, os, time
import pytest

@pytest.fixture(scope="module")
def made():
    with open({log!r}, "a") as fh:
        fh.write(json.dumps(["setup", __name__, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")

@pytest.mark.parametrize("i", range({n}))
def test_it(made, i):
    time.sleep(0.05)
    with open({log!r}, "a") as fh:
        fh.write(json.dumps(["test", __name__, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
"""


def test_each_file_runs_on_one_worker_and_makes_its_module_fixtures_once(tmp_path):
    log = tmp_path / "log.jsonl"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    files = {"test_alpha.py": 6, "test_beta.py": 5, "test_gamma.py": 1, "test_site.py": 3,
             "test_hidden_seeds.py": 8}  # fmt: skip
    for name, n in files.items():
        (suite / name).write_text(MODULE.format(log=str(log), n=n))
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
           "-p", "no:cacheprovider", "--rootdir", str(suite), str(suite)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    workers = {w for _, _, w in rows}
    assert workers == {"gw0", "gw1"}, f"the suite did not run on two workers: {workers}"
    for name in files:
        module = name[:-3]
        setups = [w for kind, m, w in rows if kind == "setup" and m == module]
        ran_on = {w for kind, m, w in rows if kind == "test" and m == module}
        if name == "test_hidden_seeds.py":  # spread test by test: a setup on each worker used
            assert len(setups) == len(ran_on), (name, setups, ran_on)
            continue
        assert len(setups) == 1, f"{name}'s module fixture was made {len(setups)} times: {setups}"
        assert len(ran_on) == 1, f"{name}'s tests ran on {sorted(ran_on)}"
