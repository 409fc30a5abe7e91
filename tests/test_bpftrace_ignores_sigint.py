"""A bpftrace that never runs its END block after SIGINT: bpftrace 0.17 (Debian's) sets its exit flag and goes on
polling when the signal lands outside its epoll_wait (probes/bpftrace_readings.py); twice in fresh-clone CI runs it
printed nothing within 30 s of SIGINT. The counter then waited 5 s, killed it, and the counts were lost: 'served per
worker: not known' in `latency --attach`, the last interval short in `observe`. Now its last periodic reading
stands, and the result says so in one line; bpftrace is killed and reaped, within a bounded wait.

The fake bpftrace here prints what the real one prints for the counter's program (its attached notice, its framed
and stamped readings), then, on SIGINT, stops printing and ignores SIGINT, SIGUSR1 and SIGTERM: only SIGKILL ends
it."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest
from conftest import wait_for

from accept_order.probes import accepts
from accept_order.probes.accept_watch import AcceptWatch
from accept_order.probes.accepts import AcceptCounter

# prints `body` in a reading every 50 ms (at most `readings` of them; None: until SIGINT), then ignores all but SIGKILL
FAKE = """#!{python}
import signal, sys, time
stuck = []
signal.signal(signal.SIGINT, lambda *_: stuck.append(True))
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("Attaching 3 probes...", flush=True)
print("__BPFTRACE_NOTIFY_PROBES_ATTACHED", file=sys.stderr, flush=True)
printed = 0
while not stuck and ({readings} is None or printed < {readings}):
    print(f"accept-order reading at {{time.monotonic_ns()}}\\n{body}\\n\\naccept-order reading end", flush=True)
    printed += 1
    time.sleep(0.05)
while True:
    signal.pause()
"""

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the counter runs bpftrace only as root")
# the longest stop() may take by design: a fresh reading, END, bpftrace's exit, its reaping after SIGKILL
BOUND_S = accepts.STOP_TIMEOUT_S + getattr(accepts, "FRESH_S", 0) + getattr(accepts, "EXIT_S", 0) + 10
WATCHED = "@ok[{pid}, {pid}]: 7\n@empty[{pid}, {pid}]: 2\n@on[{pid}, {pid}, 4]: 7"


def fake_bpftrace(monkeypatch: pytest.MonkeyPatch, where: Path, body: str, readings: int | None = None) -> None:
    fake = where / "bpftrace"
    fake.write_text(FAKE.format(python=sys.executable, body=body.replace("\n", "\\n"), readings=readings))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{where}{os.pathsep}{os.environ.get('PATH', '')}")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@needs_root
def test_the_last_reading_stands_when_end_never_comes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    me = os.getpid()
    fake_bpftrace(monkeypatch, tmp_path, f"@[{me}]: 3")
    with AcceptCounter([me]) as counter:
        counter.start()
        pid = counter.pid
        assert pid is not None and counter.attached, counter.stop().why
        began = time.monotonic()
        counts = counter.stop()
        took = time.monotonic() - began
    assert took < BOUND_S, took
    assert counter.pid is None and gone(pid)  # killed and reaped (the autouse fixture checks no child is left)
    assert counts.available, counts.why
    assert counts.counts == {me: 3}, counts
    said = "bpftrace did not run its END block within 5 s of SIGINT (it was killed): the counts are its last "
    assert counts.short.startswith(f"{said}periodic reading, taken "), counts.short
    assert counts.short.endswith(" s after the counted window closed"), counts.short  # the window's every accept
    assert counts.why.endswith(f"; {counts.short}"), counts.why  # what the report prints and the result keeps


@needs_root
def test_a_reading_older_than_the_window_says_what_it_misses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """bpftrace stuck before the window closed (its readings stopped): its last one stands, said to be short."""
    me = os.getpid()
    fake_bpftrace(monkeypatch, tmp_path, f"@[{me}]: 2", readings=1)
    with AcceptCounter([me]) as counter:
        counter.start()
        assert counter.attached, counter.stop().why
        # the one reading is read before the window closes: stop() then waits for a later one that never comes
        wait_for(lambda: counter.read_more(1.0), lambda _: b"reading end" in counter._out, BOUND_S, "the reading")
        counts = counter.stop()
    assert counts.available and counts.counts == {me: 2}, counts
    assert " s before the counted window closed (accepts after it are not counted; none came in the " in counts.short


@needs_root
def test_observes_last_interval_keeps_the_last_reading(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """observe's watch: the totals are the last reading's, as of when it was taken, with the same one line."""
    me = os.getpid()
    fake_bpftrace(monkeypatch, tmp_path, WATCHED.format(pid=me))
    with AcceptWatch([me]) as watch:
        watch.start()
        pid = watch.pid
        assert pid is not None and watch.attached, watch.finish()[1].why
        began = time.monotonic()
        totals, counts = watch.finish()
    assert watch.pid is None and gone(pid)
    assert counts.available and counts.short, counts
    assert totals.accepted == {(me, me): 7} and totals.empty == {(me, me): 2} and totals.on == {(me, me, 4): 7}
    assert watch.ended is not None and watch.ended >= began  # the reading taken after the window closed
    assert counts.why.endswith(counts.short), counts.why
