"""ramp's workers' CPU was each worker's main thread's alone: Puma's workers answer in pool threads while the main
one sleeps, and `ramp --server puma -w 2 --rates 1000,4000 --work 200us` read 'workers CPU 0%' at 3,408 requests
a second of 0.2 ms each, and said 'other processes (or interrupts) used 83% of the CPUs, this run's own 8%'. It
reads every thread's now (core/processes.process_usage, as latency's counters do).

Here the Puma this tool launches answers 150 requests of 2 ms of work each between two readings of ramp's own
CPU reader, and the kernel's account of each whole worker process (/proc/PID/stat's utime + stime, in clock
ticks: every thread's) is the witness."""

from __future__ import annotations

import os
import socket

import pytest

from accept_order.core.spec import ServerSpec
from accept_order.experiments.ramp.run import _cpu
from accept_order.servers.launched.puma import PumaServer, puma_missing
from accept_order.servers.registry import checked

REQUESTS = 150
TICK_S = 1 / os.sysconf("SC_CLK_TCK")

pytestmark = pytest.mark.skipif(puma_missing() is not None, reason=str(puma_missing()))


def kernel_cpu(pid: int) -> float:
    """The whole process's CPU seconds, every thread's (field 14 utime + 15 stime of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rpartition(b")")[2].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def fetch(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        while sock.recv(65536):
            pass


def test_ramps_worker_cpu_is_every_threads() -> None:
    spec = checked(ServerSpec(kind="puma", mode="cluster", workers=2, work_us=2000))
    with PumaServer(spec) as server:
        pids = list(server.pids)
        ours_before, kernel_before = _cpu(pids), [kernel_cpu(p) for p in pids]
        for _ in range(REQUESTS):
            fetch(server.port)
        ours_after, kernel_after = _cpu(pids), [kernel_cpu(p) for p in pids]
    ours = sum(ours_after) - sum(ours_before)
    kernel = sum(kernel_after) - sum(kernel_before)
    assert kernel >= 0.05, f"the workers used {kernel:.3f} s: too little to compare"
    # ticks are rounded down per field and process: a few ticks either way
    assert abs(ours - kernel) <= 4 * len(pids) * TICK_S + 0.1 * kernel, (ours, kernel)
