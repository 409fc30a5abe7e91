"""A server not launched by the tool whose workers work in threads (Puma: each worker's main thread sleeps in
ppoll while its server and pool threads serve) read 'cpu ms 0.0' under `latency --attach` and '%CPU 0%' in
`observe` for workers that had served thousands of requests (their logs said so): both read the main thread's
/proc/PID/schedstat alone. A worker's CPU is now every thread's."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from conftest import KEPT_BY_FIXTURES
from kept_readings import Taken, taken

from accept_order.core.processes import process_usage
from accept_order.experiments.observe.sampling import Usage, usage_of
from accept_order.experiments.observe.server import Unit
from accept_order.servers.thread_switches import WorkerUsage
from accept_order.servers.watched import ThreadedUsage, UsageDeltas

SPIN_S = 0.3  # CPU the second thread burns: well above what the main thread uses to start the interpreter

# The main thread waits on stdin throughout; a second thread burns SPIN_S of its own CPU once told to.
WORKER = f"""
import sys, threading, time
go = threading.Event()
def spin():
    go.wait()
    start = time.thread_time()
    while time.thread_time() - start < {SPIN_S}:
        pass
    print("done", flush=True)
threading.Thread(target=spin, daemon=True).start()
print("ready", flush=True)
sys.stdin.readline()
go.set()
sys.stdin.readline()
"""


@dataclass
class Spun:
    """Around the worker's one spin: two latency --attach readers (each test's own, read in the test) made before
    it, and observe's readings before and after it; each kept with what it raised, for its own test to raise."""

    attached: Taken[UsageDeltas]
    charged: Taken[UsageDeltas]
    observed_before: Taken[Usage | None]
    observed_after: Taken[Usage | None]


@pytest.fixture(scope="module")
def spun() -> Iterator[Spun]:
    """One worker whose second thread spins SPIN_S once, read around that spin by every reader the tests ask about
    (each its own instance, made before it). Shared because each test only reads the CPU of the same process around
    the same spin and none disturbs it: a worker and a spin a test cost 0.3 CPU-s each, most of the file's CPU."""
    proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    KEPT_BY_FIXTURES.add(proc.pid)  # alive between this module's tests on purpose
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        attached, charged = taken(lambda: UsageDeltas([proc.pid])), taken(lambda: UsageDeltas([proc.pid]))
        reader = taken(WorkerUsage)
        before = taken(lambda: usage_of(Unit(proc.pid), reader.get()))
        _spin(proc)
        yield Spun(attached, charged, before, taken(lambda: usage_of(Unit(proc.pid), reader.get())))
    finally:
        proc.kill()
        proc.wait(10)
        KEPT_BY_FIXTURES.discard(proc.pid)


def _spin(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "done\n"  # the thread has used SPIN_S of CPU


def test_an_attached_worker_s_cpu_is_every_thread_s(spun: Spun) -> None:
    cpu_s = spun.attached.get().counters()[0].cpu_s
    assert cpu_s is not None and cpu_s >= SPIN_S / 2  # clock ticks: whole ones


def test_observe_s_worker_cpu_is_every_thread_s(spun: Spun) -> None:
    before, after = spun.observed_before.get(), spun.observed_after.get()
    assert before is not None and after is not None
    assert after.cpu_s - before.cpu_s >= SPIN_S / 2  # clock ticks: whole ones


def test_a_thread_counted_as_a_worker_is_charged_its_own_cpu_only(spun: Spun) -> None:
    """HAProxy's and h2o's workers are threads: each one's CPU is its own, not its whole process's (which
    /proc/TID/stat of any thread gives)."""
    assert spun.charged.get().counters()[0].cpu_s >= SPIN_S / 2  # type: ignore[operator]
    proc = subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True, timeout=60, check=True)
    spinner_cpu, sleeper_cpu = map(float, proc.stdout.split())
    assert spinner_cpu >= SPIN_S / 2 and sleeper_cpu < SPIN_S / 4


# In one process: a thread that spins SPIN_S of CPU and one that sleeps; each one's reading of its own tid.
THREADS = f"""
import threading, time
from accept_order.servers.watched import ThreadedUsage, UsageDeltas
tids, go, done, named = {{}}, threading.Event(), threading.Event(), threading.Barrier(3)
def spin():
    tids["spin"] = threading.get_native_id(); named.wait(); go.wait(); start = time.thread_time()
    while time.thread_time() - start < {SPIN_S}:
        pass
    done.set(); time.sleep(60)
def sleep():
    tids["sleep"] = threading.get_native_id(); named.wait(); time.sleep(60)
for target in (spin, sleep):
    threading.Thread(target=target, daemon=True).start()
named.wait()
deltas = UsageDeltas([tids["spin"], tids["sleep"]])
go.set(); done.wait()
print(*(c.cpu_s for c in deltas.counters()))
"""


# Another thread burns less than the old rule's 20 ms; then the process says its own CPU clock (every thread's,
# the clock process_usage reads) and sleeps on stdin, using none while it is read.
BELOW_RULE = """
import sys, threading, time
def spin():
    start = time.thread_time()
    while time.thread_time() - start < 0.015:
        pass
thread = threading.Thread(target=spin)
thread.start()
thread.join()
print(time.process_time_ns(), flush=True)
sys.stdin.readline()
"""


def test_a_process_s_cpu_is_exact_not_ticks_past_a_threshold() -> None:
    """The rule a83a9b0 made (ticks where they exceed the main thread's ns by 20 ms) left out another thread's
    15 ms, and switched between ticks and ns from one reading to the next where others had used 20-40 ms
    (deltas of -19 and +27 ms here): every thread's CPU is now the process's clock, in nanoseconds."""
    proc = subprocess.Popen([sys.executable, "-c", BELOW_RULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        said_s = int(proc.stdout.readline()) / 1e9
        read_s = process_usage(proc.pid)[2]
        assert said_s <= read_s < said_s + 0.005  # what it said, and the little it used to say it
    finally:
        proc.kill()
        proc.wait(10)


# A thread that is there at the first reading, spins SPIN_S once told to, and ends (a Puma pool thread trimmed).
ENDING = f"""
import sys, threading, time
def spin():
    sys.stdin.readline()
    start = time.thread_time()
    while time.thread_time() - start < {SPIN_S}:
        pass
thread = threading.Thread(target=spin)
thread.start()
print("ready", flush=True)
thread.join()
print("ended", flush=True)
sys.stdin.readline()
"""


def test_a_threaded_worker_keeps_the_cpu_of_a_thread_that_ended() -> None:
    """Puma's and Caddy's workers (ThreadedUsage) summed the threads still there: a pool thread that worked
    and ended between the readings took its CPU with it."""
    proc = subprocess.Popen([sys.executable, "-c", ENDING], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stdout.readline() == "ready\n"
        deltas = ThreadedUsage([proc.pid])
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "ended\n"
        cpu_s = deltas.counters()[0].cpu_s
        assert cpu_s is not None and cpu_s >= SPIN_S
    finally:
        proc.kill()
        proc.wait(10)
