"""A client host that said ready and hears no go from the coordinator leaves, its idle drivers reaped: a coordinator
gone between 'ready' and 'go' (its machine, or the way to the host, with the ssh connection left open: nothing
closes the channel) left the host's drivers waiting for a go with no limit, until TCP gave up on the connection a
quarter of an hour later. Now load_side.GO_WAIT_S bounds it (70 s: the coordinator's own wait for a host's drivers,
4 * READY_TIMEOUT_S, and 10 s more), made 0.5 s here.

take_part runs here with the coordinator's end of the channel the test's own, which says nothing after the load (the
coordinator killed once the host is ready), and a real LoadGenerator: its driver processes are the witness, alive
as the host said ready and gone (reaped) before the host's Python would exit (os._exit, caught here)."""

from __future__ import annotations

import pickle
import socket
import threading
from collections.abc import Callable
from typing import Any

import psutil
import pytest

from accept_order.core.protocol import LINE
from accept_order.core.spec import ConcurrentLoad
from accept_order.core.target import ReplyAttribution
from accept_order.loads.generator import LoadGenerator
from accept_order.loads.hosts import load_side
from accept_order.loads.hosts.remote_side import CLOSED


class Left(BaseException):  # as os._exit: the host's Python ends here
    pass


class Coordinator:
    """The coordinator's end: the load, then silence (killed after the host's ready, its channel left open)."""

    def __init__(self, address: tuple[str, int]) -> None:
        load = ConcurrentLoad(connections=20, concurrency=2, driver_procs=2)
        self.payload = pickle.dumps((address, ReplyAttribution(()), load, LINE))
        self.sent: list[Any] = []
        self.callback: Callable[[Any], None] | None = None
        self.drivers: list[psutil.Process] = []  # alive as the host said ready
        self.ready = threading.Event()

    def receive(self) -> Any:
        return ("load", self.payload)

    def setcallback(self, callback: Callable[[Any], None], endmarker: Any) -> None:
        self.callback = callback

    def send(self, message: Any) -> None:
        self.sent.append(message)
        if message == ("ready",):
            self.drivers = [psutil.Process(p.pid) for p in Generators.made[-1].procs]
            self.ready.set()


class Generators(LoadGenerator):
    made: list[LoadGenerator] = []

    def __init__(self, *given: Any) -> None:
        super().__init__(*given)
        Generators.made.append(self)


def test_a_host_with_no_go_leaves_with_its_drivers_reaped(monkeypatch: pytest.MonkeyPatch) -> None:
    left: list[list[bool]] = []

    def leave(code: int) -> None:  # which drivers were still running as the host's Python would have ended
        left.append([d.is_running() and d.status() != psutil.STATUS_ZOMBIE for d in coordinator.drivers])
        raise Left

    monkeypatch.setattr(load_side, "GO_WAIT_S", 0.5)
    monkeypatch.setattr(load_side, "LoadGenerator", Generators)
    monkeypatch.setattr(load_side.os, "_exit", leave)
    with socket.create_server(("127.0.0.1", 0)) as server:  # nobody connects: no go came
        coordinator = Coordinator(server.getsockname())
        ended = threading.Event()

        def host() -> None:
            try:
                load_side.take_part(coordinator)
            except Left:
                pass
            finally:
                ended.set()

        part = threading.Thread(target=host, daemon=True)
        part.start()
        try:
            assert coordinator.ready.wait(60), coordinator.sent
            assert coordinator.drivers and all(d.is_running() for d in coordinator.drivers)
            assert ended.wait(60), "the host still waits for the go"
        finally:
            if not ended.is_set() and coordinator.callback is not None:
                coordinator.callback(CLOSED)  # the channel's end: the host stops (without the bound)
            part.join(60)
    assert left == [[False, False]], left  # its two drivers reaped before it left
    assert coordinator.sent[-1] == ("error", "no go from the coordinator within 0.5 s of its ready: it never drove")
