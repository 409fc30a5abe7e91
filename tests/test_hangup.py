"""A hang-up (SIGHUP: the terminal closed, the ssh session dropped) mid-run ends it like SIGTERM does.

Exit 129, the partial result saved with --json and marked interrupted, and nothing left: no process the
run started, no private directory. The terminal case is the real one: the tool runs on a pseudo-terminal
it has as its controlling terminal, and the test closes the terminal's other end, so the kernel sends the
hang-up and every later write to the terminal fails (the result must still be saved). A run started with
SIGHUP ignored (nohup) is left to finish.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import pty
import signal
import subprocess
import sys
import tempfile
import termios
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from conftest import child_processes, cpu_of, gone, wait_for

from accept_order.servers.registry import server_kind

START_TIMEOUT_S = 20.0


def _directories(tool_pid: int) -> list[str]:
    return glob.glob(os.path.join(tempfile.gettempdir(), f"accept-order-*-{tool_pid}-*"))


def _on_a_terminal(slave: int) -> Callable[[], None]:
    def setup() -> None:  # a session of its own whose controlling terminal is the pty: as under ssh
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return setup


@pytest.fixture
def tool() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
        proc.wait()


def _mid_run(proc: subprocess.Popen[bytes], processes: int, cpu_s: float = 0.2) -> list[int]:
    """Once `processes` descendants (server, drivers) exist and have used `cpu_s` CPU: the run is driving. Their
    pids, the reaper's left out (it goes when its pipe closes; the private directory check covers it)."""

    def descendants(listed: Callable[[], list[psutil.Process]]) -> list[int]:
        try:
            return [p.pid for p in listed() if "accept_order/core/reaper.py" not in " ".join(p.cmdline())]
        except psutil.Error:
            return []

    # polled from the kernel's children lists (cheap); the pids that must end are then psutil's, every one (the
    # kernel's lists may skip a child while another is reaped)
    wait_for(
        lambda: descendants(lambda: child_processes(proc.pid, recursive=True)),
        lambda kids: len(kids) >= processes,
        START_TIMEOUT_S,
        f"{processes} processes",
    )
    pids = wait_for(
        lambda: descendants(lambda: psutil.Process(proc.pid).children(recursive=True)),
        lambda kids: len(kids) >= processes,  # at once, unless one of them changed while psutil read them
        START_TIMEOUT_S,
        f"{processes} processes",
    )
    wait_for(lambda: cpu_of(pids), lambda cpu: cpu > cpu_s, START_TIMEOUT_S, "the load to run")
    return pids


def _check_ended(proc: subprocess.Popen[bytes], out: Path, pids: list[int]) -> None:
    assert proc.wait(20) == 129
    wait_for(lambda: gone(pids), bool, 5.0, "every process of the run to end")
    assert _directories(proc.pid) == []
    document = json.loads(out.read_text())
    assert document["kind"] == "latency"
    assert document["interrupted"] is True and sum(document["served"]) > 0


def test_closing_the_terminal_keeps_the_partial_result(tool: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    out = tmp_path / "partial.json"
    master, slave = pty.openpty()
    try:
        argv = [sys.executable, "-m", "accept_order", "latency", "-w", "2", "--duration", "60s", "-c", "8"]
        proc = subprocess.Popen(
            [*argv, "--json", str(out)], stdin=slave, stdout=slave, stderr=slave, preexec_fn=_on_a_terminal(slave)
        )
        tool.append(proc)
        os.close(slave)
        pids = _mid_run(proc, 4)  # 2 workers, 2 drivers
    finally:
        os.close(master)  # the hang-up: the kernel signals the session; writes to the terminal now fail (EIO)
    _check_ended(proc, out, pids)


@pytest.mark.parametrize("group", [False, True], ids=["kill-pid", "kill-group"])
def test_sighup_to_a_launched_nginx_run(tool: list[subprocess.Popen[bytes]], tmp_path: Path, group: bool) -> None:
    missing = server_kind("nginx").missing()
    if missing:
        pytest.skip(missing)
    out = tmp_path / "partial.json"
    argv = [sys.executable, "-m", "accept_order", "latency", "--server", "nginx", "-w", "2", "--duration", "60s"]
    proc = subprocess.Popen(
        [*argv, "-c", "8", "--json", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    tool.append(proc)
    pids = _mid_run(proc, 5)  # nginx's master and 2 workers, 2 drivers
    if group:  # what a shell does to its jobs when its terminal goes
        os.killpg(proc.pid, signal.SIGHUP)
    else:
        proc.send_signal(signal.SIGHUP)
    assert proc.stderr is not None
    assert proc.stderr.read().decode().splitlines()[-1] == "accept-order: error: hung up; all workers stopped"
    _check_ended(proc, out, pids)


def test_a_run_started_ignoring_sighup_outlives_the_hang_up(tool: list[subprocess.Popen[bytes]]) -> None:
    def nohup() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    # An open loop at a modest rate: the hang-up needs a run under way for a while, not one that takes every CPU
    # for its 3 s (a closed loop did: ~5 CPU-s, now ~1)
    argv = [sys.executable, "-m", "accept_order", "latency", "-w", "2", "--duration", "3s", "-c", "8", "--rate", "500"]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=nohup, start_new_session=True
    )
    tool.append(proc)
    _mid_run(proc, 4, cpu_s=0.02)
    os.killpg(proc.pid, signal.SIGHUP)  # the whole job, workers and drivers included
    assert proc.wait(60) == 0
    assert proc.stderr is not None and proc.stderr.read() == b""
