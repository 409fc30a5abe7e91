"""bpftrace's stop waits for a fresh reading only where its counts are read.

stop() waits (up to FRESH_S) for a periodic reading taken after it began, so that the counts are whole should END
never come: up to a READING_MS tick, 0.13 s a stop on average. `run`'s per-connection accept log reads only whether
counting worked, never the counts, and paid it at every run's end (AcceptLog.stop() 0.57 s median of 5, 0.30 s
without, load 4-5 on 2 vCPUs). Asked with a fake bpftrace that prints one reading and no other, FRESH_S made far
longer than any test: a stop that waited for a fresh reading would not return; and of the real commands, which stop
is asked to wait (test_bpftrace_ignores_sigint: where the counts are read, the reading that stands is a fresh one)."""

from __future__ import annotations

import inspect
import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from serve_process import serving

from accept_order.probes import accepts
from accept_order.probes.accept_log import AcceptLog
from accept_order.probes.accepts import AcceptCounter, AcceptCounts

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the counter runs bpftrace only as root")
NEVER_S = 3600.0  # FRESH_S in these tests: a stop that waits for a fresh reading does not return within them
RETURNS_S = 60.0  # what a stop that does not wait may take on a busy machine (SIGINT, END, bpftrace's exit)

# attached; one reading of 1 accept; then, on SIGINT, its END block (the counts framed) and exit, as bpftrace does
FAKE = """#!{python}
import signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGINT}})  # sigwait's to take
print("Attaching 2 probes...", flush=True)
print("__BPFTRACE_NOTIFY_PROBES_ATTACHED", file=sys.stderr, flush=True)
print("accept-order reading at 1\\n@[{pid}]: 1\\n\\naccept-order reading end", flush=True)
signal.sigwait({{signal.SIGINT}})
print("accept-order counts begin\\n@[{pid}]: 1\\naccept-order counts end", flush=True)
"""


@needs_root
def test_the_accept_log_stops_without_waiting_for_a_fresh_reading(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "bpftrace"
    fake.write_text(FAKE.format(python=sys.executable, pid=os.getpid()))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(accepts, "FRESH_S", NEVER_S)
    got: list[AcceptCounts] = []
    with AcceptLog([os.getpid()]) as log:
        log.start()
        assert log.attached, log.stop().why
        stopping = threading.Thread(target=lambda: got.append(log.stop(counts_used=False)), daemon=True)
        stopping.start()
        stopping.join(RETURNS_S)
        assert not stopping.is_alive(), "stop() waited for a reading that never comes"
    (counts,) = got
    assert counts.available and counts.counts == {os.getpid(): 1} and not counts.short, counts


@needs_root
@pytest.mark.parametrize(
    ("command", "stopped"),
    [
        (["run", "-n", "3"], [("AcceptLog", False)]),  # the per-connection log: whether each accept was read
        (["latency", "-n", "20", "-c", "2"], [("AcceptCounter", True)]),  # the counts are the served column
    ],
)
def test_only_a_stop_whose_counts_are_read_waits(
    command: list[str], stopped: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The commands that trace an attached server's accepts (serve --mode blocking's replies name no worker: the
    kernel says who accepted), each stop as it was asked."""
    asked: list[tuple[str, bool]] = []
    stop = AcceptCounter.stop

    def spied(self: AcceptCounter, *args: Any, **kwargs: Any) -> AcceptCounts:
        called = inspect.signature(stop).bind(self, *args, **kwargs)
        called.apply_defaults()  # a stop asked without it: as stop() takes it
        asked.append((type(self).__name__, called.arguments["counts_used"]))
        return stop(self, *args, **kwargs)

    monkeypatch.setattr(AcceptCounter, "stop", spied)
    with serving(tmp_path / "tally.json", 2) as server:
        result = run_cli([*command, "--attach", str(server.proc.pid), "--port", str(server.port)])
        server.tally()
    assert result.exit_code == 0, result.output
    assert asked[: len(stopped)] == stopped and set(asked) == set(stopped), asked  # stop() is idempotent: asked again
