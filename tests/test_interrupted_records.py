"""A signal that lands while a connection is being recorded (its reply attributed, its socket closed, its
record kept and passed on) still leaves a record for it: an interrupted run's file has every connection it
drove, numbered without a gap (0.3's first cut lost that one: a hole in the sequence, and a worker's accept
count one above its records, about once in ten Ctrl-Cs of an overloaded `run --gap`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments.session import RunInterrupted, run_sequential
from accept_order.loads.sequential_books import Books

CUT = 5  # the connection whose recording the signal lands in


def interrupted(load: SequentialLoad, on_record: Callable[[ConnectionRecord], None] | None = None) -> list[Any]:
    with pytest.raises(RunInterrupted) as stop:
        run_sequential(ServerSpec(mode="blocking", workers=2), load, on_record)
    (result,) = stop.value.results
    assert result.interrupted
    return list(result.records)


def assert_whole(records: list[Any]) -> None:
    seqs = [r.seq for r in records]
    assert seqs == list(range(len(seqs))) and len(seqs) > CUT, seqs
    assert all(r.error is None for r in records[:CUT]), records[:CUT]
    # its whole reply was read when the signal came: served at the stop (test_interrupted_served.py), not aborted
    assert records[CUT].error is None and records[CUT].worker is not None, records[CUT]


@pytest.mark.parametrize("gap_ms", [0.0, 5.0], ids=["one-at-a-time", "paced"])
def test_a_signal_while_a_connection_is_recorded_leaves_its_record(
    monkeypatch: pytest.MonkeyPatch, gap_ms: float
) -> None:
    real = Books.record

    def record(self: Books, seq: int, *args: Any) -> None:
        if seq == CUT:  # as Ctrl-C would land while the reply is attributed, the socket closed
            raise KeyboardInterrupt
        real(self, seq, *args)

    monkeypatch.setattr(Books, "record", record)
    assert_whole(interrupted(SequentialLoad(connections=200, gap_ms=gap_ms)))


@pytest.mark.parametrize("gap_ms", [0.0, 5.0], ids=["one-at-a-time", "paced"])
def test_a_signal_while_a_record_is_passed_on_keeps_it_once(gap_ms: float) -> None:
    """Landing in the caller's on_record (the progress bar), after the run kept the record: kept once, as it was."""
    seen: list[int] = []

    def on_record(rec: ConnectionRecord) -> None:
        seen.append(rec.seq)
        if rec.seq == CUT and seen.count(CUT) == 1:
            raise KeyboardInterrupt

    records = interrupted(SequentialLoad(connections=200, gap_ms=gap_ms), on_record)
    seqs = [r.seq for r in records]
    assert seqs == list(range(len(seqs))) and len(seqs) > CUT, seqs
    assert all(r.error is None for r in records[: CUT + 1]), records[: CUT + 1]
