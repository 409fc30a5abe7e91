"""`epoll-shared`: one epoll instance, made before the fork, that every worker waits on."""

from __future__ import annotations

import select
import socket

from ...core.models import Model
from .base import DEFAULT_OPTIONS, Listeners, Mode, ModeOptions, ReadinessWaiter, Waiter, epoll_missing


class EpollSharedMode(Mode):
    name = "epoll-shared"
    summary = "shared socket, one epoll instance shared by all workers"
    why = (
        "all workers sleep on the one epoll's wait queue, where epoll_wait adds each waiter at the head "
        "(__add_wait_queue_exclusive), so the most recent waiter is woken: LIFO"
    )
    model = Model.LIFO
    # Kept connections cannot join the one epoll: it is every worker's, so a connection's next request
    # would wake any worker, which does not have its descriptor. A per-worker epoll around the shared one
    # would hang a non-exclusive wait entry per worker on it, a herd instead of LIFO. So a worker serves
    # its connection to its end before it waits on the shared epoll again (Apache prefork's way).
    multiplexes = False

    def unavailable(self) -> str | None:
        return epoll_missing()

    def open(
        self, host: str, port: int, backlog: int, workers: int, options: ModeOptions = DEFAULT_OPTIONS
    ) -> Listeners:
        listeners = super().open(host, port, backlog, workers, options)
        listeners.shared_epoll = select.epoll()
        # Edge-triggered: a level-triggered item is put back on the ready list after each epoll_wait,
        # which wakes a second waiter and blurs the LIFO order this mode is here to show.
        listeners.shared_epoll.register(listeners.sockets[0].fileno(), select.EPOLLIN | select.EPOLLET)
        return listeners

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        ep = listeners.shared_epoll
        assert ep is not None
        return SharedEpollWaiter(listeners.for_worker(index), ep, batch)


class SharedEpollWaiter(ReadinessWaiter):
    def __init__(self, sock: socket.socket, ep: select.epoll, batch: int) -> None:
        super().__init__(sock, lambda: ep.poll(-1, 1), batch)
        self.ep = ep

    def wait(self) -> list[socket.socket]:
        accepted = super().wait()
        if self.batch and len(accepted) >= self.batch:
            # Edge-triggered: what a capped batch left in the queue raises no new edge, and would wait
            # for the next connection to arrive. Re-arming re-checks readiness and, if connections are
            # still queued, wakes the next waiter for them.
            self.ep.modify(self.sock.fileno(), select.EPOLLIN | select.EPOLLET)
        return accepted
