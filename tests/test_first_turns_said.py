"""A verdict says how many of its 'informative' connections were first turns, which fit any order.

FIFO cannot know in which order the workers first queued, so a worker's first turn counts as a fit that carries no
evidence (odds 1), and so does the lock's first holder. 'run -m blocking -w 4' (6 connections) read 'rotation (FIFO
among idle workers), 6/6 informative connections fit (a random idle worker would fit as well 1 time in 16)': 4 of the
6 were first turns, and the 1 in 16 is the other 2's. Now '(4 of them first turns, which fit any order; a random idle
worker would fit as well 1 time in 16)'."""

from __future__ import annotations

from accept_order.analysis import order
from accept_order.core.measures import ConnectionRecord
from accept_order.core.models import Model


def _sequential(workers: list[int]) -> list[ConnectionRecord]:
    """Each connection finished before the next starts: every worker idle each time."""
    return [ConnectionRecord(i, w, 100 + w, i * 1000, 100) for i, w in enumerate(workers)]


def test_fifos_first_turns_are_said() -> None:
    v = order.verdict(_sequential([0, 1, 2, 3, 0, 1]), 4, Model.FIFO, "accept() queues blocked workers FIFO")
    assert (v.fit, v.informative) == (6, 6)
    assert v.seen == "4 of them first turns, which fit any order; a random idle worker would fit as well 1 time in 16"
    assert "6/6 informative connections fit (4 of them first turns" in v.line()


def test_the_locks_first_holder_is_said() -> None:
    v = order.verdict(_sequential([2, 2, 2, 2, 2, 2]), 3, Model.LOCK_HOLDER, "the holder keeps it")
    assert v.seen.startswith("1 of them a first turn, which fits any order; a random idle worker would fit as well")


def test_an_order_every_connection_of_which_tells_says_nothing_of_turns() -> None:
    v = order.verdict(_sequential([0, 0, 0, 0, 0, 0]), 3, Model.FIRST_REGISTERED, "first-registered")
    assert v.seen == "a random idle worker would fit as well 1 time in 730"
