"""Make this Python behave as if torch, transformers and tokenizers were not installed.

The browser edition's Python (Pyodide) has none of them. ``sys.modules["torch"] = None`` makes
``import torch`` fail too, but libraries that look torch up in ``sys.modules`` (scipy's array API
layer does) then find ``None`` and break; hiding the packages from the import system's path
finder is what "not installed" looks like. Run it with ``exec`` (a kernel's ``exec_lines``) or
call :func:`hide`.
"""

import importlib.machinery
import sys

HIDDEN = ("torch", "transformers", "tokenizers")


class _Hidden(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            return None
        return super().find_spec(name, path, target)


def hide() -> None:
    """Hide :data:`HIDDEN` from every later import (nothing of them may be imported yet)."""
    loaded = [m for m in sys.modules if m.split(".")[0] in HIDDEN]
    if loaded:
        raise RuntimeError(f"already imported: {loaded[:5]}")
    finder = importlib.machinery.PathFinder
    sys.meta_path[:] = [_Hidden if f is finder else f for f in sys.meta_path]


if __name__ != "_no_torch":  # run with exec(): hide at once
    hide()
