"""Review RD2 of 9c5a4f4: which worker ids are threads is one rule for the kernel's accept count and for the usage.

probes/accept_filter.py (bpftrace's `tid` for a thread) took a lone id that is not its process's main thread for a
thread; servers/watched.threads_of_one (each thread's own CPU and switches) took only ids sharing a process with
another. Both now ask core/processes.thread_workers. Witness: /proc's Tgid of a real process's second thread.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from accept_order.core.processes import thread_group, thread_workers
from accept_order.probes.accepts import AcceptCounter
from accept_order.servers.thread_switches import EveryThreadUsage
from accept_order.servers.watched import UsageDeltas

# A second thread prints its id and waits; the main thread waits on stdin.
WORKER = """
import sys, threading
ids = []
ready = threading.Event()
def wait():
    ids.append(threading.get_native_id())
    ready.set()
    threading.Event().wait()
threading.Thread(target=wait, daemon=True).start()
ready.wait()
print(ids[0], flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def threaded() -> Iterator[tuple[int, int]]:
    proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.pid, int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait(10)


def gone_id() -> int:
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait(10)
    return proc.pid


def test_the_usage_and_the_accept_count_take_the_same_ids_for_threads(threaded: tuple[int, int]) -> None:
    main, other = threaded
    assert thread_group(other) == main and thread_group(main) == main  # the kernel's Tgid: one process
    gone = gone_id()
    cases = {
        (main, other): {main, other},  # threads of one process, attached together
        (other,): {other},  # a lone thread that is not the main one: its own accepts, its own CPU
        (main,): set(),  # a process: every thread's
        (gone,): set(),  # gone: a process, as before
        (other, gone): {other},
    }
    for ids, threads in cases.items():
        assert thread_workers(ids) == threads, ids
        counter = AcceptCounter(list(ids))
        assert counter.threads == threads, ids
        for usage in (UsageDeltas(list(ids)), EveryThreadUsage(list(ids))):
            assert usage.thread_workers == counter.threads, (type(usage).__name__, ids)
