"""inspect of a busy HAProxy (`haproxy -Ws`, nbthread 4) and h2o (num-threads 4) under wrk's keep-alive load: every
thread whose epoll watches the listener is a worker, whatever it is doing at the look (experiments/inspect/loops.py).

A thread busy serving waits in no call, and was left out of the workers: HAProxy read '2 workers', '3 workers' and
at times '0 workers ... Mechanism: not seen' though its 4 epolls watched the listener all along (9 of 10 looks
short of 4 under wrk -c32 before the fix). Each look here must name all 4 loops and the herd, and at least one of
them must have met a thread running at every sample, or the test proved nothing."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import gone, wait_for
from h2o_config import h2o_config

from accept_order.core.models import Mechanism
from accept_order.experiments.inspect.run import looks
from accept_order.experiments.inspect.sample import Sample
from accept_order.probes.fd_table import FdTables
from accept_order.probes.proc_waits import thread_wait
from accept_order.probes.serving import find_server

HAPROXY, H2O, WRK = shutil.which("haproxy"), shutil.which("h2o"), shutil.which("wrk")
THREADS = 4
LOOKS = 10
BUSY_LOOKS = 3  # looks where no sample saw every loop waiting: the case that dropped workers
MOST_LOOKS = 300
TIMEOUT_S = 30.0

pytestmark = pytest.mark.skipif(WRK is None, reason="wrk is not installed")

HAPROXY_CONFIG = """global
    nbthread {threads}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend f
    bind 127.0.0.1:{port}
    http-request return status 200 content-type text/plain string ok
"""


def _command(kind: str, folder: Path, port: int) -> list[str]:
    if kind == "haproxy":
        assert HAPROXY is not None
        (folder / "haproxy.cfg").write_text(HAPROXY_CONFIG.format(threads=THREADS, port=port))
        return [HAPROXY, "-Ws", "-f", str(folder / "haproxy.cfg")]  # master-worker, as Debian's unit runs it
    assert H2O is not None
    (folder / "www").mkdir()
    (folder / "www" / "index.html").write_text("ok\n")
    (folder / "h2o.conf").write_text(h2o_config(folder, port, THREADS))
    return [H2O, "-c", str(folder / "h2o.conf")]


def _loops_waiting(top: psutil.Process) -> int:
    """How many threads of the server's processes wait in epoll_wait now."""
    procs = [top, *top.children(recursive=True)]
    with contextlib.suppress(psutil.Error):
        return sum(thread_wait(p.pid, t.id).call == "epoll_wait" for p in procs for t in p.threads())
    return 0


@contextlib.contextmanager
def _loaded(kind: str, folder: Path, port: int) -> Iterator[list[int]]:
    """The server with its loops waiting, then under wrk's 32 keep-alive connections; every process ended after."""
    server = subprocess.Popen(_command(kind, folder, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    load: subprocess.Popen[bytes] | None = None
    pids = [server.pid]
    try:
        top = psutil.Process(server.pid)
        wait_for(lambda: _loops_waiting(top), lambda n: n >= THREADS, TIMEOUT_S, f"{kind}'s loops in epoll_wait")
        pids += [p.pid for p in top.children(recursive=True)]
        assert WRK is not None
        load = subprocess.Popen(
            [WRK, "-c32", "-t2", "-d60s", f"http://127.0.0.1:{port}/"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        pids.append(load.pid)
        wrk = psutil.Process(load.pid)
        wait_for(
            lambda: sum(c.status == psutil.CONN_ESTABLISHED for c in wrk.net_connections("tcp")),
            lambda n: n >= 32,
            TIMEOUT_S,
            "wrk's 32 connections",
        )
        yield pids
    finally:
        for proc in (load, server):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(10)


def _waiting(sample: Sample) -> int:
    """How many threads the sample read asleep in epoll_wait (their calls, before any reading of them)."""
    return sum(w.call == "epoll_wait" for waits in sample.waits.values() for w in waits)


@pytest.mark.parametrize("kind", ["haproxy", "h2o"])
def test_a_busy_loop_is_still_a_worker(kind: str, tmp_path: Path, free_port: int) -> None:
    if (HAPROXY if kind == "haproxy" else H2O) is None:
        pytest.skip(f"{kind} is not installed")
    counts, mechanisms, all_running = [], [], 0
    with _loaded(kind, tmp_path, free_port) as pids, FdTables(keep=True) as tables:
        server = find_server(None, free_port, tables)
        # at least LOOKS looks, and on until BUSY_LOOKS of them met the case (a count of looks, not a time)
        while len(counts) < LOOKS or (all_running < BUSY_LOOKS and len(counts) < MOST_LOOKS):
            verdict, _tally, taken, _sample = looks(server, tables)
            counts.append(len(verdict.waiters))
            mechanisms.append(verdict.mechanism)
            # the case that dropped workers: no sample of the look saw every loop waiting
            all_running += all(_waiting(sample) < THREADS for sample in taken)
    wait_for(lambda: gone(pids), bool, TIMEOUT_S, f"{kind}'s processes and wrk gone")  # h2o's helper ends after it
    assert all_running >= BUSY_LOOKS, f"{all_running} of {len(counts)} looks met a loop running at each sample"
    assert counts == [THREADS] * len(counts), counts
    assert mechanisms == [Mechanism.EPOLL_HERD] * len(counts), mechanisms
