"""Waiting in tests for an event, with a timeout, never a sleep as synchronisation: a probe polled until it says
done (wait_for), processes listed until they are gone, each waited for by its pidfd (ended_within), and a
subprocess's output read in a thread until a pattern appears (OutputReader). Tests import these from conftest too."""

from __future__ import annotations

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


def ended_within(listing: Callable[[], list[str]], bound: float, what: str) -> float:
    """Seconds until listing() is empty; fail naming `what` past `bound`. Each entry names a process as 'pid N'
    (tests/test_clients_faults.py's remote_processes and local_processes, which leave zombies out): each is waited
    for by its pidfd (its exit the event), then the listing is taken again. wait_for's walk of /proc every 10 ms,
    for the 10-40 s a client host's Python takes to hear a coordinator's silence, was most of the CPU of the tests
    that wait for it (test_clients_between_loads: 7.4 of its 13.3 CPU-s, in pytest's own process)."""
    began = time.monotonic()
    while left := listing():
        fds = []
        for entry in left:
            found = re.search(r"\bpid (\d+)", entry)
            assert found is not None, f"no pid in {entry!r}"
            try:
                fds.append(os.pidfd_open(int(found.group(1))))
            except ProcessLookupError:
                continue  # it ended meanwhile
        try:
            remaining = began + bound - time.monotonic()
            if remaining <= 0 or (fds and not select.select(fds, [], [], remaining)[0]):
                pytest.fail(f"timed out after {bound:g} s waiting for {what} (last: {left!r})")
        finally:
            for fd in fds:
                os.close(fd)
    return time.monotonic() - began


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
