"""Ctrl-C wherever it lands in the sequential client: every connection a server accepted is a record.

A signal's KeyboardInterrupt is raised between two statements of the client (CPython 3.11 runs the handler at
the next check of its eval loop: a function's entry, a loop's jump back, the return of a call). Rather than
hope a real Ctrl-C lands at each point, a trace function raises it at each line the client's loops run, one
line per drive, and the test then compares the server's side with the records: each connection the server
accepted must be a record, served or aborted, numbered without a hole, and the drive must end with that
KeyboardInterrupt, not another error.

The server is a thread of this process (the trace follows the main thread alone) that counts its accepts;
what is still in its accept queue when the drive stops is accepted and counted after it, so a connection the
client made counts whether or not the server got to it before the stop.
"""

from __future__ import annotations

import os
import select
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest
from thread_target import ThreadTarget

from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import SequentialLoad
from accept_order.loads import sequential, sequential_books, sequential_paced
from accept_order.loads.sequential import run_sequential

CLIENT_FILES = tuple(m.__file__ for m in (sequential, sequential_books, sequential_paced) if m.__file__)
CONNECTIONS = 6
QUIET_MS = 50  # the server answers what it holds when no connection came for this long
NOT_REACHED = "not reached"
HIT = 3  # raise at a line's third run: a few connections recorded, some in flight


class _LineServer(ThreadTarget):
    """A Target whose one 'worker' is a thread: it answers with its line and closes, `hold` connections behind
    (paced: the client has hold + 1 in flight), and counts what it accepts."""

    def __init__(self, hold: int) -> None:
        super().__init__()
        self.hold = hold
        self.accepted_count = 0
        self._held: list[socket.socket] = []
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    # -- the server --
    def _answer(self, keep: int) -> None:
        """Answer and close the oldest connections held, until `keep` are left."""
        while len(self._held) > keep:
            answered = self._held.pop(0)
            try:
                answered.sendall(self._reply)
            except OSError:
                pass  # the client gave up on it
            answered.close()

    def _serve(self) -> None:
        poller = select.poll()
        poller.register(self.listener, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            ready = dict(poller.poll(QUIET_MS))
            if self._stop_r in ready:
                return
            if not ready:  # no next connection came: answer those held (a drive's last one)
                self._answer(0)
                continue
            conn, peer = self.listener.accept()
            self.accepted_count += 1
            self._held.append(conn)
            self._answer(self.hold)

    def accepted(self) -> int:
        """Once the drive has stopped: how many connections reached the server, those still in its accept
        queue included."""
        os.write(self._stop_w, b"x")
        self._thread.join(5)
        self.listener.setblocking(False)
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                break
            self.accepted_count += 1
            conn.close()
        return self.accepted_count

    def close(self) -> None:
        for conn in self._held:
            conn.close()
        self.listener.close()
        os.close(self._stop_r)
        os.close(self._stop_w)


@contextmanager
def interrupted_at(
    where: tuple[str, int] | None,
    hits: dict[tuple[str, int], int],
    took: Callable[[FrameType], Any] = lambda frame: True,
) -> Iterator[list[Any]]:
    """Trace the client's lines (counting each one's runs in `hits`); at `where`'s HIT-th run, raise
    KeyboardInterrupt there, once (the list yielded then holds what `took` read of that frame: True by default)."""
    fired: list[Any] = []

    def on_line(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            line = (frame.f_code.co_filename, frame.f_lineno)
            hits[line] = hits.get(line, 0) + 1
            if line == where and hits[line] == HIT and not fired:
                fired.append(took(frame))
                raise KeyboardInterrupt
        return on_line

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        return on_line if frame.f_code.co_filename in CLIENT_FILES else None

    sys.settrace(on_call)
    try:
        yield fired
    finally:
        sys.settrace(None)


def drive(gap_ms: float, where: tuple[str, int] | None, hits: dict[tuple[str, int], int]) -> str | None:
    """One drive cut at `where`; None when every accepted connection is a record, else what is wrong ("not
    reached" when this drive ran that line fewer than HIT times: a line of a wait, which timing decides)."""
    server = _LineServer(hold=1 if gap_ms else 0)
    seen: list[ConnectionRecord] = []
    ended: BaseException | None = None
    try:
        load = SequentialLoad(connections=CONNECTIONS, gap_ms=gap_ms, settle=False).validated()
        try:
            with interrupted_at(where, hits) as fired:
                run_sequential(server, load, seen.append)
        except BaseException as exc:  # noqa: BLE001 - what the drive ended with is the finding
            ended = exc
        accepted = server.accepted()
    finally:
        server.close()
    first: dict[int, ConnectionRecord] = {}
    for record in seen:  # as the run keeps them (experiments/session.py): the first one of each connection
        first.setdefault(record.seq, record)
    kept = sum(1 for r in first.values() if r.served or (r.error or "").startswith("aborted"))
    if where is not None and not fired:
        return NOT_REACHED
    if where is not None and not isinstance(ended, KeyboardInterrupt):
        return f"ended with {ended!r}, not the KeyboardInterrupt"
    if sorted(first) != list(range(len(first))):
        return f"records {sorted(first)}: a hole"
    if accepted > kept:
        return f"{accepted} connections accepted, {kept} served or aborted"
    return None


@pytest.mark.parametrize("gap_ms", [0.0, 2.0], ids=["one-at-a-time", "paced"])
def test_a_signal_at_any_line_of_the_client_loses_no_accepted_connection(gap_ms: float) -> None:
    hits: dict[tuple[str, int], int] = {}
    assert drive(gap_ms, None, hits) is None  # uninterrupted: the baseline, and which lines run often enough
    lines = sorted(line for line, n in hits.items() if n >= HIT)
    assert len(lines) > 20, lines  # the trace did follow the client's loops
    found = {f"{os.path.basename(where[0])}:{where[1]}": drive(gap_ms, where, {}) for where in lines}
    wrong = {line: what for line, what in found.items() if what not in (None, NOT_REACHED)}
    assert not wrong, wrong
    reached = [line for line, what in found.items() if what != NOT_REACHED]
    assert len(reached) > len(lines) * 3 // 4, found  # a busy machine changes how often a wait loops, not much more
