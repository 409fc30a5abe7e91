"""A pid that /proc hides is not 'no process' (probes/hidden_pids.py).

On a shared host /proc may be mounted hidepid=invisible: a user sees only its own processes there. As a user,
'inspect PID', 'observe PID' and 'latency --attach PID' of root's nginx read 'no process PID' (and '--attach: no
process PID'), false of a server that runs. Here /proc is mounted so in a private mount namespace, the tool run
in it as nobody against a process of this test's (root's); the witnesses are the kernel's: /proc/PID absent
there, the process alive here, and a reaped pid still 'no process'.
"""

from __future__ import annotations

import grp
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from accept_order.probes.hidden_pids import hidepid

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("setpriv") and shutil.which("unshare")),
    reason="needs root (a mount namespace, a user to drop to) and setpriv and unshare (util-linux)",
)


def _as_nobody_hidden(*argv: str, mode: str = "invisible") -> subprocess.CompletedProcess[str]:
    """argv as user nobody, with /proc mounted hidepid=`mode` (and any further options after it) in a mount
    namespace of its own."""
    drop = "setpriv --reuid=nobody --regid=nogroup --clear-groups"
    script = f'mount -t proc -o hidepid={mode} proc /proc || exit 99; exec {drop} "$@"'
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )


def _tool(*args: str, mode: str = "invisible") -> subprocess.CompletedProcess[str]:
    done = _as_nobody_hidden(sys.executable, "-m", "accept_order", *args, mode=mode)
    if done.returncode == 99:
        pytest.skip(f"cannot mount /proc with hidepid here: {done.stderr.strip()}")
    return done


@pytest.fixture
def roots() -> Iterator[tuple[int, int]]:
    """A process of this test's (root's) holding a listener, and its port; ended by the test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        proc = subprocess.Popen(["sleep", "60"], pass_fds=[sock.fileno()])
    try:
        yield proc.pid, port
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("mode", ["invisible", "noaccess"])
def test_inspect_of_a_hidden_process_says_hidden(roots: tuple[int, int], mode: str) -> None:
    pid, _ = roots
    look = f"cat /proc/{pid}/status >/dev/null 2>&1 && echo seen || echo hidden"
    seen = _as_nobody_hidden("sh", "-c", look, mode=mode)
    assert seen.stdout.strip() == "hidden", seen  # the premise: /proc keeps it from nobody
    for command in ("inspect", "observe"):
        done = _tool(command, str(pid), mode=mode)
        assert done.returncode == 1 and not done.stdout, done
        (line,) = done.stderr.splitlines()
        assert f"pid {pid} runs, but /proc is mounted hidepid={mode}" in line, line
        assert "no process" not in line and "run as root or as its user" in line, line
        assert "gid=" not in line, line  # no group sees every process: none to join
    assert Path(f"/proc/{pid}").exists()  # and it ran throughout: the kernel's word, as root


def test_the_group_proc_exempts_is_named(roots: tuple[int, int]) -> None:
    """Said as 'or as a member of the group /proc's gid= option names' whether /proc named a group or not."""
    pid, _ = roots
    done = _tool("inspect", str(pid), mode="invisible,gid=4")
    assert done.returncode == 1 and not done.stdout, done
    (line,) = done.stderr.splitlines()
    group = grp.getgrgid(4).gr_name
    assert line.endswith(f"run as root or as its user, or as a member of group {group} (/proc's gid=4))"), line


def test_attach_of_a_hidden_process_says_hidden(roots: tuple[int, int]) -> None:
    pid, port = roots
    done = _tool("latency", "--attach", str(pid), "-p", str(port), "-n", "10")
    assert done.returncode == 1 and not done.stdout, done
    (line,) = done.stderr.splitlines()
    assert f"--attach: pid {pid} runs, but /proc is mounted hidepid=invisible" in line, line


def test_a_pid_that_ended_is_still_no_process() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait(10)  # reaped: the kernel has no such process now
    done = _tool("inspect", str(gone.pid))
    assert done.returncode == 1, done
    assert done.stderr.strip() == f"accept-order: error: no process {gone.pid}", done.stderr


@pytest.mark.parametrize(
    ("supers", "expected"),
    [
        ("rw", None),
        ("rw,hidepid=invisible", "invisible"),
        ("rw,hidepid=2,gid=27", "2"),
        ("rw,hidepid=off", None),
    ],
)
def test_hidepid_read_from_the_mount_on_top(tmp_path: Path, supers: str, expected: str | None) -> None:
    """Two mounts on /proc (a container's own over the host's): the last line is the one on top."""
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 1 0:21 / /proc rw,relatime - proc proc rw,hidepid=invisible\n"
        "30 1 0:25 / /sys rw - sysfs sysfs rw,hidepid=2\n"
        f"41 22 0:41 / /proc rw,relatime - proc proc {supers}\n"
    )
    assert hidepid(str(info)) == expected
