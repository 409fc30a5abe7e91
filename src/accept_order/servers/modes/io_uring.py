"""`io-uring`: each worker arms one multishot accept (IORING_ACCEPT_MULTISHOT) on the shared socket.

The binding is PyPI's `uring-api` (the optional extra `accept-order[uring]`): of the candidates the issue
named it is the one that installs on Python 3.11 from a wheel and exposes multishot accept with the CQE
flags (`liburing` works too but says Linux 6.14+ and marks accept untested; `pyuring`'s current release
does not build against Debian 12's liburing and hides the flags). A multishot accept stays armed in the
kernel: every connection it accepts arrives as one completion carrying the new descriptor, and the request
is re-armed only when a completion comes without IORING_CQE_F_MORE.

io_uring waits on the listener as an exclusive waiter, and a multishot request keeps its place in the
socket's wait queue: the kernel wakes the first armed request that can take a connection, and since it
stays there while armed, that worker's ring keeps every connection, busy or not (the kernel accepts on its
behalf and queues the completions). Workers arm in index order, so worker 0 takes them all, until its ring's
completions are full: the connection that finds them full ends its accept (it rides on the last completion),
the next armed worker is first, and worker 0 arms again, last, when it reaps (2 workers, --work 500us: 3000/0 at
127 connections in flight, 1513/1487 at 140, at most 129 per wakeup). Only a connection that arrives after that
wakes the next worker: those already queued with it wake nobody, and wait for that arrival, whose wakeup has the next
worker's accept take them too (it accepts until the queue is empty), or for worker 0 to reap and arm again, its new
accept taking them at once (--work 100ms, 140 connections at once: 140/0; with one more 30 ms later, before worker 0
reaped: 130/11, 3 times of 3, the replies naming the worker). So a burst of 500 splits only where 129 pile up in
worker 0's ring before it reaps while more are still arriving: 500/0, 345/155, 500/0, 181/319, 387/113 and 291/209
in six bursts here (2 workers, no --work, load 6).
"""

from __future__ import annotations

import errno
import os
import select
import socket
from typing import Any

from ...core.hints import pip_install
from ...core.models import Model
from ...core.uring import ACCEPT_COMPLETIONS, ACCEPT_ENTRIES, lacking
from .base import Listeners, Mode, Waiter

EXTRA = pip_install("uring")
ENTRIES = ACCEPT_ENTRIES
RECOVERABLE = (errno.ECONNABORTED, errno.EPROTO, errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _binding() -> Any:
    import uring_api

    return uring_api


class UringWaiter(Waiter):
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.uring = _binding()
        # its completions asked for, not left to the kernel's default (twice the entries): the latency model's
        # 'first' hands connections on past exactly this many (core/uring.ACCEPT_COMPLETIONS)
        self.ring = self.uring.Ring(entries=ENTRIES, cq_entries=ACCEPT_COMPLETIONS)
        self.request: Any = None
        self.arm()

    def arm(self) -> None:
        self.request = self.ring.prepare_accept_multishot(self.sock.fileno(), 0, "accept")
        self.ring.submit()

    def _completions(self, timeout: float | None = None) -> list[Any]:
        """The ring's wait, resumed where a signal's handler returned (a SIGTERM the supervisor did not ask for:
        timeout(1) or systemd signalling the whole group), as Python resumes its own calls (PEP 475); the binding
        raised InterruptedError, which killed the worker. A handler's own exception (the stop) still ends it."""
        while True:
            try:
                return (self.ring.wait() if timeout is None else self.ring.wait(timeout)) or []
            except InterruptedError:
                continue

    def _reap(
        self, completions: list[Any], accepted: list[socket.socket], rearm: bool, ready: list[int] | None = None
    ) -> bool:
        """Sockets from `completions` into `accepted` (and the kept connections a poll found readable into
        `ready`); True when the accept request has ended."""
        ended = False
        for completion in completions:
            res, flags = completion.res, completion.flags
            data = completion.take_user_data()
            if completion.kind == self.uring.COMPLETION_KIND_POLL and ready is not None:
                ready.append(data)  # the poll's user data is the kept connection's descriptor
                continue
            if completion.kind != self.uring.COMPLETION_KIND_ACCEPT:
                continue  # the cancel's own completion (each accept's completion is a new object)
            if res >= 0:
                accepted.append(socket.socket(fileno=res))
            elif -res not in RECOVERABLE and -res != errno.ECANCELED:
                raise OSError(-res, f"io_uring accept: {os.strerror(-res)}")
            if not flags & self.uring.IORING_CQE_F_MORE:
                ended = True
                if rearm:
                    self.arm()
        return ended

    def wait(self) -> list[socket.socket]:
        accepted: list[socket.socket] = []
        self._reap(self._completions(), accepted, rearm=True)
        return accepted  # an error completion alone is an empty wakeup

    # Kept connections wait in the same ring as the accept: a one-shot poll each, armed again after each read
    # (a one-shot poll is spent by the read it announced, so a closed connection leaves nothing armed).
    def watch(self, conn: socket.socket) -> None:
        self.rearm(conn)

    def rearm(self, conn: socket.socket) -> None:
        self.ring.prepare_poll(conn.fileno(), select.POLLIN, conn.fileno())
        self.ring.submit()

    def unwatch(self, conn: socket.socket) -> None:
        """Its poll was spent by the read that found it closed: nothing is left armed."""

    def wait_kept(self) -> tuple[list[socket.socket], list[int]]:
        accepted: list[socket.socket] = []
        ready: list[int] = []
        self._reap(self._completions(), accepted, rearm=True, ready=ready)
        return accepted, ready

    def leave(self) -> list[socket.socket]:
        """Cancel the armed accept (its request holds the listener open), take what it had already
        accepted, then close the listener."""
        accepted: list[socket.socket] = []
        self.ring.prepare_cancel(self.request)
        self.ring.submit()
        for _ in range(100):  # each wait returns at least one completion; the end comes within a few
            if self._reap(self._completions(1.0), accepted, rearm=False):
                break
        self.ring.close()
        self.sock.close()
        return accepted


class IoUringMode(Mode):
    name = "io-uring"
    summary = "shared socket, one io_uring per worker with a multishot accept armed on it"
    why = (
        "each worker's ring arms one multishot accept, which waits on the socket as an exclusive waiter and "
        "keeps its place in the wait queue while armed: the first worker to arm keeps taking every connection "
        "(the kernel accepts for it even while it is busy and queues the completions, until its ring's "
        f"{ACCEPT_COMPLETIONS} are full: that ends its accept; the connections queued then wake nobody, and one "
        "arriving after that wakes the next armed worker, whose accept takes them too, else the first takes them "
        "when it reaps and arms again)"
    )
    model = Model.FIRST_REGISTERED
    # Under load too: worker 0's ring takes every connection while it is busy, until its completions are full
    # (core/uring.ACCEPT_COMPLETIONS), so the latency model queues them at the first armed worker (FIRST_REGISTERED
    # alone reads as 'the lowest idle worker': every worker sharing one queue).
    discipline = "first"
    batches = False  # a wakeup brings every completion queued; no cap applies

    def unavailable(self) -> str | None:
        try:
            uring = _binding()
        except ImportError:
            return f"needs the optional io_uring binding: {EXTRA}"
        return lacking(uring, "IORING_ACCEPT_MULTISHOT", "this kernel has no multishot accept (Linux 5.19+)")

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return UringWaiter(listeners.for_worker(index))
