"""Shared test set-up: one thread for torch and fixed seeds, so results are reproducible."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest

from course_lib import seed_everything


@pytest.fixture(autouse=True)
def _seeded():
    seed_everything(0, threads=1)
