"""Does an answer use the course's reference for its exercise? Two records, mapped here:

* **the student's source**, read by the grader (the text it sent to the sandbox, so the student
  cannot change it): names of course_lib imported or walked to (``from course_lib.rope import
  rope``, ``import course_lib`` then ``course_lib.rope.rope``), and the primitives that reach a
  module or switch off the runtime record without naming it (``__import__``, ``importlib``,
  ``sys.modules``, ``__globals__``, ``exec``, ``sys.setprofile``, a string that spells
  ``course_lib`` in pieces...). The names are resolved in the grader's own course_lib.
* **the student's process** (``tools/grading/grade_kernel.py``'s :class:`Watch`): the course_lib
  functions the student's code entered while a student cell ran and while the grader called
  the student's functions, and audit events that switch that record off. It sees the reference
  however it was reached, but it is kept in a process the student controls, so code written to
  find and edit it can hide a call; the source record does not depend on it.

An exercise is flagged when either record names one of its references (``REFERENCES`` in its
check's module: the functions, or classes, that compute its answer) or shows a dynamic import
or a switched-off record. A course_lib helper that is not the exercise's reference (the
softmax of lecture 01 in lecture 02's attention) is not flagged.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
from functools import cache

from .course import Check

LIBRARY = "course_lib"
# Names and attributes that reach a module or an object without naming it, or that switch off or
# search the runtime records; an honest answer has no use for them.
DYNAMIC = {
    "__import__", "importlib", "import_module", "__globals__", "__builtins__", "__subclasses__",
    "__closure__", "cell_contents", "f_back", "f_globals", "f_locals", "tb_frame", "_getframe",
    "getprofile", "setprofile", "gettrace", "settrace", "get_referrers", "get_referents",
    "get_objects", "ctypes", "_current_frames", "__loader__", "tracemalloc", "clear_refs",
    "_tracemalloc", "__main__", "inspect", "currentframe",
}  # fmt: skip
# Builtins that run code built from strings: flagged as names only (``model.eval()``,
# ``re.compile`` and ``torch.compile`` are ordinary methods).
RUN_STRINGS = {"exec", "eval", "compile"}


def references(check: Check) -> tuple[str, ...]:
    """The course_lib names (``module.qualname``) that compute ``check``'s exercise: a name
    run or imported matches one of them, or a method of one of its classes."""
    module = sys.modules.get(getattr(check.function, "__module__", ""), None)
    declared = getattr(module, "REFERENCES", {}).get(check.exercise, ())
    return tuple(sorted({n for d in declared for n in _canonical(d)}))


@cache
def _resolve(dotted: str):
    """The object ``dotted`` names in the grader's course_lib, or None (never imports anything
    but course_lib's own modules)."""
    parts = dotted.split(".")
    if parts[0] != LIBRARY:
        return None
    try:  # as Python reads it: attributes from the package (course_lib.softmax is the function)
        obj = importlib.import_module(LIBRARY)
        for attr in parts[1:]:
            obj = getattr(obj, attr)
        return obj
    except (ImportError, AttributeError):
        pass
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            found = name in sys.modules or importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            continue
        try:
            obj = importlib.import_module(name)
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except (ImportError, AttributeError):
            return None
        return obj
    return None


def _canonical(dotted: str) -> tuple[str, ...]:
    """Where ``dotted`` is defined (``module.qualname``; a class with its course_lib bases)."""
    obj = _resolve(dotted)
    if obj is None:
        return (dotted,)
    if inspect.ismodule(obj):
        return (obj.__name__,)
    names = {dotted}
    if inspect.isclass(obj):
        for cls in obj.__mro__:
            if cls.__module__.split(".")[0] == LIBRARY:
                names.add(f"{cls.__module__}.{cls.__qualname__}")
    elif hasattr(obj, "__module__") and hasattr(obj, "__qualname__"):
        names.add(f"{obj.__module__}.{obj.__qualname__}")
    return tuple(sorted(names))


def _hits(name: str, refs: tuple[str, ...]) -> bool:
    """Does ``name`` (run, or imported) name a reference, a method of one, or a module or
    class that holds one?"""
    for n in _canonical(name):
        for ref in refs:
            if n == ref or n.startswith(ref + ".") or ref.startswith(n + "."):
                if n == LIBRARY and ref != LIBRARY:  # `import course_lib` alone names nothing
                    continue
                return True
    return False


@cache  # every check reads every earlier cell again
def source_record(source: str) -> tuple[list[str], list[str]]:
    """``(names, dynamic)`` of student code: the course_lib names it imports or walks to, and
    the dynamic primitives it uses (each as a short phrase)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [], (["code the grader cannot parse names course_lib"] if LIBRARY in source else [])
    aliases: dict[str, str] = {}
    names: set[str] = set()
    dynamic: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == LIBRARY:  # a module: what is walked to counts
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else LIBRARY
                if a.name.split(".")[0] in DYNAMIC:
                    dynamic.add(f"imports {a.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] == LIBRARY:
                for a in node.names:
                    full = module if a.name == "*" else f"{module}.{a.name}"
                    if a.name == "*" or not inspect.ismodule(_resolve(full)):
                        names.add(full)
                    aliases[a.asname or a.name] = full
            elif module.split(".")[0] in DYNAMIC:
                dynamic.add(f"imports from {module}")
    strings, roots = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, root = [], node
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases and id(root) not in roots:
                roots.add(id(root))  # the longest chain (ast.walk meets the outer node first)
                names.add(".".join([aliases[root.id], *reversed(chain)]))
            if node.attr in DYNAMIC or (
                node.attr == "modules"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                dynamic.add(f"uses .{node.attr}")
        elif isinstance(node, ast.Name) and (node.id in DYNAMIC or node.id in RUN_STRINGS):
            dynamic.add(f"uses {node.id}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append(node.value)
    for node in ast.walk(tree):  # a module used as a whole (getattr(rope_module, name))
        if isinstance(node, ast.Name) and node.id in aliases and id(node) not in roots:
            if isinstance(node.ctx, ast.Load):
                names.add(aliases[node.id])
    if LIBRARY in "".join(strings) or LIBRARY in "".join(s.replace(" ", "") for s in strings):
        dynamic.add("spells course_lib in a string")
    return sorted(names), sorted(dynamic)


@cache
def _bindings(source: str) -> dict[str, str]:
    """``{name: course_lib name}`` bound by the imports of ``source``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == LIBRARY:
                    out[a.asname or LIBRARY] = a.name if a.asname else LIBRARY
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == LIBRARY:
            out.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    return out


@cache
def _loaded_names(source: str) -> frozenset[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))


def evidence(
    check: Check, sources: list[str], reached, tamper, earlier: list[str] = ()
) -> list[str]:
    """Why ``check``'s exercise is flagged (empty: not flagged). Names imported or walked to in
    the cells since the previous check (``sources``) count, and so do names imported by an
    earlier cell (``earlier``) that these cells use (an import made in 13.1's cell for 13.2's
    answer flags 13.2), and the course_lib functions the runtime record saw entered
    (``reached``: in every student cell so far, and in the grader's calls for this check). Dynamic primitives and tampering count from the cells since the previous
    check (``sources``) and its calls (``tamper``)."""
    refs = references(check)
    why: set[str] = set()
    used = set().union(*(_loaded_names(s) for s in sources))
    for source in earlier:  # an earlier import counts where this exercise's cells use it
        why |= {f"imports {n}" for alias, n in _bindings(source).items()
                if alias in used and _hits(n, refs)}  # fmt: skip
    for source in sources:
        names, dynamic = source_record(source)
        why |= {f"imports {n}" for n in names if _hits(n, refs)} | set(dynamic)
    why |= {f"calls {n}" for n in reached if _hits(n, refs)}
    why |= {f"tampers with the grader's records ({t})" for t in tamper}
    return sorted(why)
