"""The suite's leftover check (conftest.no_child_outlives_the_test) looks for descendants only when the test
process has a child at all (conftest.has_children: one waitid); that answer must be right, or a leftover goes
unseen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import has_children, wait_for


def test_a_running_child_and_a_zombie_are_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert has_children()
    finally:
        assert child.stdin is not None
        child.stdin.close()
    # Ended and not yet reaped: a zombie is a child still (psutil lists it; the fixture reaps it).
    wait_for(lambda: Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0], "Z".__eq__, 30,
             "the child to be a zombie")  # fmt: skip
    assert has_children()
    assert os.waitpid(child.pid, os.WNOHANG)[0] == child.pid, "has_children reaped the zombie"
    child.returncode = 0  # reaped here: Popen must not wait for it again


def test_a_process_without_children_has_none() -> None:
    code = "import sys; sys.path.insert(0, 'tests'); from conftest import has_children; print(has_children())"
    root = Path(__file__).parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
