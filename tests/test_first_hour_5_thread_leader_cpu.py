"""HAProxy's and h2o's workers are threads of one process, counted by their thread ids, the first of them the
process's own id. That id read as a process charged the main thread with every thread's CPU: `latency --server
haproxy -w 4` gave thread 0 0.94 CPU-s beside 0.19 for each of three others that served as many requests, and the
model's service time (the workers' CPU per request) came out 1.7 times what they used. Each thread counted as a
worker, the main one too, is now charged its own CPU; a process counted alone keeps every thread's (Puma)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from accept_order.core.processes import thread_workers
from accept_order.servers.thread_switches import EveryThreadUsage
from accept_order.servers.watched import UsageDeltas

SPIN_S = 0.3  # CPU the second thread burns: well above what the main thread uses while it waits

# The main thread waits on stdin; a second thread, whose id it prints, burns SPIN_S of its own CPU once told to.
WORKER = f"""
import sys, threading, time
go = threading.Event()
ids = []
def spin():
    ids.append(threading.get_native_id())
    go.wait()
    start = time.thread_time()
    while time.thread_time() - start < {SPIN_S}:
        pass
    print("done", flush=True)
    threading.Event().wait()  # alive until the process is killed: its CPU is read after
threading.Thread(target=spin, daemon=True).start()
while not ids:
    time.sleep(0.001)
print(ids[0], flush=True)
sys.stdin.readline()
go.set()
sys.stdin.readline()
"""


@pytest.fixture
def threaded() -> Iterator[tuple[subprocess.Popen[str], int]]:
    proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc, int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait(10)


def _spin(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "done\n"  # the second thread has used SPIN_S of CPU


@pytest.mark.parametrize("kind", [UsageDeltas, EveryThreadUsage], ids=["launched", "attached"])
def test_the_main_thread_counted_as_a_worker_is_charged_its_own_cpu(
    threaded: tuple[subprocess.Popen[str], int], kind: type[UsageDeltas]
) -> None:
    proc, spinner = threaded
    usage = kind([proc.pid, spinner])
    _spin(proc)
    main, other = usage.counters()
    assert other.cpu_s is not None and other.cpu_s >= SPIN_S / 2
    assert main.cpu_s is not None and main.cpu_s < SPIN_S / 4  # the spinner's CPU is not the main thread's


def test_a_process_counted_alone_keeps_every_thread_s_cpu(threaded: tuple[subprocess.Popen[str], int]) -> None:
    proc, _ = threaded
    usage = UsageDeltas([proc.pid])
    _spin(proc)
    cpu_s = usage.counters()[0].cpu_s
    assert cpu_s is not None and cpu_s >= SPIN_S / 2


def test_thread_workers_are_threads_of_one_counted_together_or_not_a_main_thread(
    threaded: tuple[subprocess.Popen[str], int],
) -> None:
    proc, spinner = threaded
    assert thread_workers([proc.pid, spinner]) == {proc.pid, spinner}
    assert thread_workers([proc.pid]) == frozenset()
    assert thread_workers([spinner]) == {spinner}  # not its process's main thread: a thread (review RD2: one rule)
