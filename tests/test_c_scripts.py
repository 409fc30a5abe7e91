"""The experiment and benchmark scripts share one command-line parser (experiments/_cli.py) and never
decide anything by a mode's name: they read the mode's metadata (servers.modes)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from accept_order.servers.modes import MODES

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(
    p for folder in ("experiments", "benchmarks") for p in (ROOT / folder).glob("*.py") if p.name != "_cli.py"
)
WITH_MAIN = [p for p in SCRIPTS if "def main(" in p.read_text()]


def test_the_scripts_are_found() -> None:
    names = {p.name for p in WITH_MAIN}
    assert {"herd.py", "nc_order.py", "latency_shared_vs_reuseport.py", "bench_run.py"} <= names
    assert "bench_latency_driver.py" in names


@pytest.mark.parametrize("script", WITH_MAIN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_one_parser_for_every_script(script: Path) -> None:
    tree = ast.parse(script.read_text())
    imported = {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "_cli"
        for alias in node.names
    }  # fmt: skip
    assert "OneLineParser" in imported, f"{script.name} does not use experiments/_cli.py's parser"
    classes = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    bases = [ast.unparse(base) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for base in node.bases]
    assert not any("ArgumentParser" in b for b in bases), f"{script.name} defines a parser of its own: {classes}"


@pytest.mark.parametrize("script", sorted((ROOT / "experiments").glob("*.py")), ids=lambda p: f"experiments/{p.name}")
def test_experiments_read_mode_metadata_not_names(script: Path) -> None:
    """No mode name in the code (docstrings and help text aside): no `if mode == "epoll"`, no list of
    modes, no table keyed by mode names."""
    tree = ast.parse(script.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    names = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and any(part.strip() in MODES for part in node.value.split(","))  # "blocking,epoll" too
    ]
    assert names == [], f"{script.name} names modes in its code: {names}"
