"""`fd-pass`: one acceptor process accepts every connection and passes its descriptor to a worker.

The fourth cure of seed 004 (and what Node's cluster module does by default): the kernel's queue order no
longer matters, because the acceptor chooses. Each worker has a Unix SOCK_SEQPACKET pair to the acceptor;
a connection travels as SCM_RIGHTS. A worker writes one byte back each time it comes back for more, so
the acceptor knows how many it still holds (`least-busy`). The price is an extra process on every
connection's path: its CPU and the hop are measured (the pool reports the acceptor's usage).

Policies: `round-robin` hands connection k to worker k mod W whatever it is doing (so an idle server's order
is exactly 0 1 2 0 1 2); `least-busy` to the worker holding the fewest, ties going round (Node's SCHED_RR
is close to this: it gives the next connection to a worker that has acknowledged the last one).
"""

from __future__ import annotations

import socket

from ...core.models import Model
from .base import DEFAULT_OPTIONS, Listeners, Mode, ModeOptions, Waiter, epoll_missing, listen_socket

# The acceptor and the workers' side (fd_pass_acceptor.py) are imported where a pool of this mode opens:
# `modes` and `compare` import every mode to list them (issue 30).


class FdPassMode(Mode):
    name = "fd-pass"
    summary = "one acceptor process accepts and passes each connection to a worker over a Unix socket"
    why = (
        "one acceptor process accepts every connection and sends its descriptor to a worker (SCM_RIGHTS) by "
        "its --policy: round-robin hands connection k to worker k mod W, whatever the kernel's queue order; "
        "every connection pays for a second process on its path"
    )
    model = Model.ROUND_ROBIN
    batches = False  # the acceptor takes everything queued; the workers get one at a time

    def unavailable(self) -> str | None:
        if not hasattr(socket, "send_fds") or not hasattr(socket, "AF_UNIX"):
            return "this Python cannot pass descriptors (socket.send_fds)"
        return epoll_missing()

    def open(
        self, host: str, port: int, backlog: int, workers: int, options: ModeOptions = DEFAULT_OPTIONS
    ) -> Listeners:
        from .fd_pass_acceptor import PassingListeners

        sock = listen_socket(host, port, backlog, reuseport=False)
        sock.setblocking(False)
        channels: list[tuple[socket.socket, socket.socket]] = []
        try:
            for _ in range(workers):
                channels.append(socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))
        except BaseException:
            sock.close()
            for pair in channels:
                for end in pair:
                    end.close()
            raise
        return PassingListeners([sock], sock.getsockname()[1], channels=channels, policy=options.policy)

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        from .fd_pass_acceptor import PassedWaiter, PassingListeners

        assert isinstance(listeners, PassingListeners)
        return PassedWaiter(listeners.channels[index][1])
