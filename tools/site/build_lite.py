"""The browser edition: a JupyterLite site with the numpy lectures, nothing to install.

    python -m tools.site.build_lite [OUT]      # default build/lite; open OUT/lab/index.html via HTTP

JupyterLite runs notebooks in the browser on Pyodide (CPython compiled to WebAssembly), with no
server. Pyodide has numpy, matplotlib, scipy and nltk, not torch: the site holds the lectures
that teach with numpy (:data:`LECTURES`), their exercises, and wheels of ``course_lib`` (without
its ``.pt`` checkpoints, which only the torch half reads) and of the pure-Python packages the
lectures import that Pyodide lacks (:data:`PURE_WHEELS`, at requirements.txt's pins). Each
notebook's Colab cell becomes a cell that installs them from the site with ``piplite``; cells that
start ``# needs: torch`` print a one-line note instead of running (``course_lib._optional``).
The first cell then imports every module the notebook needs and, if one did not load, says
which and why (the CDN unreachable) instead of leaving a bare ``ModuleNotFoundError`` to the next
cell. Every page gets :data:`NOTICE_SCRIPT`: opened from disk (``file://``, where browsers block
JupyterLite's module scripts) it says how to serve the site; over HTTP, a notice appears when a
notebook's kernel has not started within :data:`KERNEL_TIMEOUT_S` seconds.

Built offline from pinned PyPI packages (``jupyterlite-core``, ``jupyterlite-pyodide-kernel``);
the wheels are fetched once with pip into ``build/lite-cache/``. The built site itself loads
Pyodide (about 13 MB, then numpy and matplotlib) from the jsDelivr CDN the first time a notebook
starts, so it cannot run on a machine without internet: the tests check the build, the imports
against Pyodide's package list and a CPython run with torch blocked.
"""

from __future__ import annotations

import ast
import base64
import fcntl
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
# The browser edition (JupyterLite): install the course library from this site first, then
# check that everything the lecture imports has loaded, and say plainly what has not.
import importlib

import piplite

modules = {modules!r}
try:
    await piplite.install({packages!r})
except Exception as err:  # any failure is reported below, module by module
    print(f"piplite.install reported: {{type(err).__name__}}: {{err}}")
missing = []
for module in modules:
    try:
        importlib.import_module(module)
    except Exception as err:
        missing.append(f"{{module}} ({{type(err).__name__}}: {{err}})")
if missing:
    raise RuntimeError(
        "the browser edition could not load " + ", ".join(missing) + ". Pyodide (Python in "
        "the browser) loads numpy, matplotlib and its other packages from the jsDelivr CDN "
        "(cdn.jsdelivr.net): offline, or behind a network filter that blocks that site, they "
        "cannot load. Reload the page once online, or use the course in JupyterLab "
        "(make lab), on Binder or on Colab."
    ) from None
print("Ready: " + ", ".join(modules) + " loaded.")"""
# A classic script in the head of every page of the browser edition: a notice instead of a
# blank page on file:// (browsers block the module scripts JupyterLite is made of), and a
# notice when a notebook's kernel has not started within a timeout (Pyodide comes from a CDN).
NOTICE_ID = "course-lite-notice"
KERNEL_TIMEOUT_S = 90  # ?course-kernel-timeout=SECONDS overrides it (tests)
NOTICE_SCRIPT = """<script>/* attention-course: tools/site/build_lite.py */
(function () {
  "use strict";
  function notice(html) {
    function show() {
      var box = document.getElementById("%(id)s");
      if (!box) {
        box = document.createElement("div");
        box.id = "%(id)s";
        box.setAttribute("role", "alert");
        box.style.cssText = "position:fixed;top:0;left:0;right:0;z-index:100000;" +
          "padding:12px 18px;background:#fff6e0;border-bottom:3px solid #e0a000;" +
          "font:16px/1.4 system-ui,sans-serif;color:#222";
        document.body.appendChild(box);
      }
      box.innerHTML = html;
    }
    if (document.body) show(); else document.addEventListener("DOMContentLoaded", show);
  }
  if (location.protocol === "file:") {
    notice("<b>The browser edition must be served over HTTP.</b> Opened from disk, the " +
      "browser blocks the scripts it is made of. In the course folder run " +
      "<code>python -m http.server -d build/site</code> (or <code>-d build/lite</code> after " +
      "<code>make lite</code>) and open <code>http://localhost:8000/lite/lab/index.html</code> " +
      "(<code>/lab/index.html</code> for build/lite).");
    return;
  }
  var param = new URLSearchParams(location.search).get("course-kernel-timeout");
  var timeout = 1000 * (parseFloat(param) || %(timeout)d), since = null, shown = false;
  setInterval(function () {  // (the indicator says "idle" for a moment before the kernel exists)
    var status = document.querySelector(".jp-NotebookPanel:not(.lm-mod-hidden) " +
      ".jp-Notebook-ExecutionIndicator");
    var state = status && status.getAttribute("data-status");
    if (!status || state === "idle" || state === "busy") {
      since = null;
      var box = document.getElementById("%(id)s");
      if (box && shown) box.remove();
      shown = false;
      return;
    }
    since = since || Date.now();
    if (!shown && Date.now() - since > timeout) {
      shown = true;
      notice("<b>Python has not started after " + Math.round(timeout / 1000) + " s.</b> " +
        "The browser edition runs Python in your browser with Pyodide, which it loads from " +
        "the jsDelivr CDN (cdn.jsdelivr.net: about 13 MB, then numpy and matplotlib). " +
        "Offline, or behind a network filter that blocks that site, it cannot start. " +
        "Reload once online, or use the course in JupyterLab (<code>make lab</code>), on " +
        "Binder or on Colab; the course site shows every lecture with its outputs. (On a " +
        "slow connection, wait: this notice goes away when Python starts.)");
    }
  }, 1000);
})();
</script>"""


__all__ = [
    "LECTURES",
    "NOTICE_SCRIPT",
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


def pip_wheel_of_course(wheel_dir: str | Path) -> subprocess.CompletedProcess:
    """``pip wheel`` of the repository into ``wheel_dir``, one at a time: setuptools builds in the
    tree's ``build/`` folder, so two at once (two test workers) collide ("File exists:
    build/bdist.linux-x86_64/wheel/course_lib-0.1.0.dist-info")."""
    lock = ROOT / "build" / ".pip-wheel.lock"
    lock.parent.mkdir(exist_ok=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        return subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
             "-w", str(wheel_dir), str(ROOT)],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip


def course_lib_wheel(dest: Path) -> Path:
    """A wheel of ``course_lib`` without its ``.pt`` files (the torch half's checkpoints)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pip_wheel_of_course(tmp)
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
    modules = browser_imports(nb)
    checked = ["course_lib", *sorted(modules - set(sys.stdlib_module_names) - {"course_lib"})]
    colab.source = FIRST_CELL.format(packages=_distributions(modules, lock), modules=checked)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def add_notices(out: Path) -> list[Path]:
    """Put :data:`NOTICE_SCRIPT` at the top of the ``<head>`` of every HTML page of the built
    site (``index.html`` of each JupyterLite app); returns the pages changed."""
    script = NOTICE_SCRIPT % {"id": NOTICE_ID, "timeout": KERNEL_TIMEOUT_S}
    changed = []
    for page in sorted(Path(out).rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        if "<head>" in text and NOTICE_ID not in text:
            page.write_text(text.replace("<head>", "<head>" + script, 1), encoding="utf-8")
            changed.append(page)
    return changed


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
    add_notices(out)
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
