"""Review RF of 717f0a7/7d5394f: the kernel's per-thread children lists (/proc/PID/task/TID/children) are read one
thread after another and are not a snapshot (proc_tid_children(5): a child reaped while a list is read can make a
live one be skipped; a thread that exits hands its children to a thread of the process that may be read next, so
they are named twice). A launched server's workers are the ones its readiness check counted and saw asleep, not a
read after it; a child is named once however many lists name it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import children
import psutil
import pytest
from conftest import gone

from accept_order.core.spec import ServerSpec
from accept_order.probes import children as probe
from accept_order.servers.launched.base import LaunchedServer


@pytest.fixture
def two_threads_child() -> Iterator[subprocess.Popen[bytes]]:
    """A child of this process, with a second thread alive (two task lists to read) until the test ends."""
    child = subprocess.Popen(["sleep", "60"])
    done = threading.Event()
    thread = threading.Thread(target=done.wait, args=(60,))
    thread.start()
    try:
        yield child
    finally:
        done.set()
        thread.join()
        child.kill()
        child.wait()


def test_a_child_two_lists_name_is_one_child(
    two_threads_child: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As read while the thread that forked it exits: its list read first, then the list it was handed to."""
    pid = two_threads_child.pid
    monkeypatch.setattr(probe, "read_proc", lambda path: str(pid).encode())  # every thread's list names it
    assert [p.pid for p in probe.children(psutil.Process())] == [pid]


def test_the_tests_helper_names_such_a_child_once(
    two_threads_child: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = two_threads_child.pid
    monkeypatch.setattr(children, "_child_pids", lambda parent: [pid, pid] if parent != pid else [])
    assert [p.pid for p in children.child_processes()] == [pid]
    assert [p.pid for p in children.child_processes(recursive=True)] == [pid]


# A master that forks two workers asleep, as a launched server's does; SIGTERM ends it (its group goes with it).
MASTER = textwrap.dedent(
    """
    import os, time
    for _ in range(2):
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
    time.sleep(600)
    """
)


class SkippingServer(LaunchedServer):
    """Its children read as the kernel's lists may while another child is reaped: every worker until the
    readiness check has passed, then one skipped."""

    name = "skipping"
    witness_source = "none"

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.was_ready = False

    def command(self) -> list[str]:
        return [sys.executable, "-c", MASTER]

    def ready(self) -> bool:
        self.was_ready = True
        return True

    def workers_of(self, master: psutil.Process) -> list[int]:
        workers = super().workers_of(master)
        return workers[1:] if self.was_ready else workers


def test_a_launched_server_keeps_the_workers_its_readiness_counted() -> None:
    server = SkippingServer(ServerSpec(workers=2))
    try:
        server.start()
        assert server.master is not None
        expected = sorted(p.pid for p in psutil.Process(server.master.pid).children())
        assert len(expected) == 2
        assert sorted(server.pids) == expected
    finally:
        pids = list(server.pids)
        server.close()
    assert gone(pids)
