"""A Target for the sequential client whose one 'worker' is a thread of the test process: the client's side of
the Target interface (address, pids, attribution, protocol, settle, check_alive, death_fds, stop) as the built-in
pool gives it, for tests that drive run_sequential against a server they script line by line. A subclass serves
(its thread, started by it) and overrides check_alive/death_fds where its worker 'exits'."""

from __future__ import annotations

import os
import socket

from accept_order.core.measures import WorkerCounters
from accept_order.core.protocol import LINE, ClientProtocol
from accept_order.core.target import ReplyAttribution


class ThreadTarget:
    unsettled = 0

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._reply = f"worker 0 pid {os.getpid()}\n".encode()  # the line that names worker 0, this process

    @property
    def address(self) -> tuple[str, int]:
        return self.listener.getsockname()[:2]

    @property
    def pids(self) -> list[int]:
        return [os.getpid()]

    @property
    def attribution(self) -> ReplyAttribution:
        return ReplyAttribution((os.getpid(),))

    @property
    def protocol(self) -> ClientProtocol:
        return LINE

    def settle(self) -> None:
        pass

    def check_alive(self) -> None:
        pass

    def death_fds(self) -> list[int]:
        return []

    def stop(self) -> list[WorkerCounters]:
        return []
