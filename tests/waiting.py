"""Waiting in tests for an event, with a timeout, never a sleep as synchronisation: a probe polled until it says
done (wait_for), processes listed until they are gone, each waited for by its pidfd (ended_within), and a
subprocess's output read in a thread until a pattern appears (OutputReader). Tests import these from conftest too."""

from __future__ import annotations

import errno
import os
import re
import select
import threading
import time
from collections.abc import Callable
from typing import IO, TypeVar

import pytest

T = TypeVar("T")


def wait_for(probe: Callable[[], T], done: Callable[[T], bool], timeout: float, what: str) -> T:
    """Poll probe() until done(value); fail naming `what` if the deadline passes first."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if done(value):
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what} (last: {value!r})")
        time.sleep(0.01)


POLL_S = 0.01  # wait_for's pace: where no pidfd can tell of an end, the listing is taken again this often


def ended_within(listing: Callable[[], list[str]], bound: float, what: str) -> float:
    """Seconds until listing() is empty; fail naming `what` past `bound`. Each entry names a process as 'pid N', N
    as this process's /proc has it (tests/test_clients_faults.py's remote_processes and local_processes): each is
    waited for by its pidfd (its exit the event, a child of ours or not), then the listing is taken again, so one
    that appeared meanwhile is waited for too. wait_for's walk of /proc every 10 ms, for the 10-40 s a client host's
    Python takes to hear a coordinator's silence, was most of the CPU of the tests that wait for it
    (test_clients_between_loads: 7.4 of its 13.3 CPU-s, in pytest's own process)."""
    began = time.monotonic()
    while left := listing():
        remaining = began + bound - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"timed out after {bound:g} s waiting for {what} (last: {left!r})")
        opened = _pidfds(_pids(left))
        try:
            _one_ended(opened, listing, remaining)
        finally:
            for fd in (opened or {}).values():
                os.close(fd)
    return time.monotonic() - began


def _pids(entries: list[str]) -> list[int]:
    pids = []
    for entry in entries:
        found = re.search(r"\bpid (\d+)", entry)
        assert found is not None, f"no pid in {entry!r}"
        pids.append(int(found.group(1)))
    return pids


def _pidfds(pids: list[int]) -> dict[int, int] | None:
    """A pidfd for each pid still there; None where this kernel (before 5.3) or a seccomp filter has no pidfd_open."""
    opened: dict[int, int] = {}
    for pid in pids:
        try:
            opened[pid] = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # it ended meanwhile
        except (AttributeError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in (errno.ENOSYS, errno.EPERM):
                raise
            for fd in opened.values():
                os.close(fd)
            return None
    return opened


def _one_ended(opened: dict[int, int] | None, listing: Callable[[], list[str]], remaining: float) -> None:
    """Return once a process of `opened` (pid: pidfd) that listing() still names has ended, or `remaining` passed.
    The listing is taken again after the opens: a pid between the first look and pidfd_open may have been taken by
    another process (pid_max is 32,768 here), whose pidfd would be waited on to the bound; one the second look
    names is the process opened, unless that one ended (its pidfd then reads ready at once)."""
    if opened is None:
        time.sleep(min(POLL_S, remaining))  # no pidfds: wait_for's polling
        return
    listed = set(_pids(listing()))
    waited = [fd for pid, fd in opened.items() if pid in listed]
    if not listed:
        return
    poller = select.poll()  # not select(): a pidfd numbered past FD_SETSIZE (1,024) is refused by it
    for fd in waited:
        poller.register(fd, select.POLLIN)
    if not waited or poller.poll(0):
        # Named, yet none of ours to wait on (one appeared since the opens), or one of ours already ended while
        # its pid is still named (a zombie that listing keeps, or the pid taken again): looked at again at
        # wait_for's pace, not spun
        time.sleep(min(POLL_S, remaining))
        return
    poller.poll(remaining * 1000)


class OutputReader:
    """Collect a subprocess's stream in a thread so a test can wait for text with a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._chunks: list[str] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.closed = False
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        for line in iter(self._stream.readline, ""):
            with self._changed:
                self._chunks.append(line)
                self._changed.notify_all()
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._lock:
            return "".join(self._chunks)

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first match of `pattern` in everything read so far, waiting up to `timeout` for it."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                match = regex.search("".join(self._chunks))
                if match:
                    return match
                remaining = deadline - time.monotonic()
                if self.closed or remaining <= 0:
                    text = "".join(self._chunks)
                    state = "stream closed" if self.closed else f"timed out after {timeout:g} s"
                    pytest.fail(f"{state} before {pattern!r} appeared; output so far:\n{text}")
                self._changed.wait(remaining)

    def finish(self, timeout: float = 5.0) -> str:
        """Everything, once the stream has closed (the process exited)."""
        self._thread.join(timeout)
        return self.text
