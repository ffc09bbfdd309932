"""Shared test set-up: one thread for torch and fixed seeds, so results are reproducible."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest
from _browser import find_chromium

from course_lib import seed_everything

# `make unit` and `make slow` run `pytest -n 2 --dist loadgroup`, scheduled by `_FileScopes` below:
# each test file is one unit of work, run on one worker, so its module-scoped fixtures (a graded
# class, a built site, a student's clone) are made once; except these, whose tests share no
# module-scoped fixture and take minutes in all: they are spread test by test over both workers.
SPREAD = {
    "test_hidden_seeds.py",
    "test_exercises.py",
    "test_exercise_mutations.py",
    "test_documented_commands.py",
    "test_quizzes.py",
}

# Longest first (about the seconds of one worker, rounded from the idle CI run of 72feb5c): a long
# file started last would leave the other worker idle at the end. Files not listed follow, the
# most tests first.
WORK_SECONDS = {
    "test_site.py": 200,
    "test_grading_sandbox.py": 150,
    "test_browser_lectures.py": 100,
    "test_grading.py": 100,
    "test_student_clone.py": 80,
    "test_grading_reach.py": 50,
    "test_smollm2.py": 40,
    "test_browser_edition.py": 40,
    "test_browser_views.py": 35,
    "test_distributed_training.py": 30,
    "test_grading_shards.py": 25,
    "test_browser_update.py": 22,
    "test_gradescope.py": 20,
}


def pytest_xdist_make_scheduler(config, log):
    """With `--dist loadgroup`, schedule by file (see SPREAD) instead of by `xdist_group` marks:
    pytest-xdist 3.8 groups by a suffix it writes into `item._nodeid`, which pytest 9 no longer
    reads, so its loadgroup sends a file's tests to both workers and each worker makes the file's
    module-scoped fixtures again (tests/test_suite_scheduling.py checks that a file's tests share a
    worker)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _FileScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path.rsplit("/", 1)[-1] in SPREAD else path

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_ordered", False):  # once, before the first unit is sent
                self._ordered = True

                def weight(item):
                    scope, tests = item
                    return -WORK_SECONDS.get(scope.rsplit("/", 1)[-1], 0), -len(tests)

                ordered = sorted(self.workqueue.items(), key=weight)
                self.workqueue.clear()
                self.workqueue.update(ordered)
            super()._assign_work_unit(node)

    return _FileScopes(config, log)


@pytest.fixture(autouse=True)
def _seeded():
    seed_everything(0, threads=1)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of a Chromium binary for the browser tests, or skip them with the reason."""
    path = find_chromium()
    if path is None:
        pytest.skip(
            "Chromium not found (looked for chromium, chromium-browser, google-chrome): the "
            "browser tests need Debian's `chromium` package; .ci/run installs it with apt"
        )
    return path
