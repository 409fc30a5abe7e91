"""observe's note 'N accepts by other threads ...'.

Said at all: observe counted accepts only for the threads it chose as workers as it began: bpftrace counts every
thread of a watched process, but another thread's accepts (one started afterwards, one that ran no loop on the
listener then) were shown nowhere. They are said now.

The listener's alone: the note (ff6ab5c) counted every accept of a thread that is not a worker, on any socket:
bpftrace filters by pid, not by listener, so a metrics thread started later on a port of its own was said to have
taken the listener's connections. The note counts now only the accepts asked of a descriptor that is not another
socket (the accept tracepoints' fd, read against the process's fd table at the end).

The server: a Python process whose main thread accepts on the listener, beside a helper thread that waits on an
Event (both are taken for workers, as for any threaded server this tool does not know); after observe began, a
request 'spawn' starts a second thread accepting on the listener, and a request 'metrics' a thread that listens on a
port of its own and accepts there. The witness the tool did not produce: each reply names the thread that accepted
it (its native id, as the kernel counts it), and the test knows which port it asked."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator

import pytest
from conftest import OutputReader, wait_for
from observed_while import TIMEOUT_S, observed_while

REQUESTS = 40
ON_LISTENER = 30
ON_METRICS = 25
SERVER = """
import socket, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
threading.Thread(target=threading.Event().wait, daemon=True).start()  # a thread from the start that accepts none

def serve(sock):
    me = threading.get_native_id()
    while True:
        conn, _ = sock.accept()
        with conn:
            what = conn.recv(16)
            said = str(me)
            if what.startswith(b"spawn"):
                threading.Thread(target=serve, args=(s,), daemon=True).start()
            elif what.startswith(b"metrics"):
                m = socket.socket()
                m.bind(("127.0.0.1", 0))
                m.listen(64)
                threading.Thread(target=serve, args=(m,), daemon=True).start()
                said += f" {m.getsockname()[1]}"
            conn.sendall(f"{said}\\n".encode())

print(s.getsockname()[1], flush=True)
serve(s)
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


def _ask(port: int, what: bytes) -> list[int]:
    """One request; what its reply says: the thread that accepted it, and a port where it started one."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as conn:
        conn.sendall(what)
        return [int(word) for word in conn.makefile().readline().split()]


def test_accepts_by_threads_that_are_not_workers_are_said(server: tuple[int, int]) -> None:
    pid, port = server
    replies: Counter[int] = Counter()

    def drive() -> None:
        replies[_ask(port, b"spawn")[0]] += 1
        wait_for(lambda: os.listdir(f"/proc/{pid}/task"), lambda t: len(t) == 3, TIMEOUT_S, "the new thread")
        for _ in range(REQUESTS):
            replies[_ask(port, b"hello")[0]] += 1

    result = observed_while(drive, pid=pid)
    assert sum(replies.values()) == REQUESTS + 1, replies
    workers = {w.tid: w.accepts for w in result.workers}
    assert pid in workers and len(workers) == 2, workers  # the main thread and the helper
    new = [tid for tid in replies if tid not in workers]
    assert len(new) == 1 and replies[new[0]], (replies, workers)  # the witness: the new thread served some
    assert workers[pid] == replies[pid], (workers, replies)
    n = replies[new[0]]
    said = [note for note in result.notes if "by other threads" in note]
    assert said and said[0].startswith(f"{n:,} accept") and f"thread {new[0]} of pid {pid} {n:,}" in said[0], said


def test_a_threads_accepts_on_a_port_of_its_own_are_not_the_listeners(server: tuple[int, int]) -> None:
    pid, port = server
    on_listener: Counter[int] = Counter()
    on_metrics: Counter[int] = Counter()

    def drive() -> None:
        (first,) = _ask(port, b"spawn")
        second, metrics = _ask(port, b"metrics")
        on_listener.update([first, second])
        wait_for(lambda: os.listdir(f"/proc/{pid}/task"), lambda t: len(t) == 4, TIMEOUT_S, "the new threads")
        for _ in range(ON_METRICS):
            on_metrics[_ask(metrics, b"hello")[0]] += 1
        for _ in range(ON_LISTENER):
            on_listener[_ask(port, b"hello")[0]] += 1

    result = observed_while(drive, pid=pid)
    assert sum(on_metrics.values()) == ON_METRICS and len(on_metrics) == 1, on_metrics
    workers = {w.tid for w in result.workers}
    assert pid in workers and len(workers) == 2, workers  # the main thread and the helper
    (metrics_thread,) = on_metrics
    new = [tid for tid in on_listener if tid not in workers]
    assert len(new) == 1 and new[0] != metrics_thread and on_listener[new[0]], (on_listener, workers)
    n = on_listener[new[0]]  # the witness: the new listener thread's, the only ones the note may count
    said = [note for note in result.notes if "by other threads" in note]
    assert said and said[0].startswith(f"{n:,} accept") and f"thread {new[0]} of pid {pid} {n:,}" in said[0], said
    assert f"thread {metrics_thread} " not in said[0], said
