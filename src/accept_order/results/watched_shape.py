"""The shape of a latency run's evidence `listeners_watched` (servers/attached_epolls.py): how many listeners take
connections to an attached server's address, and by index into them, which each worker's epolls watched as the
run started (`workers`), which it held (`held`) and which each of its epolls watched (`loops`), from which the
model takes its queue (experiments/latency/model_queues.py).

Unchecked, a file whose indices named no listener (`workers` [[4], [5], [6], [7]] of 4) was shown with its saved
model's 'hash' beside a note read from it again as 'queue hash assumed: ... taken as one shared queue'; such a file
is refused here, saying where, as any other field that does not fit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .schema import Integer, ListOf, Record, SchemaError, child

INDICES = ListOf(ListOf(Integer()))  # per worker, the listeners' indices


def _every_index(value: Any, at: str) -> list[tuple[str, int]]:
    """(path, index) of each index in nested lists of them."""
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _every_index(item, child(at, i))]
    return [(at, value)]


def _indices_name_listeners(read: Mapping[str, Any], at: str) -> None:
    count = read["listeners"]
    for name in ("workers", "held", "loops", "at_end"):
        for path, index in _every_index(read.get(name, []), child(at, name)):
            if index >= count:
                raise SchemaError(path, f"is {index}, but there are {count} listeners, numbered from 0")


def _young_name_workers(read: Mapping[str, Any], at: str) -> None:
    count = len(read["workers"])
    for path, index in _every_index(read.get("young", []), child(at, "young")):
        if index >= count:
            raise SchemaError(path, f"is {index}, but there are {count} workers, numbered from 0")


# young: the workers (by index) under 5 s old that watched none, asleep in epoll (attached_epolls.watched); at_end:
# each worker's watched listeners read again as the run ended, where some were young (attached_epolls.read_again)
LISTENERS_WATCHED = Record(
    {
        "listeners": Integer(1),
        "workers": INDICES,
        "held": INDICES,
        "loops": ListOf(INDICES),
        "young": ListOf(Integer()),
        "at_end": INDICES,
    },
    frozenset({"listeners", "workers"}),
    (_indices_name_listeners, _young_name_workers),
)
