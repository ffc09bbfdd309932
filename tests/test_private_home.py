"""`make test` shares no state with the student's Jupyter: every path Jupyter, JupyterLab and
IPython resolve under tools/dev/in_clean_clone.py's private HOME lies inside it (or in the venv),
even when the student's environment points Jupyter at their own folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tools.dev.in_clean_clone import private_home

PROBE = """
import json, sys
from jupyter_core.paths import jupyter_config_path, jupyter_path, jupyter_runtime_dir
from jupyterlab_server.config import get_page_config  # noqa: F401 (importable)
from jupyterlab.labapp import LabApp
from IPython.paths import get_ipython_dir
import matplotlib
app = LabApp()
print(json.dumps({"config": jupyter_config_path(), "data": jupyter_path(),
                  "runtime": [jupyter_runtime_dir()], "ipython": [get_ipython_dir()],
                  "matplotlib": [matplotlib.get_configdir()],
                  "lab": [app.workspaces_dir, app.user_settings_dir]}))
"""


def test_every_jupyter_folder_is_private_even_with_the_students_set(tmp_path):
    student = tmp_path / "student"
    env = {"HOME": str(student), "PATH": "/usr/bin:/bin", "JUPYTER_CONFIG_DIR": str(student / "c"),
           "JUPYTER_PATH": str(student / "p"), "JUPYTER_CONFIG_PATH": str(student / "cp"),
           "JUPYTER_RUNTIME_DIR": str(student / "r"), "JUPYTER_DATA_DIR": str(student / "d"),
           "JUPYTERLAB_WORKSPACES_DIR": str(student / "w"), "IPYTHONDIR": str(student / "i"),
           "JUPYTERLAB_SETTINGS_DIR": str(student / "s"), "XDG_RUNTIME_DIR": str(student / "x")}  # fmt: skip
    home = tmp_path / "private"
    out = subprocess.run([sys.executable, "-c", PROBE], env=private_home(home, env),
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    paths = json.loads(out.stdout.strip().splitlines()[-1])
    venv = Path(sys.prefix).resolve()
    for kind, found in paths.items():
        for p in found:
            p = Path(p).resolve()
            assert not p.is_relative_to(student.resolve()), (kind, p)
            assert (
                p.is_relative_to(home.resolve())
                or p.is_relative_to(venv)
                or str(p).startswith(("/usr", "/etc"))
            ), (kind, p)
    assert any(Path(p).is_relative_to(home) for p in paths["config"])
    assert all(Path(p).is_relative_to(home) for p in paths["lab"] + paths["runtime"])
