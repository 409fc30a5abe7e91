"""Review RJ of 883be5e: WorkerUsage sums a worker process's switches thread by thread, as increments over the
threads it read last time. A thread still there whose files could not be read at one reading (the reader out of
descriptors: EMFILE) was dropped from those, and the next reading took it from 0: its whole life's switches were
added a second time. The kernel's figure (each thread's /proc/PID/task/TID/status) is the witness."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from accept_order.servers import thread_switches
from accept_order.servers.thread_switches import WorkerUsage

# four threads that slept 50 times each and then block in Event.wait, and a main thread blocked reading stdin: no
# switches while the test reads them, so the kernel's figure holds still between its readings
CHILD = """
import sys, threading, time
done, ready = threading.Event(), threading.Semaphore(0)
def sleep_then_wait():
    for _ in range(50):
        time.sleep(0.0001)
    ready.release()
    done.wait()
for _ in range(4):
    threading.Thread(target=sleep_then_wait, daemon=True).start()
for _ in range(4):
    ready.acquire()
print("up", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def threaded() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)


def kernel_switches(pid: int) -> int:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status", "rb") as f:
            total += int(next(line for line in f if line.startswith(b"voluntary_ctxt_switches:")).split()[1])
    return total


def test_a_thread_unread_at_one_reading_is_not_counted_twice(
    threaded: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pid, reader = threaded.pid, WorkerUsage()
    kernel_before, first = kernel_switches(pid), reader.of(pid)
    tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    busiest = max(tids[1:], key=lambda tid: thread_switches._thread_switches(pid, tid)[1])  # type: ignore[index]
    real = thread_switches._thread_switches

    def out_of_descriptors(of: int, tid: int) -> tuple[thread_switches.Thread, int, int] | None:
        return None if tid == busiest else real(of, tid)

    monkeypatch.setattr(thread_switches, "_thread_switches", out_of_descriptors)
    reader.of(pid)  # one reading that missed a thread still there
    monkeypatch.setattr(thread_switches, "_thread_switches", real)
    last, kernel_after = reader.of(pid), kernel_switches(pid)
    assert first is not None and last is not None
    missed = real(pid, busiest)
    assert missed is not None and missed[1] >= 50, "the thread missed did not sleep: the test says nothing"
    # every switch the reader added happened between the kernel's two figures
    assert last[0] - first[0] <= kernel_after - kernel_before, f"missed thread slept {missed[1]} times"
