"""observe counted accepts only for the threads it chose as workers as it began: bpftrace counts every thread of a
watched process, but another thread's accepts (one started afterwards, one that ran no loop on the listener then)
were shown nowhere. They are said now: 'N accepts by other threads ...'.

The server: a Python process whose main thread accepts, beside a helper thread that waits on an Event (both are
taken for workers, as for any threaded server this tool does not know); a request 'spawn' starts a second accepting
thread, after observe began. The witness the tool did not produce: each reply names the thread that accepted it
(its native id, as the kernel counts it)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from conftest import OutputReader, wait_for

from accept_order.experiments.observe.api import observe
from accept_order.experiments.observe.result import ObserveResult

TIMEOUT_S = 30.0
REQUESTS = 40
SERVER = """
import socket, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
threading.Thread(target=threading.Event().wait, daemon=True).start()  # a thread from the start that accepts none

def serve():
    me = threading.get_native_id()
    while True:
        conn, _ = s.accept()
        with conn:
            if conn.recv(16).startswith(b"spawn"):
                threading.Thread(target=serve, daemon=True).start()
            conn.sendall(f"{me}\\n".encode())

print(s.getsockname()[1], flush=True)
serve()
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="root and bpftrace")


@pytest.fixture
def server() -> Iterator[tuple[int, int]]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        port = int(OutputReader(proc.stdout).wait_for(r"(\d+)\n", TIMEOUT_S)[1])
        wait_for(lambda: os.listdir(f"/proc/{proc.pid}/task"), lambda t: len(t) == 2, TIMEOUT_S, "its two threads")
        yield proc.pid, port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _ask(port: int, what: bytes) -> int:
    """One request; the thread its reply names."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as conn:
        conn.sendall(what)
        return int(conn.makefile().readline())


def test_accepts_by_threads_that_are_not_workers_are_said(server: tuple[int, int]) -> None:
    pid, port = server
    began, done = threading.Event(), threading.Event()
    replies: Counter[int] = Counter()

    def drive() -> None:
        try:
            if began.wait(TIMEOUT_S):
                replies[_ask(port, b"spawn")] += 1
                wait_for(lambda: os.listdir(f"/proc/{pid}/task"), lambda t: len(t) == 3, TIMEOUT_S, "the new thread")
                for _ in range(REQUESTS):
                    replies[_ask(port, b"hello")] += 1
        finally:
            done.set()

    def snapshot(_: ObserveResult) -> None:
        began.set()  # the first comes once the tracepoints are attached and the workers chosen

    client = threading.Thread(target=drive)
    client.start()
    result = observe(pid=pid, duration_s=120, on_snapshot=snapshot, until=done, interval_s=0.5)
    client.join(TIMEOUT_S)
    assert sum(replies.values()) == REQUESTS + 1, replies
    workers = {w.tid: w.accepts for w in result.workers}
    assert pid in workers and len(workers) == 2, workers  # the main thread and the helper
    new = [tid for tid in replies if tid not in workers]
    assert len(new) == 1 and replies[new[0]], (replies, workers)  # the witness: the new thread served some
    assert workers[pid] == replies[pid], (workers, replies)
    n = replies[new[0]]
    said = [note for note in result.notes if "by other threads" in note]
    assert said and said[0].startswith(f"{n:,} accept") and f"thread {new[0]} of pid {pid} {n:,}" in said[0], said
