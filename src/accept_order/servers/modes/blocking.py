"""`blocking`: every worker blocks in accept() on one shared socket (the seed's blocking-accept.py)."""

from __future__ import annotations

import socket

from ...core.models import Model
from .base import Listeners, Mode, Waiter


class BlockingWaiter(Waiter):
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def wait(self) -> list[socket.socket]:
        conn, _ = self.sock.accept()
        return [conn]


class BlockingMode(Mode):
    name = "blocking"
    summary = "shared socket, every worker blocks in accept()"
    why = (
        "accept() queues blocked workers FIFO: prepare_to_wait_exclusive adds each at the tail of the "
        "socket's wait queue and a connection wakes the head, so idle workers take turns"
    )
    model = Model.FIFO
    batches = False
    nonblocking = False
    # The wait IS accept(): a worker blocked in it cannot also wait for a kept connection's next request
    # without another wait call (which would change what is measured). So, as Apache prefork, a worker
    # serves its connection to its end and only then accepts again.
    multiplexes = False

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return BlockingWaiter(listeners.for_worker(index))
