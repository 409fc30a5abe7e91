"""The kinds other folders name ('inspect', 'sweep') have one spelling, the registry's (experiments/__init__.py
INSPECT_KIND, SWEEP_KIND): a string of either anywhere else in the package (the CLI's commands, observe's mechanism
source, the sweep in latency's folder) is a second spelling, which a rename would miss."""

from __future__ import annotations

import ast
from pathlib import Path

import accept_order
from accept_order.experiments import EXPERIMENTS, INSPECT_KIND, SWEEP_KIND, find

PACKAGE = Path(accept_order.__file__).parent
REGISTRY = PACKAGE / "experiments" / "__init__.py"
OWN_FOLDER = {INSPECT_KIND: PACKAGE / "experiments" / "inspect"}  # sweep's own folder is latency's, shared


def test_the_kinds_are_spelt_only_in_the_registry() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == REGISTRY:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in (INSPECT_KIND, SWEEP_KIND):
                own = OWN_FOLDER.get(node.value)
                if own is None or own not in path.parents:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value!r}")
    assert not found, found


def test_the_registry_s_names_are_the_experiments_kinds() -> None:
    assert EXPERIMENTS[INSPECT_KIND].command == INSPECT_KIND and EXPERIMENTS[SWEEP_KIND].command == SWEEP_KIND
    for kind in (INSPECT_KIND, SWEEP_KIND):
        experiment = find(kind)
        assert experiment is not None and experiment.kind == kind
