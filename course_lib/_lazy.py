"""The lazy half of ``course_lib``'s namespace: torch names imported on first use.

``course_lib/__init__.py`` imports the numpy modules and lists the torch ones; a name of a torch
module's ``__all__`` is imported when it is first asked for (PEP 562 module ``__getattr__``). The
names are read from each module's source (its literal ``__all__``), so knowing that
``MultiHeadAttention`` is a torch name needs no torch: without torch, asking for it raises
:class:`~course_lib._optional.MissingPackage` (what to install), not an ``AttributeError``.
"""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path

from ._optional import require

__all__: list[str] = []  # private helpers; nothing is re-exported

_ROOT = Path(__file__).resolve().parent


def _source(module: str) -> Path:
    path = _ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _literal_all(path: Path) -> list[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                return list(ast.literal_eval(node.value))
    raise RuntimeError(f"{path} has no literal __all__ (course_lib's lazy names read it)")


@functools.cache
def _name_to_module(package: str, modules: tuple[str, ...]) -> dict[str, str]:
    table: dict[str, str] = {}
    for module in modules:
        for name in _literal_all(_source(module)):
            table.setdefault(name, module)  # first module wins, as with the star imports
    return table


def lazy_names(package: str, modules: tuple[str, ...]) -> list[str]:
    """Every name the lazy modules export."""
    return list(_name_to_module(package, modules))


def lazy_attribute(package: str, modules: tuple[str, ...], name: str, namespace: dict):
    """``name`` from the torch module that exports it; raises MissingPackage without torch and
    AttributeError for a name no module exports.

    The first torch name asked for imports the whole torch half and binds every name, as the
    star imports did: importing ``course_lib.rope`` binds the *module* to ``course_lib.rope``,
    which must not hide the *function* ``rope`` (the numpy half is bound at import, the same way).
    """
    table = _name_to_module(package, modules)
    if name not in table:
        if not name.startswith("_") and _source(name).exists():  # a submodule: course_lib.nn
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    require("torch", f"{package}.{name}")
    loaded = {module: importlib.import_module(f"{package}.{module}") for module in modules}
    for each, module in table.items():
        namespace[each] = getattr(loaded[module], each)
    return namespace[name]
