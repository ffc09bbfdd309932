"""What the Colab badge promises is what runs: a fresh venv from pyproject.toml alone.

A new virtual environment gets ``course_lib[lectures]`` from this repository's
``pyproject.toml`` (its core and the extra, lower bounds only: pip picks the newest versions it
can, never requirements.txt's pins), plus a Jupyter kernel, and runs every lecture notebook from
the top. Very slow (every lecture, tens of minutes on 2 cores) and it downloads what pip's cache
lacks, so it is a slow-tier test that runs only when asked: ``make fresh-install`` (which sets
``COURSE_FRESH_INSTALL=1``); ``make slow`` skips it.

torch is the one exception to "newest": an unpinned torch would be PyPI's CUDA build (GBs of
NVIDIA libraries). The test installs ``torch==<requirements.txt's pin>`` first, with pip's own
configuration, which on a machine with a CPU wheel on local disk (a pip ``find-links``
directory) takes that wheel; the extra's ``torch>=2.2`` is then already satisfied.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

RUN = """
import sys, time
from pathlib import Path
import nbformat
from nbclient import NotebookClient
path = Path(sys.argv[1])
nb = nbformat.read(path, as_version=4)
start = time.perf_counter()
NotebookClient(nb, timeout=1200, kernel_name="python3",
               resources={"metadata": {"path": str(path.parent)}}).execute()
print(f"{path.name}: {time.perf_counter() - start:.0f} s")
"""


def _pip(python: Path, *args: str, env: dict) -> None:
    out = subprocess.run(
        [str(python), "-m", "pip", "install", "--progress-bar", "off", *args],
        capture_output=True, text=True, timeout=3600, env=env, check=False,
    )  # fmt: skip
    assert out.returncode == 0, f"pip install {' '.join(args)}:\n{out.stdout[-3000:]}{out.stderr}"


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("COURSE_FRESH_INSTALL") != "1",
    reason="runs every lecture in a fresh venv (~20 min): set COURSE_FRESH_INSTALL=1",
)
def test_a_fresh_venv_from_pyproject_runs_every_lecture(tmp_path):
    from tools.dev.sync_environment import read_pins

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    source = tmp_path / "src"  # pip builds course_lib from a copy: the clone stays untouched
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "course_lib", source / "course_lib",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    start = time.perf_counter()
    _pip(python, f"torch=={read_pins()['torch']}", env=env)
    _pip(python, f"{source}[lectures]", "ipykernel", "nbclient", env=env)
    installed = time.perf_counter() - start
    freeze = subprocess.run(
        [str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    print(f"\ninstalled in {installed:.0f} s:", " ".join(freeze.split()))
    failures = []
    for path in LECTURES:
        out = subprocess.run(
            [str(python), "-c", RUN, str(path)],
            capture_output=True, text=True, timeout=1800, env=env, check=False,
        )  # fmt: skip
        print(out.stdout.strip() or f"{path.name}: failed")
        if out.returncode != 0:
            failures.append(f"{path.name}:\n{out.stderr[-2500:]}")
    assert not failures, "\n\n".join(failures)
