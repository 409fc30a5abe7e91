"""A bpftrace that never runs its END block after SIGINT: bpftrace 0.17 (Debian's) sets its exit flag and goes on
polling when the signal lands outside its epoll_wait (probes/bpftrace_readings.py); twice in fresh-clone CI runs it
printed nothing within 30 s of SIGINT. The counter then waited 5 s, killed it, and the counts were lost: 'served per
worker: not known' in `latency --attach`, the last interval short in `observe`. Now its last periodic reading
stands, and the result says so in one line; bpftrace is killed and reaped, within a bounded wait.

The fake bpftrace here prints what the real one prints for the counter's program (its attached notice, its framed
and stamped readings), then, on SIGINT, stops printing and ignores SIGINT, SIGUSR1 and SIGTERM: only SIGKILL ends
it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli, wait_for

from accept_order.probes import accepts
from accept_order.probes.accept_watch import AcceptWatch
from accept_order.probes.accepts import SOURCE, AcceptCounter

# prints `body` (each line once per pid the program filters on: {pid}) in a reading every 50 ms (at most `readings`
# of them; None: until SIGINT), then ignores all but SIGKILL
FAKE = """#!{python}
import re, signal, sys, time
stuck = []
signal.signal(signal.SIGINT, lambda *_: stuck.append(True))
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids = dict.fromkeys(re.findall(r"pid == (\\d+)", sys.argv[-1]))
body = "\\n".join(line.format(pid=pid) for pid in pids for line in {body!r}.splitlines())
print("Attaching 3 probes...", flush=True)
print("__BPFTRACE_NOTIFY_PROBES_ATTACHED", file=sys.stderr, flush=True)
printed = 0
while not stuck and ({readings} is None or printed < {readings}):
    print(f"accept-order reading at {{time.monotonic_ns()}}\\n{{body}}\\n\\naccept-order reading end", flush=True)
    printed += 1
    time.sleep(0.05)
while True:
    signal.pause()
"""

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the counter runs bpftrace only as root")
# the longest stop() may take by design: a fresh reading, END, bpftrace's exit, its reaping after SIGKILL
BOUND_S = accepts.STOP_TIMEOUT_S + getattr(accepts, "FRESH_S", 0) + getattr(accepts, "EXIT_S", 0) + 10
WATCHED = "@ok[{pid}, {pid}]: 7\n@empty[{pid}, {pid}]: 2\n@on[{pid}, {pid}, 4]: 7"
COUNTED = "@[{pid}]: 3"


def fake_bpftrace(monkeypatch: pytest.MonkeyPatch, where: Path, body: str, readings: int | None = None) -> None:
    on_path(monkeypatch, where, FAKE.format(python=sys.executable, body=body, readings=readings))


def on_path(monkeypatch: pytest.MonkeyPatch, where: Path, script: str) -> None:
    """`script` as the bpftrace the counter finds first on PATH."""
    fake = where / "bpftrace"
    fake.write_text(script)
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
    fake_bpftrace(monkeypatch, tmp_path, COUNTED)
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
    assert "reading_before_s" not in counts.evidence()  # nothing after the window is missing


@needs_root
def test_a_reading_older_than_the_window_says_what_it_misses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """bpftrace stuck before the window closed (its readings stopped): its last one stands, said to be short."""
    me = os.getpid()
    fake_bpftrace(monkeypatch, tmp_path, "@[{pid}]: 2", readings=1)
    with AcceptCounter([me]) as counter:
        counter.start()
        assert counter.attached, counter.stop().why
        # the one reading is read before the window closes: stop() then waits for a later one that never comes
        wait_for(lambda: counter.read_more(1.0), lambda _: b"reading end" in counter._out, BOUND_S, "the reading")
        counts = counter.stop()
    assert counts.available and counts.counts == {me: 2}, counts
    assert (
        " s before the counted window closed (the accepts since are not counted; no later reading came in the "
        in counts.short
    )
    # what the result keeps of it: latency's report then blames the unplaced accepts on no worker (test_attached_...)
    before = f"{counts.reading_before_s:.2f} s before the counted window closed"
    assert counts.reading_before_s > 0 and before in counts.short, (counts.reading_before_s, counts.short)
    assert counts.evidence()["reading_before_s"] == counts.reading_before_s


@needs_root
def test_without_any_reading_the_counts_are_unavailable_and_said_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """bpftrace stuck before its first reading: nothing stands, the result says why, and it is killed and reaped."""
    fake_bpftrace(monkeypatch, tmp_path, COUNTED, readings=0)
    with AcceptCounter([os.getpid()]) as counter:
        counter.start()
        pid = counter.pid
        assert pid is not None and counter.attached, counter.stop().why
        counts = counter.stop()
    assert counter.pid is None and gone(pid)
    assert not counts.available and counts.counts == {}, counts
    said = "bpftrace did not run its END block within 5 s of SIGINT (it was killed) and printed no periodic reading"
    assert counts.why == said, counts.why


@needs_root
def test_observes_last_interval_keeps_the_last_reading(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """observe's watch: the totals are the last reading's, as of when it was taken, with the same one line."""
    me = os.getpid()
    fake_bpftrace(monkeypatch, tmp_path, WATCHED)
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


@contextlib.contextmanager
def http_server(port: int, folder: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Python's http.server on `port`, serving `folder`, once it answers a request (its replies name no worker);
    ended after."""
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                conn.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
                return conn.recv(12).startswith(b"HTTP/1.0 200")
        except OSError:
            return False

    try:
        wait_for(answers, bool, 30.0, "http.server answering")
        yield server
    finally:
        server.terminate()
        server.wait(10)


@needs_root
def test_latency_attached_says_its_counts_are_the_last_reading(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, free_port: int
) -> None:
    """`latency --attach` to a server whose replies name no worker: the kernel's count per worker stands, from the
    last reading, and the report and the result say so in the same line."""
    fake_bpftrace(monkeypatch, tmp_path, COUNTED)
    with http_server(free_port, tmp_path) as server:
        out = tmp_path / "latency.json"
        args = ["latency", "--attach", str(server.pid), "--port", str(free_port), "--protocol", "http"]
        result = run_cli([*args, "-c", "1", "--duration", "1s", "--json", str(out)], columns=400)
    assert result.exit_code == 0, result.output
    kept = json.loads(out.read_text())["evidence"]["accept_counts"]
    assert kept["available"] and kept["counts"] == {str(server.pid): 3}, kept
    said = "bpftrace did not run its END block within 5 s of SIGINT (it was killed): the counts are its last periodic"
    assert said in kept["why"], kept
    report = " ".join(result.output.split())  # the line as printed, however it wrapped
    assert f"served per worker: accepts counted by the kernel ({SOURCE}; {said}" in report, result.output


@needs_root
def test_observe_says_its_last_interval_is_the_last_reading(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, free_port: int
) -> None:
    """`observe`: the last interval closes on bpftrace's last reading, and the result's notes say so."""
    fake_bpftrace(monkeypatch, tmp_path, WATCHED)
    with http_server(free_port, tmp_path) as server:
        out = tmp_path / "observe.json"
        args = ["observe", str(server.pid), "--duration", "1s", "--interval", "0.5s", "--json", str(out)]
        result = run_cli(args, columns=400)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    said = "bpftrace did not run its END block within 5 s of SIGINT (it was killed): the counts are its last periodic"
    assert any(note.startswith(said) for note in doc["notes"]), doc["notes"]
    assert doc["traced"] and [w["accepts"] for w in doc["workers"]] == [7], doc["workers"]  # the reading's count
    assert said in " ".join(result.output.split()), result.output


# prints 2 MiB of readings at once (a pipe holds 64 KiB), says so in a file, then runs END on SIGINT as bpftrace does
TALKATIVE = """#!{python}
import pathlib, re, signal, sys, time
stop = []
signal.signal(signal.SIGINT, lambda *_: stop.append(True))
signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # bpftrace's handler prints its maps
pid = re.findall(r"pid == (\\d+)", sys.argv[-1])[0]
print("__BPFTRACE_NOTIFY_PROBES_ATTACHED", file=sys.stderr, flush=True)
frame = f"accept-order reading at {{time.monotonic_ns()}}\\n@[{{pid}}]: 5\\n\\naccept-order reading end\\n"
sys.stdout.write(frame * (2 * 1024 * 1024 // len(frame)))
sys.stdout.flush()
pathlib.Path({written!r}).touch()
while not stop:
    time.sleep(0.05)
print(f"accept-order counts begin\\n@[{{pid}}]: 6\\n\\naccept-order counts end", flush=True)
"""


@needs_root
def test_output_is_read_as_it_comes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A bpftrace that prints more than its pipe holds before stop() is not left blocked on it (its readings would
    stop, and so would its poll loop), and what the counter keeps meanwhile is the last reading, not all of them."""
    written = tmp_path / "written"
    on_path(monkeypatch, tmp_path, TALKATIVE.format(python=sys.executable, written=str(written)))
    me = os.getpid()
    with AcceptCounter([me]) as counter:
        counter.start()
        assert counter.attached, counter.stop().why
        wait_for(written.exists, bool, 60.0, "the fake's 2 MiB written")
        kept = len(counter._out)
        counts = counter.stop()
    assert kept < 1024, kept  # one reading, not 2 MiB of them
    assert counts.available and counts.counts == {me: 6} and counts.short == "", counts  # END's, when it came


# on SIGINT: an error, its stdout closed, its exit a moment later (as bpftrace's probes detach after its pipe's end)
EXITS = """#!{python}
import os, signal, sys, time
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(True))
print("__BPFTRACE_NOTIFY_PROBES_ATTACHED", file=sys.stderr, flush=True)
while not got:
    time.sleep(0.05)
print('ERROR: Could not print map with ident "@"', file=sys.stderr, flush=True)
os.close(1)
time.sleep(0.5)
os._exit(3)
"""


@needs_root
def test_one_that_exits_on_its_own_is_said_to_have_exited(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Its output ended before it could be reaped: it exited with its error, it was not 'killed after 5 s'."""
    on_path(monkeypatch, tmp_path, EXITS.format(python=sys.executable))
    with AcceptCounter([os.getpid()]) as counter:
        counter.start()
        assert counter.attached, counter.stop().why
        counts = counter.stop()
    said = 'bpftrace exited (3) without its END block\'s counts: ERROR: Could not print map with ident "@"'
    assert not counts.available and counts.why == said, counts.why
