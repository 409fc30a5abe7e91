"""AcceptCounter: the kernel's per-process accept counts (bpftrace) against what the workers counted."""

from __future__ import annotations

import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection

import pytest

from accept_order.core import capabilities
from accept_order.core.processes import FORK, end_processes
from accept_order.probes import accepts, bpftrace_messages
from accept_order.probes.accepts import AcceptCounter, first_error_line, not_loaded_hint, parse_counts, program

CONNECTIONS = 60
WORKERS = 3
IO_TIMEOUT_S = 10.0  # any single wait in these tests; a hang fails instead of blocking the suite

needs_bpftrace = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bpftrace") is None,
    reason="needs root and bpftrace (eBPF tracepoints): "
    + ("not root" if os.geteuid() != 0 else "bpftrace not on PATH (apt-get install bpftrace)"),
)


def _worker(listener: socket.socket, stop_r: int, stop_w: int, report: Connection) -> None:
    """Accept on the shared listener until the stop pipe closes, then report (pid, successful accepts).

    Every worker wakes for every connection (one listener, one readiness), and the losers' accept()
    fails with EAGAIN: those failures must not count, in our tally as in the kernel's (ret < 0)."""
    os.close(stop_w)  # our copy of the write end would keep the pipe from ever reaching EOF
    listener.setblocking(False)
    accepted = 0
    with selectors.DefaultSelector() as sel:
        sel.register(listener, selectors.EVENT_READ)
        sel.register(stop_r, selectors.EVENT_READ)
        while True:
            ready = sel.select(IO_TIMEOUT_S)
            if not ready or any(key.fd == stop_r for key, _ in ready):
                break
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                continue  # another worker took it
            accepted += 1
            with conn:
                conn.settimeout(IO_TIMEOUT_S)
                conn.recv(1)
                conn.sendall(str(os.getpid()).encode())
    report.send((os.getpid(), accepted))


class Workers:
    """WORKERS forked processes accepting on one listening socket, as a pre-fork server's workers do."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(CONNECTIONS)
        self.stop_r, self.stop_w = os.pipe()
        self.pipes = [FORK.Pipe(duplex=False) for _ in range(WORKERS)]
        self.procs = [
            FORK.Process(target=_worker, args=(self.listener, self.stop_r, self.stop_w, w), daemon=True)
            for _, w in self.pipes
        ]
        for proc in self.procs:
            proc.start()
        self.pids = [p.pid for p in self.procs if p.pid is not None]

    def connect(self, n: int) -> dict[int, int]:
        """n connections one after another; each is answered (so accepted) before the next. pid -> count."""
        served: dict[int, int] = {}
        for _ in range(n):
            with socket.create_connection(self.listener.getsockname(), timeout=IO_TIMEOUT_S) as conn:
                conn.sendall(b"x")
                pid = int(conn.recv(32))
                served[pid] = served.get(pid, 0) + 1
        return served

    def finish(self) -> dict[int, int]:
        """Close the stop pipe; every worker reports its own count and exits."""
        os.close(self.stop_w)
        self.stop_w = -1
        counts: dict[int, int] = {}
        for r, _ in self.pipes:
            assert r.poll(IO_TIMEOUT_S), "a worker did not report its accept count"
            pid, n = r.recv()
            counts[pid] = n
        return counts

    def close(self) -> None:
        if self.stop_w >= 0:
            os.close(self.stop_w)
        os.close(self.stop_r)
        end_processes(self.procs)
        self.listener.close()
        for r, w in self.pipes:
            r.close()
            w.close()


@contextmanager
def workers() -> Iterator[Workers]:
    pool = Workers()
    try:
        yield pool
    finally:
        pool.close()


def accept_own(n: int) -> None:
    """n accepts by this (pytest's) process: traffic a pid filter must leave out."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(n)
        for _ in range(n):
            with socket.create_connection(listener.getsockname(), timeout=IO_TIMEOUT_S):
                listener.accept()[0].close()


@needs_bpftrace
def test_counts_equal_each_workers_own_count() -> None:
    with workers() as pool, AcceptCounter(pool.pids) as counter:
        counter.start()
        assert counter.attached, counter.stop().why
        served = pool.connect(CONNECTIONS)
        accept_own(5)  # our own pid is not in the filter
        result = counter.stop()
        own = pool.finish()
    assert result.available, result.why
    assert result.why.startswith(accepts.SOURCE)
    assert sum(own.values()) == CONNECTIONS
    accepted = {pid: n for pid, n in own.items() if n}  # a worker may accept none (who wakes is the kernel's)
    assert accepted == served  # the workers' tally matches who answered each connection
    # exactly: every successful accept, and no failed (EAGAIN) one; every filtered pid is answered, 0 included
    assert set(result.counts) == set(pool.pids)
    assert {pid: n for pid, n in result.counts.items() if n} == accepted
    assert os.getpid() not in result.counts
    print(f"bpftrace attached in {counter.attach_s:.3f} s; counts {result.counts}")


@needs_bpftrace
def test_pid_filter_excludes_other_processes() -> None:
    with workers() as pool, AcceptCounter(pool.pids[:1]) as one, AcceptCounter() as everyone:
        one.start()
        everyone.start()
        pool.connect(CONNECTIONS)
        accept_own(5)
        only_first, unfiltered = one.stop(), everyone.stop()
        own = pool.finish()
    assert only_first.available and unfiltered.available, (only_first.why, unfiltered.why)
    first = pool.pids[0]
    assert only_first.counts == {first: own[first]}  # the other two workers and we are left out
    for pid, n in own.items():
        assert unfiltered.counts.get(pid, 0) == n
    assert unfiltered.counts[os.getpid()] == 5  # the unfiltered counter sees everybody


@needs_bpftrace
def test_filtered_pid_that_accepts_nothing_counts_zero() -> None:
    with AcceptCounter([os.getpid()]) as counter:
        counter.start()
        result = counter.stop()
    assert result == accepts.AcceptCounts({os.getpid(): 0}, True, result.why, empty={}, gaps={})  # none empty, no gaps


@needs_bpftrace
@pytest.mark.parametrize("mounted_before", [True, False], ids=["tracefs-mounted-before", "tracefs-mounted-by-the-run"])
def test_bpftrace_runs_in_its_own_process_group_and_close_ends_it(
    mounted_before: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() without stop() kills and reaps bpftrace, and the result says so, with what the run mounted:
    both as on a machine where tracefs was mounted before and as on one where the run mounts it (here the
    run is made to believe it did, and its unmount does nothing unless it really mounted tracefs)."""
    real_ensure, real_unmount = accepts.ensure_tracefs, accepts.unmount_tracefs
    really_mounted = []

    def ensure() -> tuple[bool, str]:
        ok, note = real_ensure()
        really_mounted.append(note == accepts.MOUNTED)
        return ok, note if mounted_before or not ok else accepts.MOUNTED

    monkeypatch.setattr(accepts, "ensure_tracefs", ensure)
    monkeypatch.setattr(accepts, "unmount_tracefs", lambda: real_unmount() if any(really_mounted) else "")
    counter = AcceptCounter([os.getpid()])
    counter.start(timeout_s=6 * IO_TIMEOUT_S)  # bpftrace compiles and attaches in seconds on a loaded machine
    pid = counter.pid
    assert pid is not None, counter.stop().why
    assert os.getpgid(pid) == pid != os.getpgrp()  # a terminal's Ctrl-C to our group does not reach it
    counter.close()  # without stop(): killed and reaped (the autouse fixture checks none is left)
    assert counter.pid is None
    result = counter.stop()
    assert not result.available
    if any(really_mounted) or not mounted_before:
        unmounted = f"{accepts.MOUNTED} (unmounted after it)"
        # a tracefs this test really mounted may be kept busy by another tracer: then the reason says so
        busy = any(really_mounted) and result.why.startswith(f"closed before stop(); {accepts.MOUNTED}; it is still")
        assert busy or result.why == f"closed before stop(); {unmounted}"
    else:
        assert result.why == "closed before stop()"


@needs_bpftrace
def test_program_that_fails_to_load_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accepts, "program", lambda pids: "tracepoint:syscalls:no_such_event { @ = count(); }")
    with AcceptCounter() as counter:
        counter.start()
        result = counter.stop()
    assert not result.available
    assert result.why.startswith("program failed to load"), result.why
    assert "RLIMIT_MEMLOCK" not in result.why


def test_no_bpftrace_is_unavailable_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accepts.os, "geteuid", lambda: 0)
    monkeypatch.setattr(accepts.shutil, "which", lambda name: None)
    with AcceptCounter() as counter:
        counter.start()
        assert counter.pid is None
        result = counter.stop()
    assert result == accepts.AcceptCounts({}, False, result.why)
    assert "bpftrace not found" in result.why


def test_not_root_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accepts.os, "geteuid", lambda: 1000)
    with AcceptCounter() as counter:
        counter.start()
        result = counter.stop()
    assert not result.available and "not root" in result.why


def test_program_filters_pids_in_the_kernel() -> None:
    assert "/(args->ret >= 0 || args->ret == -11)/" in program(None)  # accepts, and those that came back empty
    assert "(pid == 12 || pid == 34)" in program([12, 34])
    assert "(pid < 0)" in program([])  # an empty filter counts nobody rather than everybody


def test_parse_counts_needs_the_whole_framed_block() -> None:
    out = b"Attaching 4 probes...\naccept-order counts begin\n@[12]: 3\n@[7]: 40\n\naccept-order counts end\n"
    assert parse_counts(out) == {12: 3, 7: 40}
    assert parse_counts(out.replace(b"accept-order counts end", b"")) is None
    assert parse_counts(b"@[12]: 3\n") is None


def test_first_error_line_skips_the_memlock_warning() -> None:
    err = (
        b"ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK for bpftrace. ...\n"
        b"stdin:1:1-30: ERROR: tracepoint not found: syscalls:no_such_event\n"
    )
    assert first_error_line(err) == "stdin:1:1-30: ERROR: tracepoint not found: syscalls:no_such_event"
    assert first_error_line(b"") == "no message"


# In a mount namespace of its own (the host's tracefs is never touched): tracefs unmounted there, then one
# counted accept; the counter mounts tracefs for the run and must leave it unmounted, as it found it.
PRIVATE_MOUNTS = """
import os, socket, subprocess, sys
from accept_order.probes.accepts import TRACEFS, AcceptCounter
subprocess.run(["umount", TRACEFS], check=False, capture_output=True)
assert not os.path.isdir(os.path.join(TRACEFS, "events")), "tracefs is still mounted in the namespace"
with socket.socket() as listener:
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    with AcceptCounter([os.getpid()]) as counter:
        counter.start()
        with socket.create_connection(listener.getsockname()):
            listener.accept()[0].close()
        counts = counter.stop()
print(counts.counts.get(os.getpid()), counts.why)
print("mounted after:", os.path.isdir(os.path.join(TRACEFS, "events")))
"""


@needs_bpftrace
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_tracefs_mounted_for_a_run_is_unmounted_after_it() -> None:
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", PRIVATE_MOUNTS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    counted, why = done.stdout.splitlines()[0].split(" ", 1)
    assert counted == "1", done.stdout
    assert f"mounted tracefs at {accepts.TRACEFS} for the run (unmounted after it)" in why
    assert done.stdout.splitlines()[1] == "mounted after: False"


def _locked_memory(pid: int) -> str:
    """The soft "Max locked memory" of a process, as /proc/PID/limits says it."""
    with open(f"/proc/{pid}/limits") as f:
        return next(line.split()[3] for line in f if line.startswith("Max locked memory"))


@needs_bpftrace
def test_bpftrace_gets_all_the_locked_memory_it_may_have() -> None:
    """Under a low `ulimit -l` (soft), bpftrace runs with the hard limit, or unlimited where we may."""
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if hard != resource.RLIM_INFINITY and hard <= 64 * 1024:
        pytest.skip(f"the hard locked-memory limit is already low ({hard} bytes): nothing to raise to")
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 * 1024, hard))
    try:
        with AcceptCounter([os.getpid()]) as counter:
            counter.start()
            assert counter.pid is not None and counter.attached
            got = _locked_memory(counter.pid)
    finally:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))
    assert got in ("unlimited", str(hard)), got


def test_a_memlock_failure_is_named_only_when_it_can_be_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    # asked as root holding every capability in the initial user namespace: a process lacking one, or holding them
    # in another namespace, is told of that instead (tests/test_bpftrace_refused_capabilities.py, _user_namespace.py)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: (1 << 41) - 1)
    monkeypatch.setattr(bpftrace_messages, "in_user_namespace", lambda: False)
    warning = b"ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK for bpftrace. ...\n"
    hint = not_loaded_hint(warning + b"ERROR: failed to create map: Operation not permitted\n")
    assert "could not raise its locked-memory limit" in hint and "kernels before 5.11" in hint
    assert not_loaded_hint(warning) != ""  # nothing else said: the limit is the likely cause
    assert not_loaded_hint(warning + b"stdin:1:1-30: ERROR: tracepoint not found: syscalls:x\n") == ""
    assert not_loaded_hint(b"ERROR: failed to create map: Operation not permitted\n") == ""
