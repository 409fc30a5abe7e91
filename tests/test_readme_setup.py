"""The README's first lines work as typed (issue 27 §4): line 3 installs the servers as root where there is
no sudo (a container) and through sudo as a user; line 2 is the test command CI's .ci/run takes from it.
Lines 1 and 2 work on a fresh Debian or Ubuntu, whose python3 cannot make a venv (no ensurepip) until
python3-venv is installed: they install it first (as root, or through sudo), and only where it is missing; line 2
also installs python3-dev and build-essential where a C compiler, make or Python's headers are missing (the test
extra builds liburing's binding from source).

The lines run in bash with apt-get, id, sudo and python3 (and the venv's pip, accept-order and pytest)
replaced by stubs that record how they were called: nothing is installed."""

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
    assert {"python3-venv", "nginx-light", "bpftrace", "haproxy", "h2o"} <= set(installed[0].split())
    assert recorded.count("sudo apt-get") == (0 if root else 2)


@pytest.mark.parametrize("venv", [False, True], ids=["fresh-debian", "with-venv"])
@pytest.mark.parametrize("root", [True, False], ids=["root-without-sudo", "user-with-sudo"])
@pytest.mark.parametrize("number", [1, 2], ids=["line-1", "line-2"])
def test_lines_1_and_2_install_python3_venv_where_it_is_missing(
    number: int, root: bool, venv: bool, tmp_path: Path
) -> None:
    bin_dir, calls, work = tmp_path / "bin", tmp_path / "calls", tmp_path / "work"
    venv_bin, has_venv = work / ".venv" / "bin", tmp_path / "has-venv"
    bin_dir.mkdir()
    venv_bin.mkdir(parents=True)
    if venv:
        has_venv.touch()
    record = f'echo "$(basename "$0") $*" >> {calls}'
    # apt-get installing python3-venv is what lets python3 import ensurepip and make a venv (Debian's split)
    stub(bin_dir, "apt-get", f'{record}; case " $* " in *" python3-venv "*) : > {has_venv};; esac')
    stub(bin_dir, "python3", f"{record}; [ -e {has_venv} ]")
    stub(bin_dir, "basename", 'echo "${1##*/}"')
    stub(bin_dir, "id", f'[ "$1" = -u ] && echo {0 if root else 1000}')
    if not root:
        stub(bin_dir, "sudo", f'echo "sudo $1" >> {calls}; exec "$@"')
    for tool in ("pip", "accept-order", "pytest"):
        stub(venv_bin, tool, record)
    done = subprocess.run(
        ["/bin/bash", "-c", LINES[number - 1].strip()],
        cwd=work,
        env={"PATH": str(bin_dir), "HOME": str(tmp_path)},  # no other sudo, apt-get or python3
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    sudo = [] if root else ["sudo apt-get"]
    # line 2 also checks for what building liburing's binding takes (a C compiler, make, Python's headers)
    packages = "python3-venv" if number == 1 else "python3-venv python3-dev build-essential"
    apt = [*sudo, "apt-get update", *sudo, f"apt-get install -y {packages}"]
    last = ["pip install .", "accept-order run --mode epoll"] if number == 1 else ["pip install .[test]", "pytest"]
    check = re.search(r"python3 -c '([^']*)'", LINES[number - 1])
    assert check is not None and check.group(1).startswith("import ensurepip"), LINES[number - 1]
    assert [call.rstrip() for call in calls.read_text().splitlines()] == [
        f"python3 -c {check.group(1)}",
        *([] if venv else apt),
        "python3 -m venv .venv",
        *last,
    ]


def test_line_2_is_the_test_command_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "sed -n 2p README.md" in ci
    assert re.search(r"pip install '\.\[test\]' && \.venv/bin/pytest$", LINES[1].strip()), LINES[1]
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
