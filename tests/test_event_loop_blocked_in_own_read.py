"""Review RD2 of cece44f: a loop blocked in a call of its own (a file's read off a slow disk) is still a loop.

probes/event_loops.loop_threads took a thread seen asleep outside epoll at 3 looks, never in it, for no loop: an h2o
loop serving files that are not in the page cache sleeps in read or pread between its epoll waits, and was dropped
from observe's workers (its accepts with it). Only the waits no loop sleeps in (a timer's, a lock's) say none now.
Witness: /proc/PID/task/TID/syscall of a real process's threads (read, epoll_wait, clock_nanosleep, futex).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import wait_for

from accept_order.probes import event_loops
from accept_order.probes.event_loops import EPOLL_WAITS, loop_threads
from accept_order.probes.proc_waits import ThreadWait, thread_wait

TIMEOUT_S = 15.0

# Thread `loop` blocks reading stdin (a loop's own read), then, once given a byte, waits in epoll for good; `timer`
# sleeps in clock_nanosleep, `lock` in a futex. Each writes its id once it runs (one write: no line mixed).
SERVER = """
import os, select, threading, time
def loop():
    os.write(1, b"loop %d\\n" % threading.get_native_id())
    os.read(0, 1)
    select.epoll().poll()
def timer():
    os.write(1, b"timer %d\\n" % threading.get_native_id())
    time.sleep(3600)
def lock():
    os.write(1, b"lock %d\\n" % threading.get_native_id())
    threading.Event().wait()
for body in (loop, timer, lock):
    threading.Thread(target=body, daemon=True).start()
threading.Event().wait()
"""


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[bytes], dict[str, int]]]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        ids = dict((name.decode(), int(tid)) for name, tid in (proc.stdout.readline().split() for _ in range(3)))
        yield proc, ids
    finally:
        proc.kill()
        proc.wait(10)


def test_a_loop_seen_in_its_own_read_at_several_looks_is_still_a_loop(
    server: tuple[subprocess.Popen[bytes], dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, ids = server
    loop, timer, lock = ids["loop"], ids["timer"], ids["lock"]
    for tid, call in ((loop, "read"), (timer, "clock_nanosleep"), (lock, "futex")):
        wait_for(lambda tid=tid: thread_wait(proc.pid, tid).call, lambda c, call=call: c == call, TIMEOUT_S, call)
    reads = 0

    def looked(pid: int, tid: int) -> ThreadWait:
        """The real look; the loop's read is let go once seen at more looks than OTHER_LOOKS, and the next look at
        it comes once it waits in epoll (as a loop's file read ends and it goes back to its events)."""
        nonlocal reads
        wait = thread_wait(pid, tid)
        if tid == loop and wait.call == "read":
            reads += 1
            if reads > event_loops.OTHER_LOOKS:
                assert proc.stdin is not None
                proc.stdin.write(b"x")
                proc.stdin.flush()
                wait_for(lambda: thread_wait(pid, tid).call, lambda c: c in EPOLL_WAITS, TIMEOUT_S, "epoll_wait")
        return wait

    monkeypatch.setattr(event_loops, "thread_wait", looked)
    assert loop_threads(proc.pid, [loop, timer, lock], look_s=TIMEOUT_S) == (loop,)
    assert reads > event_loops.OTHER_LOOKS  # it was seen in its read that often before its epoll


def test_a_thread_only_in_its_own_io_at_the_deadline_is_a_loop_and_a_timer_is_none(
    server: tuple[subprocess.Popen[bytes], dict[str, int]],
) -> None:
    proc, ids = server
    loop, timer = ids["loop"], ids["timer"]
    for tid, call in ((loop, "read"), (timer, "clock_nanosleep")):
        wait_for(lambda tid=tid: thread_wait(proc.pid, tid).call, lambda c, call=call: c == call, TIMEOUT_S, call)
    assert loop_threads(proc.pid, [timer, loop], look_s=0.2) == (loop,)
