"""Two signals in quick succession (a user pressing Ctrl-C twice, or Ctrl-C then a SIGTERM from a script),
or one signal to the whole process group, during a long latency run: never a hang, never a child left
behind, the *first* signal decides the exit status, and the partial result is written, marked
interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from conftest import child_processes, cpu_of, gone, wait_for

PAIRS = [
    (signal.SIGINT, signal.SIGINT),
    (signal.SIGINT, signal.SIGTERM),
    (signal.SIGTERM, signal.SIGINT),
    (signal.SIGTERM, signal.SIGTERM),
]
EXPECTED = {signal.SIGINT: 130, signal.SIGTERM: 143}


def _pending(pid: int) -> int:
    """The signals pending for the whole process (ShdPnd in /proc/PID/status), as a bit mask."""
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1], 16) for line in status if line.startswith("ShdPnd:"))


def interrupt_latency(
    out: Path, workers: int, send: Callable[[subprocess.Popen[str]], None], own_group: bool = False
) -> tuple[int, str, list[int]]:
    """Start a 30 s latency run, wait until it is driving, `send` its signals; (exit status, stderr, pids
    of the children it had)."""
    cmd = [sys.executable, "-m", "accept_order", "latency", "-w", str(workers), "--duration", "30s", "-c", "20"]
    proc = subprocess.Popen(
        [*cmd, "--json", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=own_group,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
    )
    try:
        me = psutil.Process(proc.pid)
        # the workers and 2 drivers: the load is running once all exist ...
        wait_for(
            lambda: child_processes(proc.pid), lambda kids: len(kids) >= workers + 2, 20, "the workers and the drivers"
        )
        pids = [p.pid for p in me.children(recursive=True)]
        # ... and has been driving for a while (its processes used CPU), so there is a result to keep.
        wait_for(lambda: cpu_of(pids), lambda cpu: cpu > 0.2, 20, "the load to run")
        send(proc)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err, pids


def check_partial(out: Path, pids: list[int]) -> None:
    assert wait_for(lambda: gone(pids), bool, 5, "every child to be gone")
    document = json.loads(out.read_text())
    assert document["kind"] == "latency"
    assert document["interrupted"] is True and sum(document["served"]) > 0


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=lambda s: signal.Signals(s).name)
def test_two_signals_during_latency(tmp_path: Path, first: int, second: int) -> None:
    def twice(proc: subprocess.Popen[str]) -> None:
        proc.send_signal(first)
        # the second once the kernel has handed the first to the tool (no longer pending for the process): sent
        # while both were pending, a thread of the tool could take the second before another took the first,
        # and "which came first" would be the scheduler's (seen once on a busy CI run: 143 for SIGINT-SIGTERM)
        wait_for(lambda: _pending(proc.pid), lambda mask: not mask & (1 << (first - 1)), 10, "the first signal taken")
        time.sleep(0.01)  # then 10 ms more: a double Ctrl-C, not synchronisation
        proc.send_signal(second)

    out = tmp_path / "partial.json"
    # its own process group, as a shell's job is: there a second signal of the same kind is a second Ctrl-C
    # however soon it comes (where the tool does not lead its group, one within ECHO_S is taken for the
    # group's copy of the first: core/signals.py)
    status, err, pids = interrupt_latency(out, 4, twice, own_group=True)
    assert status == EXPECTED[first], err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("accept-order: error: ")
    check_partial(out, pids)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_the_whole_process_group_keeps_the_partial_result(tmp_path: Path, signum: int) -> None:
    """timeout(1), systemd and a terminal's Ctrl-C signal every process of the group: workers and drivers
    leave the stopping to accept-order, which keeps what was measured."""
    out = tmp_path / "partial.json"
    status, err, pids = interrupt_latency(out, 2, lambda proc: os.killpg(proc.pid, signum), own_group=True)
    assert status == EXPECTED[signum], err
    check_partial(out, pids)


def test_ctrl_c_during_a_later_run_is_still_ctrl_c(tmp_path: Path) -> None:
    """Workers stopped at the end of the first run get SIGTERM; that must not pass for the supervisor's own
    signal (a child inherits the supervisor's signal wakeup fd unless it drops it), so a Ctrl-C during the
    second run still exits 130, not 143."""
    out = tmp_path / "partial.json"
    cmd = [sys.executable, "-m", "accept_order", "latency", "--modes", "epoll,blocking", "-w", "2"]
    proc = subprocess.Popen(
        # an open loop at a low rate: each run lasts its --duration whatever the machine's load, and a second run
        # that is not yet over when the test sees its processes (a 1 s closed loop had ended unseen at load 17)
        [*cmd, "--duration", "6s", "--rate", "200", "--json", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
    )
    try:
        first = wait_for(
            lambda: {p.pid for p in child_processes(proc.pid)}, lambda kids: len(kids) >= 4, 20, "the first run"
        )
        # the second run: a new set of workers and drivers (the first run's workers have had their SIGTERM)
        wait_for(
            lambda: {p.pid for p in child_processes(proc.pid)},
            lambda kids: len(kids) >= 4 and not kids & first,
            20,
            "run two",
        )
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "terminated" not in err
