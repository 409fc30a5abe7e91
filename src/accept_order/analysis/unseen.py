"""What inspect says where no thread waits on a listener at a look (analysis/mechanism.py's verdict without a
mechanism): every worker busy, the server's listeners taken out of its epolls, or rings /proc cannot read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from ..core.text import plural


class Seen(Protocol):
    """What this needs of analysis/mechanism.py's Seen (one thread at a look), which imports this module."""

    @property
    def via(self) -> str: ...
    @property
    def call(self) -> str: ...
    @property
    def holds(self) -> frozenset[int]: ...


_RING_UNTOLD = {
    "ring-unread": "whose fdinfo could not be read (unknown whether an accept is armed there)",
    "ring-poll": "with a poll armed on a descriptor its fdinfo does not name (the listener, or another)",
}


def why_unseen(seen: Sequence[Seen]) -> str:
    """Why no waiter was seen: every worker busy, unless some sleep on a ring /proc could not tell (ring-unread), or
    one polling a descriptor it does not name (ring-poll), either of which may be waiting on the listener: 'all
    busy?' of idle workers asleep in io_uring_enter misled."""
    rings = Counter(s.via for s in seen if s.via in _RING_UNTOLD and s.holds)
    idle = sum(1 for s in seen if s.via == "idle" and s.holds)
    if not rings and idle and not any(s.call == "running" for s in seen):  # Apache event at MaxRequestWorkers
        return (
            f"no thread waits on a listener at this moment and none is running: {plural(idle, 'thread')} holding one "
            f"{'waits' if idle == 1 else 'wait'} in an epoll without it: the server has taken its listeners out of its "
            "epolls for now (Apache's event MPM does so at MaxRequestWorkers, HAProxy at its maxconn, nginx's accept "
            "mutex between holders) and accepts nothing until one is put back"
        )
    if not rings:
        return "no thread waits on a listener at this moment (all busy?)"
    told = "; ".join(
        f"{plural(n, 'thread')} holding one {'sleeps' if n == 1 else 'sleep'} in io_uring_enter() on a ring "
        f"{_RING_UNTOLD[via]}"
        for via, n in sorted(rings.items())
    )
    return f"no thread is seen waiting on a listener: {told}"
