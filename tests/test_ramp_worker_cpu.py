"""ramp's workers' CPU, read between two readings of ramp's own reader while the launched server answers 150
requests of 2 ms of work each; the witness is the kernel's account (/proc/PID/stat's utime + stime, in clock ticks:
every thread's; /proc/PID/task/TID/stat, one thread's).

Where a worker is a process of threads: ramp's workers' CPU was each worker's main thread's alone: Puma's workers
answer in pool threads while the main one sleeps, and `ramp --server puma -w 2 --rates 1000,4000 --work 200us` read
'workers CPU 0%' at 3,408 requests a second of 0.2 ms each, and said 'other processes (or interrupts) used 83% of
the CPUs, this run's own 8%'. It reads every thread's now (core/processes.process_usage, as latency's counters do).

Where the workers are threads of one process (HAProxy's nbthread, h2o's loops: their ids are thread ids, the first
the process's own): 88a7119 read every worker by core/processes.process_usage, which gives the process's main
thread the whole process's CPU: HAProxy's thread 0 was charged every thread's, and the others' were counted a second
time on top. A thread counted as a worker is read by its own CPU (core/processes.usage), as latency's counters read
it (servers/watched.UsageDeltas, thread_workers): the workers' readings must add up to the whole process's, and
each be its thread's own."""

from __future__ import annotations

import os
import socket

import pytest

from accept_order.core.spec import ServerSpec
from accept_order.experiments.ramp.run import _cpu
from accept_order.servers.launched.haproxy import HaproxyServer, haproxy_missing
from accept_order.servers.launched.puma import PumaServer, puma_missing
from accept_order.servers.registry import checked

REQUESTS = 150
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def ticks(path: str) -> float:
    """utime + stime (fields 14 and 15) of a /proc stat file, in seconds."""
    with open(path, "rb") as f:
        fields = f.read().rpartition(b")")[2].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def fetch(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        while sock.recv(65536):
            pass


@pytest.mark.skipif(puma_missing() is not None, reason=str(puma_missing()))
def test_ramps_worker_cpu_is_every_threads() -> None:
    spec = checked(ServerSpec(kind="puma", mode="cluster", workers=2, work_us=2000))
    with PumaServer(spec) as server:
        pids = list(server.pids)
        ours_before, kernel_before = _cpu(pids), [ticks(f"/proc/{p}/stat") for p in pids]
        for _ in range(REQUESTS):
            fetch(server.port)
        ours_after, kernel_after = _cpu(pids), [ticks(f"/proc/{p}/stat") for p in pids]
    ours = sum(ours_after) - sum(ours_before)
    kernel = sum(kernel_after) - sum(kernel_before)
    assert kernel >= 0.05, f"the workers used {kernel:.3f} s: too little to compare"
    # ticks are rounded down per field and process: a few ticks either way
    assert abs(ours - kernel) <= 4 * len(pids) * TICK_S + 0.1 * kernel, (ours, kernel)


@pytest.mark.skipif(haproxy_missing() is not None, reason=str(haproxy_missing()))
def test_thread_workers_cpu_adds_up_to_their_process() -> None:
    spec = checked(ServerSpec(kind="haproxy", mode="threads", workers=2, work_us=2000))
    with HaproxyServer(spec) as server:
        tids = list(server.pids)
        process = tids[0]  # HAProxy numbers its workers by thread id, its main thread first
        own = [f"/proc/{process}/task/{tid}/stat" for tid in tids]
        assert len(tids) == 2 and os.path.exists(f"/proc/{process}/task/{tids[1]}"), tids  # two threads of one process
        ours_before, whole_before, own_before = _cpu(tids), ticks(f"/proc/{process}/stat"), [ticks(p) for p in own]
        for _ in range(REQUESTS):
            fetch(server.port)
        ours_after, whole_after, own_after = _cpu(tids), ticks(f"/proc/{process}/stat"), [ticks(p) for p in own]
    ours = sum(ours_after) - sum(ours_before)
    whole = whole_after - whole_before
    assert whole >= 0.05, f"HAProxy used {whole:.3f} s: too little to compare"
    # ticks are rounded down per field: a few either way; HAProxy's other threads (none here) would only lower ours
    slack = 4 * len(tids) * TICK_S + 0.1 * whole
    assert ours <= whole + slack, (ours, whole)
    for index, (before, after) in enumerate(zip(own_before, own_after, strict=True)):
        mine = ours_after[index] - ours_before[index]
        assert abs(mine - (after - before)) <= 4 * TICK_S + 0.1 * whole, (index, mine, after - before)
