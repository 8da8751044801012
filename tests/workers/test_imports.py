"""workers/ imports in one direction: no module imports one that (through others) imports it back,
counting imports inside functions too (they hid the old jobs -> scheduling -> push -> jobs cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "workers"


def _imports(path: Path) -> set[str]:
    """The workers modules ``path`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:
                found |= {alias.name for alias in node.names}
            elif node.module and node.module.startswith("workers."):
                found.add(node.module.split(".")[1])
            elif node.module == "workers":
                found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("workers.")}
    return found


def _graph() -> dict[str, set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return {p.stem: _imports(p) & modules - {p.stem} for p in PACKAGE.glob("*.py")}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_finder_sees_a_cycle_through_a_function_level_import():
    assert _cycle({"jobs": {"scheduling"}, "scheduling": {"push"}, "push": {"jobs"}}) == \
        ["jobs", "scheduling", "push", "jobs"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_workers_modules_import_without_a_cycle():
    graph = _graph()
    assert {"jobs", "scheduling", "push", "context"} <= set(graph)
    assert "jobs" in graph["runner"] or "context" in graph["runner"]  # the graph is really read
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))
