"""HAProxy's and h2o's workers are threads of one process, counted by their thread ids, the first of them the
process's own id. That id read as a process charged the main thread with every thread's CPU: `latency --server
haproxy -w 4` gave thread 0 0.94 CPU-s beside 0.19 for each of three others that served as many requests, and the
model's service time (the workers' CPU per request) came out 1.7 times what they used. Each thread counted as a
worker, the main one too, is now charged its own CPU; a process counted alone keeps every thread's (Puma)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from conftest import KEPT_BY_FIXTURES
from kept_readings import Taken, taken

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


@dataclass
class Spun:
    """The worker (its process, its spinning thread's id) and each reader made before its one spin, kept with what
    it raised, for its own test to raise."""

    proc: subprocess.Popen[str]
    spinner: int
    readers: dict[str, Taken[UsageDeltas]]


@pytest.fixture(scope="module")
def spun() -> Iterator[Spun]:
    """One worker whose thread spins SPIN_S once, read around that spin by every reader the tests ask about (each made
    before it, its own instance). Shared because each test only reads the CPU of the same process around the same
    spin and none disturbs it: a worker and a spin a test cost 0.3 CPU-s each, most of the file's CPU."""
    proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    KEPT_BY_FIXTURES.add(proc.pid)  # alive between this module's tests on purpose
    try:
        assert proc.stdout is not None
        spinner = int(proc.stdout.readline())
        readers = {
            "launched": taken(lambda: UsageDeltas([proc.pid, spinner])),
            "attached": taken(lambda: EveryThreadUsage([proc.pid, spinner])),
            "alone": taken(lambda: UsageDeltas([proc.pid])),
        }
        _spin(proc)
        yield Spun(proc, spinner, readers)
    finally:
        proc.kill()
        proc.wait(10)
        KEPT_BY_FIXTURES.discard(proc.pid)


def _spin(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "done\n"  # the second thread has used SPIN_S of CPU


@pytest.mark.parametrize("kind", ["launched", "attached"])
def test_the_main_thread_counted_as_a_worker_is_charged_its_own_cpu(spun: Spun, kind: str) -> None:
    main, other = spun.readers[kind].get().counters()
    assert other.cpu_s is not None and other.cpu_s >= SPIN_S / 2
    assert main.cpu_s is not None and main.cpu_s < SPIN_S / 4  # the spinner's CPU is not the main thread's


def test_a_process_counted_alone_keeps_every_thread_s_cpu(spun: Spun) -> None:
    cpu_s = spun.readers["alone"].get().counters()[0].cpu_s
    assert cpu_s is not None and cpu_s >= SPIN_S / 2


def test_thread_workers_are_threads_of_one_counted_together_or_not_a_main_thread(spun: Spun) -> None:
    proc, spinner = spun.proc, spun.spinner
    assert thread_workers([proc.pid, spinner]) == {proc.pid, spinner}
    assert thread_workers([proc.pid]) == frozenset()
    assert thread_workers([spinner]) == {spinner}  # not its process's main thread: a thread (review RD2: one rule)
