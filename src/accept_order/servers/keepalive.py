"""A worker's loop when connections are kept (ServerSpec.keepalive): each request is a line from the client,
each answer the worker's line, and the connection stays until the client closes it.

How a worker waits for its kept connections is its mode's (`Mode.multiplexes`): an event-driven mode waits
on them in the same wait as on its listener, as nginx does, and answers whichever has a request; a mode whose
wait is the accept itself serves a connection to its end before it accepts again, as Apache prefork does, so
connections beyond the workers wait in the queue until one of the held ones closes. The accept mechanism is
the mode's either way: this loop only decides what a worker does between two waits.

Counted beside the one-request loop's counters (servers/worker.py): the requests answered and the most
connections held at once.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

from ..core.service_time import ServiceTimes
from ..probes.work import spin
from .modes.base import Waiter

WAITING, BUSY, RETURNING = 1, 2, 3  # worker.py's states (it imports this module: repeated, not imported)
READ = 4096


class KeptLoop:
    """One worker's kept connections and what it counted serving them."""

    def __init__(
        self,
        waiter: Waiter,
        multiplexes: bool,
        reply: bytes,
        work: tuple[int, int],
        times: ServiceTimes,
        state: Any,
        index: int,
    ) -> None:
        self.waiter = waiter
        self.multiplexes = multiplexes
        self.reply = reply
        self.work_us, self.work_iters = work
        self.times = times
        self.state = state
        self.index = index
        self.conns: dict[int, socket.socket] = {}
        self.requests = 0
        self.held_peak = 0
        self.wakeups = self.accepts = self.empty = self.max_batch = 0

    def run(self, leaving: Callable[[], bool], accepted: Callable[[int], None]) -> None:
        """Until stopped (the worker's _Stop leaves through here) or told to leave (`leaving()`): then the
        listener is closed and the held connections too, as nginx closes its idle kept connections at a
        graceful shutdown (every request read so far has been answered: the answers are synchronous)."""
        state, index = self.state, self.index
        while True:
            if leaving():
                held = self.waiter.leave()
                self.accepts += len(held)
                for conn in held:
                    conn.close()
                for conn in self.conns.values():
                    conn.close()
                self.conns.clear()
                return
            state[index] = WAITING
            if self.multiplexes:
                batch, ready = self.waiter.wait_kept()
            else:
                batch, ready = self.waiter.wait(), []
            state[index] = BUSY if batch or ready else RETURNING
            self.wakeups += 1
            if not batch and not ready:
                self.empty += 1
                continue
            if batch:
                self.accepts += len(batch)
                self.max_batch = max(self.max_batch, len(batch))
                accepted(self.accepts)
            for conn in batch:
                if self.multiplexes:
                    self.conns[conn.fileno()] = conn
                    self.waiter.watch(conn)
                    self.held_peak = max(self.held_peak, len(self.conns))
                else:
                    self.to_end(conn)
            for fd in ready:
                kept = self.conns.get(fd)
                if kept is not None:
                    self.read(kept)
            state[index] = RETURNING

    def answer(self, conn: socket.socket, requests: int) -> bool:
        """Answer `requests` requests on `conn`, each after its work; False when the client is gone."""
        clock = time.perf_counter_ns
        for _ in range(requests):
            began = clock()
            spin(self.work_us, self.work_iters)
            ready = clock()
            self.times.add((ready - began) // 1000)
            # counted before the reply leaves: a stop (SIGTERM raises in the worker) landing between a send that
            # reached the client and a count after it lost that request from the worker's count ('worker 0: 1
            # fewer' than its replies, 1 run in 4 at load 16); counted first, a stop before the send leaves one
            # the client gave up on (under way at the stop), which the report explains
            self.requests += 1
            try:
                conn.sendall(self.reply)
            except OSError:
                self.requests -= 1
                return False  # the client gave up; it counts the failure on its side
        return True

    def read(self, conn: socket.socket) -> None:
        """A kept connection has something to read: answer each whole request line, or close it at its end."""
        try:
            data = conn.recv(READ)
        except OSError:
            data = b""
        if data and self.answer(conn, data.count(b"\n")):
            self.waiter.rearm(conn)
            return
        del self.conns[conn.fileno()]
        self.waiter.unwatch(conn)
        conn.close()

    def to_end(self, conn: socket.socket) -> None:
        """Serve one connection until the client closes it (a worker whose wait is the accept)."""
        self.held_peak = max(self.held_peak, 1)
        try:
            while True:
                try:
                    data = conn.recv(READ)
                except OSError:
                    return
                if not data or not self.answer(conn, data.count(b"\n")):
                    return
        finally:
            conn.close()

    def counters(self) -> dict[str, int]:
        return {
            "wakeups": self.wakeups,
            "accepts": self.accepts,
            "empty": self.empty,
            "max_batch": self.max_batch,
            "requests": self.requests,
            "held_peak": self.held_peak,
        }
