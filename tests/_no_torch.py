"""Make this Python behave as if torch, transformers and tokenizers were not installed.

The browser edition's Python (Pyodide) has none of them. ``sys.modules["torch"] = None`` makes
``import torch`` fail too, but libraries that look torch up in ``sys.modules`` (scipy's array API
layer does) then find ``None`` and break; hiding the packages from the import system's path
finder is what "not installed" looks like. Run it with ``exec`` (a kernel's ``exec_lines``) or
call :func:`hide` (``hide(["transformers"])`` hides other packages).
"""

import importlib.machinery
import sys

HIDDEN = ("torch", "transformers", "tokenizers")


class _Hidden(importlib.machinery.PathFinder):
    names: tuple[str, ...] = HIDDEN

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in cls.names:
            return None
        return super().find_spec(name, path, target)


def hide(names=HIDDEN) -> None:
    """Hide the top-level packages ``names`` from every later import (none may be imported yet)."""
    loaded = [m for m in sys.modules if m.split(".")[0] in names]
    if loaded:
        raise RuntimeError(f"already imported: {loaded[:5]}")
    _Hidden.names = tuple(names)
    finder = importlib.machinery.PathFinder
    sys.meta_path[:] = [_Hidden if f is finder else f for f in sys.meta_path]


if not __name__.endswith("_no_torch"):  # run with exec(), not imported: hide at once
    hide()
