"""`epoll-shared`: one epoll instance, made before the fork, that every worker waits on."""

from __future__ import annotations

import select

from .base import Listeners, Mode, ReadinessWaiter, Waiter, epoll_missing


class EpollSharedMode(Mode):
    name = "epoll-shared"
    summary = "shared socket, one epoll instance shared by all workers"
    why = (
        "all workers sleep on the one epoll's wait queue, where epoll_wait adds each waiter at the head "
        "(__add_wait_queue_exclusive), so the most recent waiter is woken: LIFO"
    )
    model = "lifo"

    def unavailable(self) -> str | None:
        return epoll_missing()

    def open(self, host: str, port: int, backlog: int, workers: int) -> Listeners:
        listeners = super().open(host, port, backlog, workers)
        listeners.shared_epoll = select.epoll()
        # Edge-triggered: a level-triggered item is put back on the ready list after each epoll_wait,
        # which wakes a second waiter and blurs the LIFO order this mode is here to show.
        listeners.shared_epoll.register(listeners.sockets[0].fileno(), select.EPOLLIN | select.EPOLLET)
        return listeners

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        ep = listeners.shared_epoll
        assert ep is not None
        return ReadinessWaiter(listeners.for_worker(index), lambda: ep.poll(-1, 1), batch)
