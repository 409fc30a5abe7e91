"""Ctrl-C after a connection's whole reply was read, before its record was made: the record says served, not
aborted. The sequential client's loops see a connection's end (its reply, then the peer's FIN) a few statements
before its record is kept; a signal in between used to keep it as 'aborted: the run stopped before this connection
finished', so the count of records was exact and the label wrong.

As in test_interrupt_every_line, a trace function raises the KeyboardInterrupt at a chosen line of the client (the
stand-in for where a real signal lands, between two statements), at that line's third run; the connection in hand
there (its `seq`, read from the frame) must end as a served record of worker 0, and every connection the server
accepted must still be a record."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, ModuleType

import pytest
import test_interrupt_every_line as every_line
from test_interrupt_every_line import CONNECTIONS, HIT, _LineServer

from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import SequentialLoad
from accept_order.loads import sequential, sequential_books, sequential_paced
from accept_order.loads.sequential import run_sequential

# Lines the client runs once it has seen a connection's end and before that connection's record is kept: each
# (module, the line's text, the loops that run it for every connection).
BOTH, ONE, PACED = ("one-at-a-time", "paced"), ("one-at-a-time",), ("paced",)
AFTER_THE_END: list[tuple[ModuleType, str, tuple[str, ...]]] = [
    (sequential, "unregister(fd)", ONE),
    (sequential, "ended = (seq, sock, started, clock(), data, error, port, cpu)", ONE),
    (sequential_paced, "finish(f, error)", PACED),
    (sequential_paced, "books.close(f.seq, f.sock, f.started_ns, ended, f.data, error, f.port, f.cpu)", PACED),
    # the one-at-a-time loop takes these for a worker's first reply only (it knows the line afterwards)
    (sequential_books, "worker, error = self.worker_of(data, sock, started_ns)", PACED),
    (sequential_books, "self.record(seq, worker, started_ns, ended_ns, error, port, cpu)", PACED),
    (sequential_books, "pids = self.pids", BOTH),
    (sequential_books, "if self.on_record:", BOTH),
]


def line_of(module: ModuleType, text: str) -> tuple[str, int]:
    """(file, line number) of the one line of `module` that reads `text` (stripped)."""
    lines, _ = inspect.getsourcelines(module)  # a module's: from its first line, numbered 1
    found = [i + 1 for i, line in enumerate(lines) if line.strip() == text]
    assert len(found) == 1, (module.__name__, text, found)
    return str(module.__file__), found[0]


def in_hand(frame: FrameType) -> int | None:
    """The connection the frame is handling: its `seq`, an in-flight entry's, or a record's."""
    names = frame.f_locals
    if isinstance(names.get("seq"), int):
        return int(names["seq"])
    for holder in ("f", "record"):
        seq = getattr(names.get(holder), "seq", None)
        if isinstance(seq, int):
            return seq
    return None


@contextmanager
def interrupted_at(where: tuple[str, int]) -> Iterator[list[int | None]]:
    """At `where`'s HIT-th run raise KeyboardInterrupt there, once; the list yielded then holds the connection in
    hand (test_interrupt_every_line's tracer, reading the frame it stops)."""
    with every_line.interrupted_at(where, {}, took=in_hand) as fired:
        yield fired


@pytest.mark.parametrize(
    ("module", "text", "loop"),
    [(m, t, loop) for m, t, loops in AFTER_THE_END for loop in loops],
    ids=[f"{loop}-{m.__name__.rsplit('.', 1)[1]}:{t[:40]}" for m, t, loops in AFTER_THE_END for loop in loops],
)
def test_a_signal_after_the_reply_was_read_leaves_it_served(module: ModuleType, text: str, loop: str) -> None:
    where = line_of(module, text)
    server = _LineServer(hold=1 if loop == "paced" else 0)
    seen: list[ConnectionRecord] = []
    ended: BaseException | None = None
    try:
        load = SequentialLoad(connections=CONNECTIONS, gap_ms=2.0 if loop == "paced" else 0.0, settle=False)
        try:
            with interrupted_at(where) as fired:
                run_sequential(server, load.validated(), seen.append)
        except BaseException as exc:  # noqa: BLE001 - what the drive ended with is the finding
            ended = exc
        accepted = server.accepted()
    finally:
        server.close()
    assert fired and fired[0] is not None, f"{text!r} did not run {HIT} times with a connection in hand"
    assert isinstance(ended, KeyboardInterrupt), ended
    first: dict[int, ConnectionRecord] = {}
    for record in seen:  # as the run keeps them: the first one of each connection
        first.setdefault(record.seq, record)
    cut = first[fired[0]]
    assert cut.served and cut.worker == 0 and cut.error is None, cut
    assert sorted(first) == list(range(len(first))), sorted(first)
    kept = sum(1 for r in first.values() if r.served or (r.error or "").startswith("aborted"))
    assert kept >= accepted, (kept, accepted, first)


def test_a_signal_before_any_reply_was_read_leaves_it_aborted() -> None:
    """The other side: a connection whose reply the client had not read is aborted, whatever the server did."""
    where = line_of(sequential, "register(fd, watching)")
    server = _LineServer(hold=0)
    seen: list[ConnectionRecord] = []
    try:
        with pytest.raises(KeyboardInterrupt), interrupted_at(where) as fired:
            run_sequential(server, SequentialLoad(connections=CONNECTIONS, settle=False).validated(), seen.append)
    finally:
        server.accepted()
        server.close()
    cut = next(r for r in seen if r.seq == fired[0])
    assert not cut.served and (cut.error or "").startswith("aborted: the run stopped"), cut
