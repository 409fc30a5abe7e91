"""An attached worker's 'sleeps' (voluntary context switches) are every thread's: a Puma worker's main thread
sleeps in ppoll throughout and read 0, while its threads did the sleeping. Threads come and go: one that ends
takes its switches with it (no file keeps them), and the delta stays at or above zero; one born during the run
counts from its start."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from accept_order.core.spec import ServerSpec
from accept_order.servers.attached import AttachedServer
from accept_order.servers.thread_switches import EveryThreadUsage

NAPS = 300  # a 100 us nanosleep always puts the thread to sleep: at least this many voluntary switches
TIMEOUT_S = 60.0

# A process whose main thread only waits for a line on stdin. Commands, one a line, each answered "ok":
# `start NAME`: a thread named NAME that waits for orders; `nap NAME`: it sleeps NAPS times; `end NAME`: it ends
# (joined before the answer).
CHILD = r"""
import socket, sys, threading, time
listener = socket.create_server(("127.0.0.1", 0))
threads, orders = {}, {}
def serve(name):
    while True:
        order = orders[name].get()
        if order == "end":
            return
        for _ in range(int(order)):
            time.sleep(0.0001)
        orders[name + "-done"].put(1)
import queue
print(listener.getsockname()[1], flush=True)
for line in sys.stdin:
    verb, name = line.split()
    if verb == "start":
        orders[name], orders[name + "-done"] = queue.Queue(), queue.Queue()
        threads[name] = threading.Thread(target=serve, args=(name,), daemon=True)
        threads[name].start()
    elif verb == "nap":
        orders[name].put(NAPS)
        orders[name + "-done"].get()
    elif verb == "end":
        orders[name].put("end")
        threads[name].join()
    print("ok", flush=True)
""".replace("NAPS", str(NAPS))


class Child:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        assert proc.stdout is not None
        self.port = int(proc.stdout.readline())

    @property
    def pid(self) -> int:
        return self.proc.pid

    def __call__(self, verb: str, name: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{verb} {name}\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline() == "ok\n"


@pytest.fixture
def child() -> Iterator[Callable[[], Child]]:
    started: list[subprocess.Popen[str]] = []

    def start() -> Child:
        proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        started.append(proc)
        return Child(proc)

    yield start
    for proc in started:
        proc.kill()
        proc.wait(TIMEOUT_S)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def test_an_attached_workers_sleeps_are_its_threads(child: Callable[[], Child]) -> None:
    made = child()
    made("start", "server")
    spec = ServerSpec(kind="attached", mode="attached", attach=(made.pid,), port=made.port, workers=1)
    server = AttachedServer(spec, helpers=())
    server.start()
    try:
        made("nap", "server")
    finally:
        (counters,) = server.stop()
    assert counters.voluntary_switches is not None and counters.voluntary_switches >= NAPS


def test_a_thread_that_ends_leaves_no_negative_delta_and_one_born_counts(child: Callable[[], Child]) -> None:
    made = child()
    made("start", "old")
    made("nap", "old")  # NAPS switches before the first reading, in a thread that then ends
    usage = EveryThreadUsage([made.pid])
    made("end", "old")
    made("start", "new")
    made("nap", "new")  # NAPS switches in a thread born after the first reading
    (counters,) = usage.counters()
    assert counters.voluntary_switches is not None and counters.voluntary_switches >= NAPS
    assert counters.involuntary_switches is not None and counters.involuntary_switches >= 0
