"""observe's line on empty accepts names only what the mechanism can do: 'observe' of 'serve -m reuseport-cpu -w 2'
(500 connections from a client pinned to CPU 0, then CPU 1: 300 and 200, 500 empty accepts as bpftrace counted)
said they were 'woken for a connection another took, or the end of an accept-until-empty loop', where each worker
waits on a listener of its own, whose queue no other worker takes from."""

from __future__ import annotations

import dataclasses

from observe_result_made import result

from accept_order.experiments.observe.result import ObservedMechanism
from accept_order.experiments.observe.verdict import verdict


def _empty_line(mechanism: ObservedMechanism | None) -> str:
    made = result([300, 200], mechanism=mechanism)
    made = dataclasses.replace(
        made, workers=tuple(dataclasses.replace(w, empty=c) for w, c in zip(made.workers, [300, 200], strict=True))
    )
    return next(line for line in verdict(made) if "came back empty" in line)


def test_listeners_of_their_own_take_nothing_from_one_another() -> None:
    seen = ObservedMechanism("reuseport", "the kernel hashes the 4-tuple", ("reuseport", "reuseport-cpu"))
    line = _empty_line(seen)
    assert line.startswith("500 accepts came back empty (EAGAIN, 1.00 per connection)"), line
    assert "another took" not in line, line
    assert "the end of an accept-until-empty loop such as multi_accept: each worker has a queue of its own" in line


def test_a_shared_queue_keeps_both_reasons() -> None:
    for seen in (None, ObservedMechanism("epoll", "the first registered idle worker wins", ("epoll",))):
        line = _empty_line(seen)
        assert "woken for a connection another took, or the end of an accept-until-empty loop" in line, line
