"""The two lazy registries hand out a few names through a module __getattr__ (servers/registry.py HELPERS and
unseen_note, servers/modes Listeners, Mode and Waiter: made or imported when first asked for). Beside a module
__getattr__ mypy takes every name the module does not define for its return type, Any: `from ..servers.registry
import checkd` type-checked, and `mypy src`, the gate before each commit, no longer caught a misspelled or renamed
name imported from either module (some hundred imports). Read from mypy itself, on a few lines that use them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parents[1]
USES = """
from accept_order.servers.registry import HELPERS, unseen_note, no_such_name
from accept_order.servers.modes import Mode, no_such_mode_name

reveal_type(HELPERS)
reveal_type(unseen_note)
reveal_type(Mode)
"""


def test_a_name_neither_registry_defines_is_a_type_error(tmp_path: Path) -> None:
    uses = tmp_path / "uses.py"
    uses.write_text(USES)
    argv = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(uses)]
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env, cwd=ROOT)
    said = done.stdout
    assert 'Module "accept_order.servers.registry" has no attribute "no_such_name"' in said, said
    assert 'Module "accept_order.servers.modes" has no attribute "no_such_mode_name"' in said, said
    # the names the __getattr__ hands out keep their own types
    assert 'Revealed type is "tuple[str, ...]"' in said, said
    assert 'Revealed type is "def (spec: accept_order.core.spec.ServerSpec' in said, said
    assert 'Revealed type is "def () -> accept_order.servers.modes.base.Mode"' in said, said
