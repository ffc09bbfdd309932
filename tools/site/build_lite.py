"""The browser edition: a JupyterLite site with the numpy lectures, nothing to install.

    python -m tools.site.build_lite [OUT]      # default build/lite; open OUT/lab/index.html via HTTP

JupyterLite runs notebooks in the browser on Pyodide (CPython compiled to WebAssembly), with no
server. Pyodide has numpy, matplotlib, scipy and nltk, not torch: the site holds the lectures
that teach with numpy (:data:`LECTURES`), their exercises, and wheels of ``course_lib`` (without
its ``.pt`` checkpoints, which only the torch half reads) and of the pure-Python packages the
lectures import that Pyodide lacks (:data:`PURE_WHEELS`, at requirements.txt's pins). Each
notebook's Colab cell becomes a cell that installs them from the site with ``piplite``; cells that
start ``# needs: torch`` print a one-line note instead of running (``course_lib._optional``).

Built offline from pinned PyPI packages (``jupyterlite-core``, ``jupyterlite-pyodide-kernel``);
the wheels are fetched once with pip into ``build/lite-cache/``. The built site itself loads
Pyodide (about 13 MB, then numpy and matplotlib) from the jsDelivr CDN the first time a notebook
starts, so it cannot run on a machine without internet: the tests check the build, the imports
against Pyodide's package list and a CPython run with torch blocked.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "lite-cache"
#: the lectures of the browser edition: numpy teaching; their torch cells are skipped
LECTURES = (
    "01_softmax",
    "02_qkv_self_attention",
    "03_multi_head_attention",
    "04_positional_encoding",
    "06_bleu",
    "10_attention_at_scale",
)
#: pure-Python wheels the lectures need that Pyodide does not ship (sacrebleu and its deps;
#: ipywidgets for lecture 01's slider), at the versions requirements.txt pins
PURE_WHEELS = (
    "sacrebleu", "portalocker", "tabulate", "colorama", "ipywidgets", "comm", "jupyterlab_widgets",
)  # fmt: skip
#: files a lecture reads from the repository (lecture 10 §3: the benchmark's results)
DATA = ("benchmarks/results/attention.csv", "benchmarks/results/attention.json")
#: the Pyodide the pinned jupyterlite-pyodide-kernel loads (its PYODIDE_VERSION); its npm package
#: carries pyodide-lock.json, the list of packages Pyodide ships
PYODIDE_NPM = ("pyodide", "314.0.6", "sha512-BKDTJyIqFxC4BExLqeRS3f5xvXZIjOt8C3zGLN/Cc7tFxSwvKVhVkchQQ2AGLOtR4YrVOIFxbV8poyDOOmWwxQ==")  # fmt: skip
FIRST_CELL = """\
# The browser edition (JupyterLite): install the course library from this site first.
import piplite

await piplite.install({packages!r})"""

__all__ = [
    "LECTURES",
    "PURE_WHEELS",
    "browser_notebook",
    "build_lite",
    "course_lib_wheel",
    "pyodide_lock",
    "pure_wheels",
]


def _pins() -> dict[str, str]:
    from tools.dev.sync_environment import read_pins

    return {name.lower().replace("_", "-"): v for name, v in read_pins().items()}


def pyodide_lock() -> dict:
    """Pyodide's ``pyodide-lock.json`` from its npm package (pinned, integrity-checked, cached)."""
    from tools.site.vendor import NpmPackage, npm_tarball

    name, version, integrity = PYODIDE_NPM
    cached = CACHE / f"pyodide-lock-{version}.json"
    if not cached.exists():
        import tarfile

        tarball = npm_tarball(NpmPackage(name, version, integrity, ("pyodide-lock.json",)))
        with tarfile.open(tarball) as tar:
            data = tar.extractfile("package/pyodide-lock.json").read()
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(data)
    return json.loads(cached.read_text(encoding="utf-8"))


def pure_wheels(dest: Path) -> list[Path]:
    """The :data:`PURE_WHEELS` at requirements.txt's pins, from pip (cached), into ``dest``."""
    pins = _pins()
    wanted = [f"{n}=={pins[n.replace('_', '-')]}" for n in PURE_WHEELS]
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)

    def cached() -> list[Path]:
        found = []
        for spec in wanted:
            name, version = spec.split("==")
            stem = name.replace("-", "_").lower()
            found += [
                p for p in wheels.glob("*-none-any.whl")
                if p.name.lower().startswith(f"{stem}-{version}-")
            ]  # fmt: skip
        return found

    if len(cached()) != len(wanted):
        out = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--platform", "any", "--python-version", "3.14", "-q", "-d", str(wheels), *wanted],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if out.returncode != 0 or len(cached()) != len(wanted):
            raise RuntimeError(f"pip could not fetch pure-Python wheels of {wanted}:\n{out.stderr}")
    dest.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy2(p, dest)) for p in cached()]


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def course_lib_wheel(dest: Path) -> Path:
    """A wheel of ``course_lib`` without its ``.pt`` files (the torch half's checkpoints)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
             "-w", tmp, str(ROOT)],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(f"pip wheel of course_lib failed:\n{out.stderr}")
        (full,) = Path(tmp).glob("course_lib-*.whl")
        dest.mkdir(parents=True, exist_ok=True)
        slim = dest / full.name
        with zipfile.ZipFile(full) as src, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as dst:
            record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
            kept = [i for i in src.infolist() if not i.filename.endswith(".pt")]
            record = []
            for info in kept:
                if info.filename == record_name:
                    continue
                data = src.read(info)
                dst.writestr(info, data)
                record.append(f"{info.filename},{_record_hash(data)},{len(data)}")
            record.append(f"{record_name},,")
            dst.writestr(record_name, "\n".join(record) + "\n")
    return slim


def _imports(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def browser_imports(nb: nbformat.NotebookNode) -> set[str]:
    """Top-level modules the notebook's cells import, leaving out the Colab cell and the cells
    the browser edition skips (``# needs: ...``)."""
    from course_lib._optional import _NEEDS

    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code" or "google.colab" in cell.source:
            continue
        if _NEEDS.fullmatch(cell.source.split("\n", 1)[0].strip()):
            continue
        names |= _imports(cell.source)
    return names


def _distributions(modules: set[str], lock: dict) -> list[str]:
    """What ``piplite.install`` needs for ``modules``: course_lib, then the Pyodide packages and
    the bundled wheels that provide them (the standard library needs nothing)."""
    by_import = {imp: name for name, pkg in lock["packages"].items() for imp in pkg["imports"]}
    wanted = ["course_lib"]
    for module in sorted(modules - {"course_lib"}):
        if module in sys.stdlib_module_names and module not in by_import:
            continue
        wanted.append(by_import.get(module, module))
    return wanted


def browser_notebook(path: Path, lock: dict) -> nbformat.NotebookNode:
    """``path`` as the browser edition serves it: outputs cleared (the student runs it), the
    Colab cell replaced by one that installs course_lib and what the notebook imports."""
    nb = nbformat.read(path, as_version=4)
    colab = next(c for c in nb.cells if c.cell_type == "code")
    if "google.colab" not in colab.source:
        raise ValueError(f"{path.name}: the first code cell is not the Colab cell")
    colab.source = FIRST_CELL.format(packages=_distributions(browser_imports(nb), lock))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def build_lite(out: Path, log=print) -> dict:
    """Build the JupyterLite site into ``out``; returns what was measured (seconds, bytes)."""
    start = time.perf_counter()
    out = Path(out).resolve()
    lock = pyodide_lock()
    with tempfile.TemporaryDirectory() as tmp:
        contents, wheels = Path(tmp) / "contents", Path(tmp) / "wheels"
        for folder in ("notebooks", "exercises"):
            for stem in LECTURES:
                target = contents / folder / f"{stem}.ipynb"
                target.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(browser_notebook(ROOT / folder / f"{stem}.ipynb", lock), target)
        for rel in DATA:
            (contents / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, contents / rel)
        course_lib_wheel(wheels)
        pure_wheels(wheels)
        if out.exists():
            shutil.rmtree(out)
        cmd = [
            sys.executable, "-m", "jupyterlite_core", "build", "--no-sourcemaps",
            "--contents", str(contents), "--output-dir", str(out),
            *[arg for w in sorted(wheels.glob("*.whl")) for arg in ("--piplite-wheels", str(w))],
        ]  # fmt: skip
        done = subprocess.run(
            cmd, cwd=tmp, capture_output=True, text=True, timeout=900, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"jupyter lite build failed:\n{done.stdout[-3000:]}{done.stderr}")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    seconds = time.perf_counter() - start
    log(f"built {out} in {seconds:.0f} s: {size / 2**20:.1f} MiB")
    return {"seconds": seconds, "bytes": size}


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    out = Path(argv[0]) if argv else ROOT / "build" / "lite"
    build_lite(out)
    print(f"serve it over HTTP, e.g. `python -m http.server -d {out}`, and open /lab/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
