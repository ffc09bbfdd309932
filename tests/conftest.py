"""Shared test set-up: one thread for torch and fixed seeds, so results are reproducible."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest
from _browser import find_chromium

from course_lib import seed_everything

# `make unit` and `make slow` run `pytest -n 2 --dist loadgroup`: each test file stays on one
# worker (its module-scoped fixtures are made once), except these, whose tests share no
# module-scoped fixture and take minutes in all: they are spread test by test over both workers.
SPREAD = {
    "test_hidden_seeds.py",
    "test_exercises.py",
    "test_exercise_mutations.py",
    "test_documented_commands.py",
    "test_quizzes.py",
}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name not in SPREAD:
            item.add_marker(pytest.mark.xdist_group(item.path.name))


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
