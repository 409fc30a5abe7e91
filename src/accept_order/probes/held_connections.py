"""How many connections a server held accepted and open at once during a run: now and then, the TCP sockets on its
port that have a file (inet_diag's inode), from one sock_diag dump. A connection still in the accept queue has no
file yet, nor one its worker has closed (FIN_WAIT, TIME_WAIT: orphans), so what is counted is what the server's
workers hold between their accept and their close.

A worker that serves one connection at a time (gunicorn's sync worker, Unicorn, uWSGI without threads or async)
holds at most one, so its server no more than it has serving threads; an event loop holds every connection it serves
interleaved. The kind's word is not enough where a config picks the loop: PyPI's gunicorn 27 with
uvicorn.workers.UvicornWorker (uvloop, one thread a worker, 3 workers, latency --attach -n 2000 -c 12) had 8 of its
2,000 accepts come back empty, and read as gunicorn's one-thread workers its queue was modelled one connection a wakeup.

A dump is not one instant either: it walks every TCP socket of the host (1.8 ms, 1.3 of them on a CPU, here among
19,000 in TIME_WAIT left by earlier runs; one dump a read, of the listeners' address family), and a worker that
closes one connection and accepts the next meanwhile is seen holding both: that gunicorn with 3 sync workers at 4
clients read 4 to 6 in a sixth to a quarter of the reads that found any held (two runs), 3 at the median.

A dump that does not see the server's listener (a server in another network namespace than this tool's) counts
nothing: the reading is left out, not read as none held."""

from __future__ import annotations

import socket
from collections import Counter

from .netlink_diag import (
    MSG_HEAD,
    MSG_SIZE,
    MSG_TAIL,
    SOCKID_BE,
    SOCKID_SIZE,
    TCP_LISTEN,
    diag_request,
    open_diag_socket,
)
from .netlink_diag import diag_messages as _dump

TCP_ESTABLISHED, TCP_CLOSE_WAIT = 1, 8  # an accepted connection the server has not closed: its peer's FIN or not
STATES = 1 << TCP_ESTABLISHED | 1 << TCP_CLOSE_WAIT | 1 << TCP_LISTEN


FAMILIES = (socket.AF_INET, socket.AF_INET6)


def held_now(
    sock: socket.socket, port: int, listeners: frozenset[int], seq: int, families: tuple[int, ...] = FAMILIES
) -> int | None:
    """The connections on `port` that have a file, from one dump per address family of `families` on `sock` (a
    connection's family is its listener's: an IPv6 listener's IPv4 peers are v4-mapped); None where the dumps did not
    see one of `listeners` (socket inodes): not this namespace's server, or it closed them."""
    held, seen = 0, False
    for family in families:
        for data, start, end in _dump(sock, diag_request(family, port, seq, STATES), seq):
            if end - start < MSG_SIZE:
                continue
            state = MSG_HEAD.unpack_from(data, start)[1]
            sport = SOCKID_BE.unpack_from(data, start + MSG_HEAD.size)[0]
            inode = MSG_TAIL.unpack_from(data, start + MSG_HEAD.size + SOCKID_SIZE)[4]
            if sport != port:
                continue  # a client's end of a connection to the port (the load's own), or another port's
            if state == TCP_LISTEN:
                seen = seen or inode in listeners
            elif inode:
                held += 1
    return held if seen else None


class HeldConnections:
    """How many reads (read()) that saw the server's listener found it holding so many connections at once; a
    netlink socket kept open from the first read to close()."""

    def __init__(self, port: int, listeners: frozenset[int], families: tuple[int, ...] = FAMILIES) -> None:
        """`families`: the listeners' (each dump costs the same, however few of its sockets are theirs)."""
        self._port, self._listeners, self._families = port, listeners, families
        self._sock: socket.socket | None = None
        self._seq = 0
        self._failed = False
        self.reads: Counter[int] = Counter()

    def read(self) -> int | None:
        """One read: the connections it found held (None: it did not see the listener); a netlink error ends the
        reads (those so far stand)."""
        if self._failed or not self._listeners:
            return None
        self._seq += 1
        try:
            self._sock = self._sock or open_diag_socket()
            held = held_now(self._sock, self._port, self._listeners, self._seq, self._families)
        except OSError:
            self._failed = True
            self.close()
            return None
        if held is not None:
            self.reads[held] += 1
        return held

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def evidence(self) -> dict[str, dict[str, int]]:
        """busy_waits' `held`: the reads by the connections each found held (JSON's keys are text), where one saw the
        listener; {} otherwise."""
        return {"held": {str(n): self.reads[n] for n in sorted(self.reads)}} if self.reads else {}
