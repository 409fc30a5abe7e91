"""tests/waiting.ended_within, which waits for listed processes by their pidfds: a pid the listing named but another
process holds by the time it is opened is not waited on; a process that is not our child, one whose pidfd is
numbered past select()'s 1,024, one that appears after the first look, a zombie the listing keeps (looked at again
at wait_for's pace, not spun) and a kernel without pidfd_open. Each process here ends on an event (its stdin
closed), never a sleep."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import pytest
import waiting
from waiting import ended_within

READS_STDIN = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]  # ends as its stdin closes


@pytest.fixture
def readers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes that end as their stdin closes; each is ended and reaped after the test."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def reader(started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(READS_STDIN, stdin=subprocess.PIPE)
    started.append(proc)
    return proc


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ended_once_listed(end: Callable[[], None]) -> tuple[threading.Event, threading.Thread]:
    """A thread that calls end() once the event is set (by a listing, once ended_within has begun to wait)."""
    listed = threading.Event()

    def run() -> None:
        listed.wait(30)
        end()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listed, thread


def test_a_pid_taken_by_another_process_before_its_pidfd_is_not_waited_on(
    readers: list[subprocess.Popen[bytes]],
) -> None:
    # As where the process listed ended and its pid went to another (pid_max 32,768 on the test machine) before
    # pidfd_open: the first look names `other`'s pid, the looks after it name nothing. Waiting on `other`'s pidfd
    # alone would fail at the bound, with nothing left to wait for
    other = reader(readers)
    looks = iter([[f"pid {other.pid} (ended meanwhile)"]])
    ended_within(lambda: next(looks, []), 10, "nothing")
    assert other.poll() is None  # it was not waited for: still running


def test_a_process_not_our_child_is_waited_for_by_its_pidfd() -> None:
    # an orphan, as a cluster host's Python is (sshd's child, in another network namespace)
    r, w = os.pipe()
    spawn = f"import subprocess; print(subprocess.Popen({READS_STDIN!r}, stdin={r}, stdout=subprocess.DEVNULL).pid)"
    try:
        spawner = subprocess.run([sys.executable, "-c", spawn], stdout=subprocess.PIPE, pass_fds=(r,), timeout=30)
        orphan = int(spawner.stdout)
    finally:
        os.close(r)
    closed = threading.Event()

    def end() -> None:
        os.close(w)
        closed.set()

    listed, thread = ended_once_listed(end)
    try:

        def listing() -> list[str]:
            listed.set()
            return [f"pid {orphan}"] if alive(orphan) else []

        ended_within(listing, 30, "the orphan to end as its stdin closed")
    finally:
        listed.set()  # the orphan ends as its stdin closes, whatever happened
        thread.join(30)
    assert closed.is_set() and not alive(orphan)


def test_a_pidfd_past_select_s_limit(readers: list[subprocess.Popen[bytes]]) -> None:
    proc = reader(readers)
    assert proc.stdin is not None
    fillers = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]  # the next descriptor is past 1,024
    try:
        listed, thread = ended_once_listed(proc.stdin.close)

        def listing() -> list[str]:
            listed.set()
            return [f"pid {proc.pid}"] if proc.poll() is None else []

        ended_within(listing, 30, "the reader to end")
        thread.join(30)
    finally:
        for fd in fillers:
            os.close(fd)


def test_a_process_that_appears_after_the_first_look_is_waited_for(readers: list[subprocess.Popen[bytes]]) -> None:
    first = reader(readers)
    assert first.stdin is not None
    first.stdin.close()  # it ends; the second, started at the first look, never does
    later: list[subprocess.Popen[bytes]] = []

    def listing() -> list[str]:
        if not later:
            later.append(reader(readers))
        return [f"pid {p.pid}" for p in (first, *later) if p.poll() is None]

    with pytest.raises(pytest.fail.Exception) as failed:
        ended_within(listing, 2, "both")
    assert f"pid {later[0].pid}" in str(failed.value)  # named as the one left, not returned once `first` ended


def test_a_zombie_the_listing_keeps_is_looked_at_again_at_wait_for_s_pace(
    monkeypatch: pytest.MonkeyPatch, readers: list[subprocess.Popen[bytes]]
) -> None:
    proc = reader(readers)
    assert proc.stdin is not None
    proc.stdin.close()
    pidfd = os.pidfd_open(proc.pid)
    try:
        assert waiting.select.select([pidfd], [], [], 30)[0]  # it has exited: a zombie till reaped, its pidfd ready
    finally:
        os.close(pidfd)
    paced: list[float] = []
    monkeypatch.setattr(waiting.time, "sleep", paced.append)
    looks = 0

    def listing() -> list[str]:  # names the zombie for six looks, as a listing that keeps zombies would
        nonlocal looks
        looks += 1
        return [f"pid {proc.pid}"] if looks <= 6 else []

    ended_within(listing, 30, "the zombie to go")
    assert paced and len(paced) >= looks // 2 - 1, f"{looks} looks, paced {paced}"  # spun: none paced


def test_without_pidfd_open_the_listing_is_polled(
    monkeypatch: pytest.MonkeyPatch, readers: list[subprocess.Popen[bytes]]
) -> None:
    def no_pidfd_open(pid: int) -> int:
        raise OSError(errno.ENOSYS, "Function not implemented")  # Linux before 5.3

    monkeypatch.setattr(waiting.os, "pidfd_open", no_pidfd_open)
    proc = reader(readers)
    assert proc.stdin is not None
    listed, thread = ended_once_listed(proc.stdin.close)

    def listing() -> list[str]:
        listed.set()
        return [f"pid {proc.pid}"] if proc.poll() is None else []

    ended_within(listing, 30, "the reader to end")
    thread.join(30)
