"""A client host that said ready and hears no go from the coordinator leaves, its idle drivers reaped: a coordinator
gone between 'ready' and 'go' (its machine, or the way to the host, with the ssh connection left open: nothing
closes the channel) left the host's drivers waiting for a go with no limit, until TCP gave up on the connection a
quarter of an hour later. Now the host leaves once the coordinator says nothing for load_side.COORDINATOR_SILENT_S
after its ready (10 s, made 0.5 s here), as it does mid-load: the coordinator beats to every host it reached
(loads/hosts/beats.py) while it waits for the others' ready (driven.HostsLoad._ready), each given a minute to start
its drivers, so a fixed bound from the ready (70 s, c4d3a59) left a run of 3 slow hosts: the first ready would hear
the go after 2 minutes.

take_part runs here with the coordinator's end of the channel the test's own, which says nothing after the load (the
coordinator killed once the host is ready), and a real LoadGenerator: its driver processes are the witness, alive
as the host said ready and gone (reaped) before the host's Python would exit (os._exit, caught here)."""

from __future__ import annotations

import pickle
import socket
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from accept_order.core.protocol import LINE
from accept_order.core.spec import ConcurrentLoad
from accept_order.core.target import ReplyAttribution
from accept_order.loads.generator import LoadGenerator
from accept_order.loads.hosts import beats, driven, load_side
from accept_order.loads.hosts.gateways import Host
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

    monkeypatch.setattr(load_side, "COORDINATOR_SILENT_S", 0.5)
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
    assert coordinator.sent[-1] == ("error", "no word from the coordinator for 0.5 s after its ready: it never drove")


class BeatingClock:
    """load_side's monotonic clock, which the host reads as it waits for the go: each reading after its ready is
    0.45 s on, a beat heard at it (never 0.5 s without one), and the 4th brings the go (1.8 s after the ready)."""

    def __init__(self, coordinator: Coordinator) -> None:
        self.now, self.readings, self.coordinator, self.inside = 0.0, 0, coordinator, False

    def __call__(self) -> float:
        callback = self.coordinator.callback
        if self.coordinator.ready.is_set() and self.readings < 4 and not self.inside and callback is not None:
            self.inside = True  # the host's heard() reads the clock too
            self.now += 0.45
            self.readings += 1
            beats.heard()  # on the host's watch channel (loads/hosts/beats.py)
            if self.readings == 4:
                callback(("go", time.time()))
            self.inside = False
        return self.now


def test_beats_before_the_go_keep_a_ready_host_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beats while the others start their drivers keep the host that said ready first: it drives at the go, heard
    more than 3 silences' worth after its ready (on load_side's clock, moved as the host reads it)."""
    monkeypatch.setattr(load_side, "COORDINATOR_SILENT_S", 0.5)
    monkeypatch.setattr(load_side, "LoadGenerator", Generators)
    left: list[str] = []  # os._exit is not patched: the forked drivers end by it
    monkeypatch.setattr(load_side, "_leave", lambda channel, why: left.append(why))
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.listen(64)
        coordinator = Coordinator(server.getsockname())
        clock = BeatingClock(coordinator)
        monkeypatch.setattr(load_side, "time", SimpleNamespace(time=time.time, monotonic=clock))
        served = threading.Thread(target=_answer, args=(server, 20), daemon=True)
        served.start()
        part = threading.Thread(target=load_side.take_part, args=(coordinator,), daemon=True)
        part.start()
        part.join(60)
        if part.is_alive() and coordinator.callback is not None:
            coordinator.callback(CLOSED)
            part.join(60)
        served.join(0 if left else 60)  # a host that left drove no connection
    assert clock.readings == 4 and not left, left
    assert [m[0] for m in coordinator.sent if m[0] != "tick"] == ["ready", "result"], coordinator.sent


def _answer(server: socket.socket, count: int) -> None:
    """Answer `count` connections a line each (LINE's reply: the client sends nothing), as the load's server."""
    for _ in range(count):
        conn, _ = server.accept()
        with conn:
            conn.sendall(b"worker 0 pid 1\n")


class Channel:
    """A host's channel on the coordinator's side whose receives time out (each as long as asked)."""

    class TimeoutError(Exception):  # noqa: A001,N818 - execnet's name
        pass

    def receive(self, timeout: float) -> Any:
        threading.Event().wait(timeout)  # as execnet's receive: the timeout passes with nothing heard
        raise self.TimeoutError


def test_a_host_never_ready_is_named_with_the_whole_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driven, "READY_TIMEOUT_S", 0.05)
    never = SimpleNamespace(host=Host("c1", None, Channel(), name="client host c1"))
    with pytest.raises(driven.LoadError, match="^client host c1: no answer in 0.2 s for its drivers to start$"):
        driven.HostsLoad._ready(never)  # type: ignore[arg-type]
