"""Nothing is left when the tool is SIGKILLed mid-run (issue 16): no server process, no private directory.

That a SIGKILL of the tool mid-run leaves no process and no directory of any launched kind is the contract
every kind keeps, tested for each kind of the registry in test_kind_contract.py. Here: how the reaper does
it (a group announced from the child, a group of zombies, a directory known before it exists); a directory
of an earlier run whose tool is gone is removed by the next launch. The tool's own children (the built-in
workers, fd-pass's acceptor, the load generator's drivers, bpftrace) die with it by the kernel's
parent-death signal, including one forked just before the kill (killed right after its fork, 1 run in 3
left the newest child running before die_with_parent checked its parent).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable

import psutil
import pytest
from conftest import child_processes, gone, wait_for

from accept_order.core.reaper import REAPER, Reaper
from accept_order.servers.launched import base
from accept_order.servers.launched.base import remove_stale_directories

WORKERS = 2


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def test_a_group_left_with_only_zombies_has_ended() -> None:
    """end_group does not wait for init to reap an orphan's zombie (uvicorn's resource tracker leaves one): a
    zombie holds nothing. Our own unreaped child, alone in its group, is such a zombie until we wait for it."""
    from accept_order.core import reaper
    from accept_order.servers.watched import proc_state

    dead = subprocess.Popen(["true"], start_new_session=True)
    live = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        wait_for(lambda: proc_state(dead.pid), lambda state: state == "Z", 5.0, "the child to be a zombie")
        assert not reaper._alive_in(dead.pid)
        assert reaper._alive_in(live.pid)
        reaper.end_group(live.pid)
        assert not reaper._alive_in(live.pid)
    finally:
        live.kill()
        live.wait()
        dead.wait()


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


def _kill_mid_run_and_check(argv: list[str], ready: str, is_ready: Callable[[list[psutil.Process]], bool]) -> None:
    """Start the tool, wait until `is_ready(descendants)` holds, SIGKILL it, and check every process it
    had started ends (the kernel's parent-death signal or the reaper: none of the tool's handlers runs)."""
    tool = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started: list[psutil.Process] = []
    try:
        # polled from the kernel's children lists (cheap); what must end is then read with psutil (every one)
        wait_for(lambda: child_processes(tool.pid, recursive=True), is_ready, 20.0, ready)
        started = _descendants(tool.pid)
        pids = [p.pid for p in started]
        tool.send_signal(signal.SIGKILL)
        tool.wait()
        wait_for(lambda: gone(pids), bool, 5.0, "every process the tool started to end")
    except BaseException:
        print("left:", [(p.pid, " ".join(p.cmdline())) for p in started if p.is_running()])  # for the failure
        raise
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()


def _named(procs: list[psutil.Process], word: str) -> list[psutil.Process]:
    found = []
    for p in procs:
        try:
            if word in " ".join(p.cmdline()) or word in p.name():
                found.append(p)
        except psutil.Error:
            pass
    return found


def test_sigkill_mid_load_leaves_no_worker_and_no_load_generator() -> None:
    """latency: the built-in workers and the load generator's driver processes, killed mid-load."""
    argv = [sys.executable, "-m", "accept_order", "latency", "-w", str(WORKERS), "--duration", "30s", "-c", "4"]
    argv += ["--driver-procs", "2"]
    # the tool's children: the workers, then the two drivers once the load runs
    _kill_mid_run_and_check(argv, "workers and drivers", lambda procs: len(procs) >= WORKERS + 2)


def test_sigkill_leaves_no_fd_pass_acceptor() -> None:
    argv = [sys.executable, "-m", "accept_order", "run", "--mode", "fd-pass", "-w", str(WORKERS), "-n", "3"]
    argv += ["--gap-ms", "10000"]
    _kill_mid_run_and_check(argv, "workers and the acceptor", lambda procs: len(procs) >= WORKERS + 1)


def test_sigkill_leaves_no_bpftrace() -> None:
    """latency --attach counts accepts with bpftrace (the attached server's replies may not name workers)."""
    if shutil.which("bpftrace") is None or os.geteuid() != 0:
        pytest.skip("needs bpftrace, as root")
    server = subprocess.Popen(
        [sys.executable, "-m", "accept_order", "serve", "-w", str(WORKERS), "--mode", "blocking", "-p", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        header = server.stdout.readline()  # "accept-order serve: mode blocking, 2 workers listening on HOST:PORT"
        port = header.rsplit(":", 1)[1].strip()
        argv = [sys.executable, "-m", "accept_order", "latency", "--attach", str(server.pid), "-p", port]
        argv += ["--duration", "30s", "-c", "2"]
        _kill_mid_run_and_check(argv, "bpftrace", lambda procs: bool(_named(procs, "bpftrace")))
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=10)


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
    path = base.private_directory(f"accept-order-test-{os.getpid()}-")
    try:
        assert watched == [True]
        assert os.path.isdir(path) and stat.S_IMODE(os.stat(path).st_mode) == 0o700
        assert os.path.basename(path).startswith(f"accept-order-test-{os.getpid()}-")
    finally:
        os.rmdir(path)
        REAPER.done_directory(path)
