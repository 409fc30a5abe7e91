"""The README's first lines work as typed (issue 27 §4): line 3 installs the servers as root where there is
no sudo (a container) and through sudo as a user; line 2 is the test command CI's .ci/run takes from it.

Line 3 runs in bash with apt-get, id and sudo replaced by stubs that record how they were called: nothing is
installed."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINES = (ROOT / "README.md").read_text().splitlines()


def stub(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


@pytest.mark.parametrize("root", [True, False], ids=["root-without-sudo", "user-with-sudo"])
def test_line_3_installs_as_root_without_sudo_and_as_a_user_with_it(root: bool, tmp_path: Path) -> None:
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    stub(bin_dir, "apt-get", f'echo "apt-get $*" >> {calls}')
    stub(bin_dir, "id", f'[ "$1" = -u ] && echo {0 if root else 1000}')
    if not root:
        stub(bin_dir, "sudo", f'echo "sudo $1" >> {calls}; exec "$@"')
    line = LINES[2].strip()
    done = subprocess.run(
        ["/bin/bash", "-c", line],
        env={"PATH": str(bin_dir), "HOME": str(tmp_path)},  # no other sudo, no real apt-get
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    recorded = calls.read_text().splitlines()
    installed = [c for c in recorded if c.startswith("apt-get install -y ")]
    assert recorded[0] == ("apt-get update" if root else "sudo apt-get") and len(installed) == 1, recorded
    assert {"nginx-light", "bpftrace", "haproxy", "h2o"} <= set(installed[0].split())
    assert recorded.count("sudo apt-get") == (0 if root else 2)


def test_line_2_is_the_test_command_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "sed -n 2p README.md" in ci
    assert re.search(r"pip install '\.\[test\]' && \.venv/bin/pytest$", LINES[1].strip()), LINES[1]
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
