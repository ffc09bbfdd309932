"""Show the code a lecture teaches: the source of a ``course_lib`` function, in the notebook.

A lecture that trains a model should show the lines that do the work, not only their results.
``show_source(AttentionSeq2SeqGRU.decode)`` displays the function exactly as it is in the
library (the code the tests check), headed by the file it lives in, so the notebook never
holds a second, drifting copy of it.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from ._validation import check_str

__all__ = ["SourceListing", "show_source"]


class SourceListing:
    """Source text that a notebook displays as a highlighted Python block.

    ``str(listing)`` and ``listing.text`` give the plain text; Jupyter renders
    ``_repr_markdown_`` (a fenced ``python`` block).
    """

    def __init__(self, text: str):
        self.text = check_str(text, "text")

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.text}\n```"


def _docstring_lines(tree: ast.AST) -> set[int]:
    """1-based line numbers of every class/function docstring in ``tree``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if (
                len(node.body) > 1
                and isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def _one_source(obj, docstring: bool) -> str:
    if not (inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isclass(obj)):
        raise TypeError(
            f"show_source needs a function, method or class, got {type(obj).__name__}: {obj!r}"
        )
    try:
        source = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError) as exc:  # defined in an interactive cell or in C
        raise ValueError(f"the source of {obj.__qualname__} is not available: {exc}") from exc
    if not docstring:
        drop = _docstring_lines(ast.parse(source))
        source = "\n".join(
            line for i, line in enumerate(source.splitlines(), start=1) if i not in drop
        )
    module = inspect.getmodule(obj)
    name = module.__name__ if module is not None else "?"
    where = name.replace(".", "/") + ".py" if name.split(".")[0] == "course_lib" else name
    return f"# {where}: {obj.__qualname__}\n{source.rstrip()}"


def show_source(*objects, docstring: bool = True) -> SourceListing:
    """The source code of one or more functions, methods or classes, ready to display.

    Args:
        *objects: functions, methods or classes defined in a file (not in a notebook cell).
        docstring: keep the docstrings (False drops them, to show only the code).

    Returns:
        A :class:`SourceListing`; each object's source is headed by a comment naming its
        module file and qualified name, and listings are separated by a blank line.

    Raises:
        TypeError: if no object is given, or an object is not a function, method or class.
        ValueError: if Python cannot find the object's source file.
    """
    if not objects:
        raise TypeError("show_source needs at least one function, method or class")
    if not isinstance(docstring, bool):
        raise TypeError(f"docstring must be True or False, got {docstring!r}")
    return SourceListing("\n\n".join(_one_source(obj, docstring) for obj in objects))
