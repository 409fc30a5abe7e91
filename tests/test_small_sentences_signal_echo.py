"""`timeout -s INT 1.5 accept-order ...` (without --foreground) signals the tool, then its whole process group,
the tool included: one SIGINT delivered twice, microseconds apart (milliseconds when timeout itself waits for a
CPU). The latch counted the second as a second Ctrl-C ("stop now") and left the report out in 2 of 3 runs.
A signal of the same kind within ECHO_S of the one before is that one again; a person's second Ctrl-C, 100 ms
or more later, still stops at once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import child_processes, cpu_of, gone, wait_for

from accept_order.core import signals


def test_the_same_sigint_twice_ends_everything_and_keeps_the_file(tmp_path: Path) -> None:
    """A real process given one SIGINT twice, 5 ms apart. Whether the report is printed depends on when its
    handler ran (within ECHO_S of the first: an echo; a busy machine can delay it past that, as it can a
    person's second Ctrl-C), so that is asserted where the clock is the test's (below), not here: here, what
    holds either way (one status, no traceback, the file saved as interrupted, every child gone)."""
    out = tmp_path / "echo.json"
    cmd = [sys.executable, "-m", "accept_order", "latency", "-w", "2", "--duration", "30s", "-c", "8"]
    proc = subprocess.Popen(
        [*cmd, "--json", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
    )
    try:
        me = psutil.Process(proc.pid)
        wait_for(lambda: child_processes(proc.pid), lambda kids: len(kids) >= 4, 20, "the workers and the drivers")
        pids = [p.pid for p in me.children(recursive=True)]
        wait_for(lambda: cpu_of(pids), lambda cpu: cpu > 0.2, 20, "the load to run")
        proc.send_signal(signal.SIGINT)
        # the group's copy, as timeout(1) sends it when it waited a few ms for a CPU between its two kill()s:
        # the stimulus, not synchronisation (the first one's handler has run by then, unless the tool itself
        # waited for a CPU as long: then the two merge and the test passes as it would with the fix)
        time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        stdout, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert json.loads(out.read_text())["interrupted"] is True
    assert wait_for(lambda: gone(pids), bool, 5, "every child to be gone")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The latch's clock, moved by the test."""
    now = [1000.0]
    monkeypatch.setattr(signals.time, "monotonic", lambda: now[0])
    return now


def test_an_echo_is_not_counted_a_second_ctrl_c_is(clock: list[float]) -> None:
    with pytest.raises(KeyboardInterrupt), signals.deferred():  # outside the CLI: its own latch, held
        signal.raise_signal(signal.SIGINT)
        clock[0] += signals.ECHO_S / 10  # the group's copy of the same SIGINT
        signal.raise_signal(signal.SIGINT)
        assert signals.received() == 1
        clock[0] += 0.15  # a person pressing Ctrl-C again
        signal.raise_signal(signal.SIGINT)
        assert signals.received() == 2
        clock[0] += signals.ECHO_S / 10  # another kind right after: not the same signal again
        signal.raise_signal(signal.SIGTERM)
        assert signals.received() == 3
