"""Nothing is left when the tool is SIGKILLed mid-run (issue 16): no server process, no private directory.

The tool runs in a process of its own; once every worker of the launched server exists (found as the
tool's descendants, which is how the kernel links them), the tool is SIGKILLed, so none of its handlers
runs. The reaper must then end the server's whole process group and remove its directory; a directory
of an earlier run whose tool is gone is removed by the next launch.
"""

from __future__ import annotations

import glob
import os
import signal
import stat
import subprocess
import sys
import tempfile

import psutil
import pytest
from conftest import gone, wait_for

from accept_order.reaper import REAPER, Reaper
from accept_order.servers.launched import base
from accept_order.servers.launched.base import remove_stale_directories
from accept_order.servers.registry import server_kind
from accept_order.spec import ServerSpec

WORKERS = 2


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _directories(tool_pid: int) -> list[str]:
    return glob.glob(os.path.join(tempfile.gettempdir(), f"accept-order-*-{tool_pid}-*"))


@pytest.mark.parametrize("kind", ["nginx", "gunicorn", "haproxy", "node", "uwsgi", "builtin"])
def test_sigkill_of_the_tool_leaves_no_server_and_no_directory(kind: str) -> None:
    missing = server_kind(kind).missing()
    if missing:
        pytest.skip(missing)
    argv = [sys.executable, "-m", "accept_order", "run", "--server", kind, "-w", str(WORKERS), "-n", "3"]
    argv += ["--gap-ms", "10000"]  # the run waits between connections: it is mid-run when killed
    tool = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # haproxy's workers are threads of one process; the others' are processes (plus a master)
        wanted = 1 if kind == "haproxy" else WORKERS
        server = wait_for(
            lambda: [p for p in _descendants(tool.pid) if "reaper" not in " ".join(p.cmdline())],
            lambda procs: len(procs) >= wanted,
            20.0,
            f"{kind}'s processes",
        )
        if kind != "builtin":
            assert _directories(tool.pid), "a launched server has a private directory while it runs"
        pids = [p.pid for p in server] + [p.pid for p in _descendants(tool.pid)]
        tool.send_signal(signal.SIGKILL)
        tool.wait()
        wait_for(lambda: gone(pids), bool, 5.0, f"every process {kind} started to end")
        wait_for(lambda: _directories(tool.pid), lambda left: not left, 5.0, "the private directory to go")
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()


def test_a_stale_directory_of_a_dead_run_is_removed_and_a_live_ones_kept() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs (reused only after the kernel wraps around)
    base = tempfile.gettempdir()
    stale = tempfile.mkdtemp(prefix=f"accept-order-nginx-{dead.pid}-", dir=base)
    live = tempfile.mkdtemp(prefix=f"accept-order-nginx-{os.getppid()}-", dir=base)
    try:
        remove_stale_directories()
        assert not os.path.exists(stale)
        assert os.path.isdir(live)
    finally:
        for path in (stale, live):
            if os.path.isdir(path):
                os.rmdir(path)


def test_a_group_announced_from_the_child_is_ended_when_the_tool_dies() -> None:
    """The master tells the reaper its group between fork and exec: a SIGKILL of the tool right after the
    fork, before the tool's own watch_group, must not leave the group unwatched. The tool's death is the
    reaper's pipe closing with the entry open."""
    reaper = Reaper()
    reaper.watch_directory("/nonexistent/accept-order-test")  # starts the reaper process
    child = subprocess.Popen(["sleep", "60"], start_new_session=True, preexec_fn=reaper.announce_own_group)
    try:
        reaper._stop()  # as if we died: the pipe closes, and the reaper ends what it was told about
        assert child.wait(5.0) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_reaper_knows_a_directory_before_it_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    watched: list[bool] = []
    real_mkdir = os.mkdir

    def mkdir(path: str, mode: int = 0o777) -> None:
        watched.append(f"dir {path}" in REAPER._open)
        real_mkdir(path, mode)

    monkeypatch.setattr(base.os, "mkdir", mkdir)
    server = base.LaunchedServer(ServerSpec())
    server.name = "test"
    path = server._make_directory()
    try:
        assert watched == [True]
        assert os.path.isdir(path) and stat.S_IMODE(os.stat(path).st_mode) == 0o700
        assert os.path.basename(path).startswith(f"accept-order-test-{os.getpid()}-")
    finally:
        os.rmdir(path)
        REAPER.done_directory(path)
