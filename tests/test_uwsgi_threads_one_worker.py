"""Review RI of 2498a05 (and of its cost, at the end): inspect gives a busy thread of a many-threaded process an epoll
of its process that watches the listener (experiments/inspect/loops.py), which holds where each thread runs a loop
(HAProxy, h2o). uWSGI's --threads each have such an epoll too, but take their process's mutex before waiting in it:
one thread of a process waits, the others serve or sleep on the mutex. Given their epolls while busy, 2 processes of
4 threads under wrk read 3 to 5 workers where 2 take part. No sample of a look here may take a running thread for a
waiter, and some look must have met a process with two threads running, or the test proved nothing. (Two threads of a
process may both be read in epoll_wait at a sample, one on its way out as the next takes the mutex: the kernel's, not
counted.)"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import gone, wait_for

from accept_order.analysis.mechanism_values import Seen
from accept_order.experiments.inspect.loops import _epoll_key, _raw_keys, with_registered_loops
from accept_order.experiments.inspect.run import looks
from accept_order.experiments.inspect.sample import Sample
from accept_order.probes.fd_table import FdTables
from accept_order.probes.proc_waits import ThreadWait
from accept_order.probes.serving import find_server
from accept_order.servers.launched.uwsgi import uwsgi_missing

UWSGI, WRK = str(Path(sys.executable).parent / "uwsgi"), shutil.which("wrk")
PROCESSES, THREADS = 2, 4
LOOKS = 10
BUSY_LOOKS = 3  # looks where a sample saw two threads of one process running: the case that added workers
MOST_LOOKS = 300
TIMEOUT_S = 30.0
LOAD_CPU_S = 0.5  # the servers' CPU time that says wrk's load has reached them

MISSING = "wrk is not installed" if WRK is None else uwsgi_missing() or ("" if Path(UWSGI).exists() else UWSGI)

APP = """def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]
"""


def _waiting(top: psutil.Process) -> int:
    """How many of the server's processes have a thread in epoll_wait now (the one that holds its mutex)."""
    with contextlib.suppress(psutil.Error):
        return sum(
            any(Path(f"/proc/{p.pid}/task/{t.id}/wchan").read_text() == "do_epoll_wait" for t in p.threads())
            for p in top.children()
        )
    return 0


def _cpu(top: psutil.Process) -> float:
    """The CPU seconds the server's processes have used."""
    with contextlib.suppress(psutil.Error):
        return sum(sum(p.cpu_times()[:2]) for p in [top, *top.children()])
    return 0.0


@contextlib.contextmanager
def _loaded(folder: Path, port: int) -> Iterator[list[int]]:
    """uWSGI (master, 2 processes of 4 threads, no thunder lock) waiting, then under wrk's load."""
    (folder / "app.py").write_text(APP)
    command = [UWSGI, "--http-socket", f"127.0.0.1:{port}", "--wsgi-file", str(folder / "app.py"), "--master"]
    command += ["--processes", str(PROCESSES), "--threads", str(THREADS)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder)
    load: subprocess.Popen[bytes] | None = None
    pids = [server.pid]
    try:
        top = psutil.Process(server.pid)
        wait_for(lambda: _waiting(top), lambda n: n >= PROCESSES, TIMEOUT_S, "uWSGI's processes in epoll_wait")
        pids += [p.pid for p in top.children(recursive=True)]
        assert WRK is not None
        load = subprocess.Popen(
            [WRK, "-c32", "-t2", "-d60s", f"http://127.0.0.1:{port}/"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        pids.append(load.pid)
        # uWSGI's --http-socket closes each connection after its answer: wrk's are not counted, its load's CPU is
        busy = _cpu(top) + LOAD_CPU_S
        wait_for(lambda: _cpu(top), lambda used: used >= busy, TIMEOUT_S, "uWSGI's CPU time under wrk")
        yield pids
    finally:
        for proc in (load, server):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(10)


@pytest.mark.skipif(bool(MISSING), reason=MISSING)
def test_threads_that_take_turns_are_one_worker_a_process(tmp_path: Path, free_port: int) -> None:
    counts: list[int] = []  # running threads taken for a waiter, each look
    busy = 0
    with _loaded(tmp_path, free_port) as pids, FdTables(keep=True) as tables:
        server = find_server(None, free_port, tables)
        workers = {p.pid for p in server.processes if p.ppid == pids[0]}
        # at least LOOKS looks, and on until BUSY_LOOKS of them met the case (a count of looks, not a time)
        while len(counts) < LOOKS or (busy < BUSY_LOOKS and len(counts) < MOST_LOOKS):
            _verdict, _tally, taken, _sample = looks(server, tables)
            counts.append(sum(s.call == "running" and s.via == "epoll" for sample in taken for s in sample.seen))
            running = [sum(w.call == "running" for w in s.waits.get(pid, ())) for s in taken for pid in workers]
            busy += max(running, default=0) >= 2
    wait_for(lambda: gone(pids), bool, TIMEOUT_S, "uWSGI's processes and wrk gone")
    assert busy >= BUSY_LOOKS, f"{busy} of {len(counts)} looks met two threads of a process running"
    assert counts == [0] * len(counts), f"running threads taken for an epoll's waiter, each look: {counts}"


def _waiting_sample(processes: int) -> Sample:
    """An idle nginx's sample: `processes` workers of one thread each, each waiting in its own epoll."""
    seen = tuple(Seen(pid, pid, "epoll_wait", "epoll", frozenset({7}), False, f"{pid}:8") for pid in range(processes))
    waits = {pid: (ThreadWait(pid, "nginx", "epoll_wait", fd=8),) for pid in range(processes)}
    return Sample(seen, waits, {}, {}, True, {f"{pid}:8": f"{pid}:8" for pid in range(processes)})


def test_processes_of_one_thread_are_left_as_read() -> None:
    """Nothing to give where no process has a running thread beside others: the samples are returned unread. The
    kcmp names were scanned once a thread (64 workers: 3.2 ms of a 31.5 ms look, each look); 0.03 ms now."""
    taken = [_waiting_sample(64) for _ in range(5)]
    assert with_registered_loops(taken, frozenset({7})) is taken
    assert _epoll_key(taken[0].seen[3], _raw_keys(taken[0])) == "3:8"
