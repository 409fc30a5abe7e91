"""probes/children.py: a process's children read from the kernel's per-thread lists are psutil's children(),
those forked by another thread than the main one included, and psutil's scan where the lists do not exist."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

import psutil
import pytest

from accept_order.probes import children as probe


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two children forked by the main thread and one by another thread, which stays until the test ends (its
    child is listed under its own task; once the thread exits the kernel hands the child to the main thread)."""
    started = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    forked, done = threading.Event(), threading.Event()

    def fork_then_stay() -> None:
        started.append(subprocess.Popen(["sleep", "60"]))
        forked.set()
        done.wait(60)

    thread = threading.Thread(target=fork_then_stay)
    thread.start()
    assert forked.wait(30)
    try:
        yield started
    finally:
        done.set()
        thread.join()
        for proc in started:
            proc.kill()
            proc.wait()


def test_the_kernels_lists_name_every_child_psutil_finds(sleepers: list[subprocess.Popen[bytes]]) -> None:
    me = psutil.Process()
    listed = [p.pid for p in probe.children(me)]
    assert listed == sorted(p.pid for p in me.children())
    assert set(listed) >= {proc.pid for proc in sleepers}


def test_a_process_without_children_and_one_gone_have_none(sleepers: list[subprocess.Popen[bytes]]) -> None:
    assert probe.children(psutil.Process(sleepers[0].pid)) == []
    gone = psutil.Process(sleepers[1].pid)
    sleepers[1].kill()
    sleepers[1].wait()
    assert probe._child_pids(gone.pid) == []


def test_without_the_lists_it_is_psutils_scan(
    sleepers: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probe.os.path, "exists", lambda path: False)  # a kernel without CONFIG_PROC_CHILDREN
    me = psutil.Process()
    assert probe._child_pids(me.pid) is None
    assert [p.pid for p in probe.children(me)] == [p.pid for p in me.children()]
