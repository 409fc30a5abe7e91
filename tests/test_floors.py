"""The package's floors, read from its own imports (every import: at module level, inside functions and
under TYPE_CHECKING): core at the bottom, then analysis and results, probes, loads and render, servers,
experiments, the API and the CLI. Nothing imports a floor above its own, and no module imports itself back
through others (docs/explanation/architecture.md draws the same floors)."""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "accept_order"
# A room's floor; a room may import its own floor's other rooms and every floor below it.
FLOORS = {
    "core": 0,
    "analysis": 1,
    "results": 1,
    "probes": 2,
    "loads": 2,
    "render": 2,
    "servers": 3,
    "experiments": 4,
    "api": 5,
    "cli": 6,
    "__main__": 7,
}
PURE = ("analysis", "results")  # they import only core, and each other
ABOVE_PURE = ("experiments", "servers", "render", "cli", "loads", "probes", "api")
# One pytest-xdist worker runs them all: the package's imports are read once per process (imports_of).
pytestmark = pytest.mark.xdist_group("test_floors")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    where = PACKAGE.parent.joinpath(*name.split("."))
    return where.with_suffix(".py").exists() or (where / "__init__.py").exists()


def imports() -> list[tuple[str, str, int]]:
    """(importing module, imported module, line) for every import of the package by itself."""
    return [found for path in sorted(PACKAGE.rglob("*.py")) for found in imports_of(path, path.stat().st_mtime_ns)]


@functools.cache
def imports_of(path: Path, _mtime_ns: int) -> tuple[tuple[str, str, int], ...]:
    """One module's imports of the package, read once per version of the file (five tests read them all)."""
    found = []
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "accept_order":
                continue
            for alias in node.names:  # `from . import netns` imports a module, not a name
                sub = f"{target}.{alias.name}"
                found.append((name, sub if is_module(sub) else target, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(name, a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "accept_order"]
    return tuple(found)


def room(module: str) -> str:
    """`accept_order.core.spec` -> core; the package itself and its top modules are their own rooms."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "accept_order"


def test_every_room_has_a_floor() -> None:
    rooms = {room(module_name(p)) for p in PACKAGE.rglob("*.py")} - {"accept_order"}
    assert rooms <= set(FLOORS), f"rooms without a floor: {sorted(rooms - set(FLOORS))}"


def test_no_import_runs_up_a_floor() -> None:
    up = [
        f"{source}:{line} imports {target}"
        for source, target, line in imports()
        if room(source) in FLOORS and room(target) in FLOORS and FLOORS[room(target)] > FLOORS[room(source)]
    ]
    assert not up, "\n".join(up)


@pytest.mark.parametrize("pure", PURE)
def test_analysis_and_results_import_only_core_and_each_other(pure: str) -> None:
    wrong = [
        f"{source}:{line} imports {target}"
        for source, target, line in imports()
        if room(source) == pure and room(target) in ABOVE_PURE
    ]
    assert not wrong, "\n".join(wrong)


def test_core_imports_nothing_above_it() -> None:
    wrong = [f"{s}:{line} imports {t}" for s, t, line in imports() if room(s) == "core" and room(t) != "core"]
    assert not wrong, "\n".join(wrong)


def cycles(edges: list[tuple[str, str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target, _ in edges:
        if source != target:
            graph[source].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in list(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle() -> None:
    assert cycles(imports()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    """The check above could pass by finding nothing at all: a made-up circle of three is found."""
    edges = [("a", "b", 1), ("b", "c", 1), ("c", "a", 1), ("c", "d", 1)]
    assert cycles(edges) == [["a", "b", "c"]]


def test_the_scan_sees_imports_inside_functions() -> None:
    """The session's latency run imports the model's prediction inside a function: the scan must see it."""
    assert ("accept_order.experiments.session", "accept_order.experiments.latency.model_check") in {
        (s, t) for s, t, _ in imports()
    }


def test_no_module_is_over_400_lines() -> None:
    lines = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert lines and not {name: n for name, n in lines.items() if n > 400}
