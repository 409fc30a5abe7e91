"""The coordinator's beats (loads/hosts/beats.py) go on to every other host while one host's ssh reads nothing: one
thread beats every host in turn, and a write into the pipe to an ssh that is stopped (SIGSTOP, a debugger) blocks
once the pipe is full, about 45 minutes of beats at 24 bytes a second into 64 KiB. Then the other hosts heard no
beat, each ended its load for want of one (load_side), and the run's end blocked too: execnet's termination message
to the stopped host waits on the same pipe's lock, so the command never exited.

The test stands in for those 45 minutes: c2's ssh stopped, its stdin pipe is filled from /proc until it has room for
ROOM_B bytes only (eight beats, or the few messages the end of a run sends it). Its witnesses: the run's exit and its
file (c1 drove to the end, c2 was lost), and the processes left in each namespace (none). A real cluster
(tests/cluster.py), as test_clients_silent_host.py.
"""

from __future__ import annotations

import array
import fcntl
import os
import re
import signal
import termios
from pathlib import Path

import psutil
from cluster import Cluster, cluster_fixture
from conftest import wait_for
from test_clients_faults import (
    RATE,
    TICKED_CONNECTS,
    Run,
    assert_nothing_left,
    load_args,
    opened,
    start,
    under_way,
)
from test_clients_silent_host import SILENT

cluster = cluster_fixture(clients=2)
PAGE_B = 4096  # a pipe's slot; a write of less than this merges into the last slot where it fits
ROOM_B = 200  # left in the pipe: eight 24-byte beats, or the stop, two channels' ends and execnet's end (66 bytes)
F_GETPIPE_SZ = 1032
# What is asserted is of beats, not of the load: c1 driving to the end of its 35 s (beats heard past c2's full pipe),
# c2 lost. A quarter of test_clients_faults' RATE: c2 reaches TICKED_CONNECTS in 4 s in place of 1, and the load's
# 14,000 connections (4.5 CPU-s of the test's, at RATE) are 3,500
SLOW_RATE = RATE // 4


def ssh_to(run: Run, name: str) -> psutil.Process:
    """The coordinator's ssh to `name` (its destination the argument after '--')."""
    for child in psutil.Process(run.proc.pid).children():
        argv = child.cmdline()
        if argv and argv[0].endswith("ssh") and "--" in argv and argv[argv.index("--") + 1] == name:
            return child
    raise AssertionError(f"no ssh to {name} among the coordinator's children")


def unread(fd: int) -> int:
    got = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, got)
    return got[0]


def fill_leaving(pid: int, room: int) -> None:
    """Fill the pipe into the stopped `pid`'s stdin until `room` bytes of small writes fit: whole slots, then one that
    leaves `room` in the last. Every write is non-blocking: one refused means the pipe was not as counted."""
    fd = os.open(f"/proc/{pid}/fd/0", os.O_WRONLY | os.O_NONBLOCK)
    try:
        slots = fcntl.fcntl(fd, F_GETPIPE_SZ) // PAGE_B
        used = 1 if unread(fd) else 0  # a message it had not read as it stopped: in a slot of its own or merged
        for _ in range(slots - used - 1):
            os.write(fd, b"\0" * PAGE_B)
        os.write(fd, b"\0" * (PAGE_B - room))
    finally:
        os.close(fd)


def test_a_stopped_ssh_holds_up_no_other_hosts_beats(cluster: Cluster, tmp_path: Path) -> None:
    before = opened(cluster)
    run = start(tmp_path, *load_args(cluster, tmp_path), "--duration", "35s", "--rate", str(SLOW_RATE))
    under_way(run, cluster, before, TICKED_CONNECTS)
    ssh = ssh_to(run, "c2")
    ssh.send_signal(signal.SIGSTOP)  # never continued: the pipe holds bytes ssh must not send on; the run ends it
    try:
        wait_for(ssh.status, lambda status: status == psutil.STATUS_STOPPED, 30, "c2's ssh to stop")  # reads no more
        fill_leaving(ssh.pid, ROOM_B)
        code = run.wait()
    except BaseException:
        os.killpg(run.proc.pid, signal.SIGKILL)  # blocked for ever (the bug): its ssh's are in sessions of their own
        ssh.kill()
        raise
    assert code == 1, run.err.text
    saved, error = run.error_lines()
    assert saved == f"wrote {run.json_path}", run.err.text
    assert error.startswith("accept-order: error: client host c2 was lost during the run: "), error
    c1, c2 = run.document()["hosts"]
    assert c1["lost"] is None and c1["served_total"] > 0, c1  # it heard beats to the end of its 35 s
    assert re.fullmatch(SILENT, c2["lost"] or ""), c2["lost"]
    assert_nothing_left(cluster, str(tmp_path))
