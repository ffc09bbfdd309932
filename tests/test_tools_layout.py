"""tools/ is grouped by role, and its import graph has no circle.

The graph is read from the source with ``ast`` (every ``import`` and ``from ... import``,
also those inside functions: a lazy import that closes a circle is still a circle), so the
test needs nothing installed and runs in milliseconds.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
ROLES = {"grade", "grading", "site", "notebooks", "training", "dev"}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def tools_modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / "tools").rglob("*.py"))}


def imported(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The tools modules that ``path`` (module ``name``) imports, anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports the module pkg.mod; `from mod import f` imports mod
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = tools_modules(root)
    return {name: imported(path, name, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_import_graph_of_tools_has_no_circle():
    graph = import_graph()
    assert sum(len(v) for v in graph.values()) > 30  # the reader does see the imports
    cycle = find_cycle(graph)
    assert cycle is None, "import circle in tools/: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_circle_through_a_lazy_relative_import(tmp_path):
    """The reader and the finder on a made-up package: a -> b at the top, b -> a in a function."""
    pkg = tmp_path / "tools" / "site"
    pkg.mkdir(parents=True)
    (tmp_path / "tools" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from tools.site import a\n")
    (pkg / "c.py").write_text("import tools.site.b\n")
    graph = import_graph(tmp_path)
    assert graph["tools.site.a"] == {"tools.site.b"}
    assert graph["tools.site.b"] == {"tools.site.a"}
    assert graph["tools.site.c"] == {"tools.site.b"}
    assert find_cycle(graph) == ["tools.site.a", "tools.site.b", "tools.site.a"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None


def test_tools_is_grouped_by_role():
    """Nothing loose in tools/: every script lives in the package named for its role, and a
    role package's ``__init__`` imports nothing (so importing one module never drags in the
    rest of its role, and no circle hides in a package's import)."""
    loose = sorted(p.name for p in TOOLS.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"put these in one of tools/{sorted(ROLES)}: {loose}"
    roles = {p.name for p in TOOLS.iterdir() if any(p.glob("*.py"))}  # not a leftover __pycache__
    assert roles == ROLES, f"tools/ holds {sorted(roles)}; CONTRIBUTING's map lists {ROLES}"
    graph = import_graph()
    for role in sorted(ROLES):
        assert (TOOLS / role / "__init__.py").exists(), f"tools/{role} is not a package"
        assert not graph[f"tools.{role}"], (
            f"tools/{role}/__init__.py imports {graph[f'tools.{role}']}"
        )
