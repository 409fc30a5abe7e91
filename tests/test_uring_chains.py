"""The io_uring loop on liburing's linked chains (loads/uring_chains.py): what only its chains do.

test_uring_loop.py runs both loops through the same events; here uring-api's loop is made to fail, so that what
passes ran on the chains. Counts are exact; timings are never asserted.
"""

from __future__ import annotations

import resource
import socket
import struct
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import wait_for
from test_uring_loop import (
    LINE,
    TIMEOUT,
    AnyReply,
    Flag,
    Server,
    drive,
    holding,
    no_descriptor_left,
    refusing,
    replying,
)

from accept_order.core.finished import PUBLISHED
from accept_order.core.processes import MAX_REPLY
from accept_order.core.protocol import ABORTED, BAD_REPLY, HttpProtocol
from accept_order.loads import drivers, uring_chains, uring_loop
from accept_order.loads.drive_loop import DriverConfig
from accept_order.loads.uring_chains import TAIL, ring_size

NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST = 4, 20, 1  # linux/sock_diag.h, linux/netlink.h
CHAINS = pytest.mark.skipif(
    drivers.uring_unavailable() is not None or drivers.chains_unavailable() is not None,
    reason=f"{drivers.uring_unavailable() or drivers.chains_unavailable()}",
)


@pytest.fixture
def chains_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """uring-api's loop fails if it is reached: the chains must have run."""

    def not_here(*args: Any) -> dict[str, Any]:
        raise AssertionError("uring-api's loop ran instead of the chains")

    monkeypatch.setattr(uring_loop, "drive_uring_api", not_here)


def unread(client: tuple[str, int], server: tuple[str, int]) -> int:
    """Bytes in the receive queue of the TCP socket from `client` to `server` (inet_diag's idiag_rqueue, asked
    by its addresses: one lookup, not a dump): what the loop has not received yet; 0 once it is closed."""
    sockid = struct.pack("!HH", client[1], server[1]) + socket.inet_aton(client[0]) + bytes(12)
    sockid += socket.inet_aton(server[0]) + bytes(12) + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
    body = struct.pack("=BBBxI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0xFFFFFFFF) + sockid
    request = struct.pack("=IHHII", 16 + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as sock:
        sock.send(request)
        reply = sock.recv(65536)
    kind = struct.unpack_from("=H", reply, 4)[0]
    if kind != SOCK_DIAG_BY_FAMILY:  # NLMSG_ERROR: ENOENT, no such socket (any more)
        return 0
    rqueue: int = struct.unpack_from("=I", reply, 16 + 4 + 48 + 4)[0]  # after family..retrans, the id, expires
    return rqueue


def in_parts(*parts: bytes) -> Callable[[socket.socket], None]:
    """Sends each part once the client has received the one before, so that each comes in its own receive."""

    def handle(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer, me = conn.getpeername(), conn.getsockname()
        for part in parts:
            conn.sendall(part)
            wait_for(lambda: unread(peer, me), lambda n: n == 0, 10, "the loop's receive")

    return handle


@CHAINS
@pytest.mark.parametrize("protocol", [LINE, HttpProtocol()], ids=["line", "http"])
def test_a_refused_connect_ends_its_chain_as_econnrefused(chains_only: None, protocol: Any) -> None:
    # the connect posts its failure and nothing else of its chain (skip-success): one error per connection
    with no_descriptor_left(), refusing() as address:
        result = drive("io_uring", address, protocol=protocol, requests=30, slots=6)
    assert result["errors"] == {"ECONNREFUSED": 30}


@CHAINS
@pytest.mark.parametrize(
    ("parts", "served", "errors"),
    [
        ((b"worker 0 ", b"pid ", b"1\n"), {0: 8}, {}),
        ((b"x" * 1000, b"x" * 1000, b"x" * 1000, b"x" * 1096), {0: 8}, {}),  # exactly MAX_REPLY in four
        ((b"x" * 1000, b"x" * 1000, b"x" * 1000, b"x" * 1097), {}, {BAD_REPLY: 8}),
        ((b"x" * 100, b"x" * (TAIL + 1000)), {0: 8}, {}),  # more than the EOF receive's buffer holds
        ((b"x" * 100, b"x" * (MAX_REPLY - 99)), {}, {BAD_REPLY: 8}),  # ... and one byte past MAX_REPLY in all
    ],
    ids=["line", "max", "max-plus-one", "past-the-eof-buffer", "past-it-and-too-long"],
)
def test_a_reply_in_several_receives_is_read_to_its_eof(
    chains_only: None, parts: tuple[bytes, ...], served: dict[int, int], errors: dict[str, int]
) -> None:
    # the first receive, the linked second, then one receive at a time (at a short tick, as below: this process's
    # server thread sends each part once a wait of the ring has timed out)
    with no_descriptor_left(), Server(in_parts(*parts)) as server:
        result = drive("io_uring", server.address, requests=8, slots=2, tick_s=0.002)
    assert (result["served"], result["errors"]) == (served, errors)


@CHAINS
def test_connects_that_never_complete_time_out(chains_only: None) -> None:
    # A listener whose accept queue is full drops the SYNs: the connects wait (skip-success, cancelled by the
    # timeout, post their cancellation and nothing else of their chains); the queued ones wait in their receive.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    try:
        with no_descriptor_left():
            result = drive("io_uring", listener.getsockname(), requests=6, slots=6, timeout_s=0.2)
    finally:
        listener.close()
    assert result["errors"] == {TIMEOUT: 6}


@CHAINS
def test_many_more_connections_than_the_completion_queue_holds(chains_only: None) -> None:
    # the completion queue's head wraps round many times (twice the submission entries, 128 for 4 slots). At a
    # short tick: the ring's wait holds the GIL, so this process's server thread answers a connection only once a
    # wait has timed out (600 connections took 12-13 s at the 20 ms tick, ~0 CPU; a server in another process
    # 0.07 s for 200)
    with no_descriptor_left(), Server(replying(b"worker 0 pid 1\n")) as server:
        result = drive("io_uring", server.address, requests=600, slots=4, tick_s=0.002)
    assert ring_size(4) == 64
    assert (result["served"], result["errors"]) == ({0: 600}, {})


@CHAINS
@pytest.mark.parametrize("why", ["open-file limit", "address"])
def test_what_the_chains_cannot_drive_runs_on_uring_api(monkeypatch: pytest.MonkeyPatch, why: str) -> None:
    # The table of registered descriptors cannot be larger than RLIMIT_NOFILE; the binding parses numeric
    # addresses only (socket's connect also takes a name, or an IPv6 scope): uring-api's loop runs instead.
    ran: list[int] = []

    def uring_api(cfg: DriverConfig, *args: Any) -> dict[str, Any]:
        ran.append(cfg.slots)
        return {}

    monkeypatch.setattr(uring_loop, "drive_uring_api", uring_api)
    slots = resource.getrlimit(resource.RLIMIT_NOFILE)[0] + 1 if why == "open-file limit" else 2
    with Server(replying(b"worker 0 pid 1\n")) as server:
        host = "localhost" if why == "address" else server.address[0]
        cfg = DriverConfig(0, (host, server.address[1]), AnyReply(), LINE, 1, None, slots, 5.0, loop="io_uring")
        assert uring_loop.drive_uring(cfg, [0] * PUBLISHED, Flag(), 0.02) == {}
    assert ran == [slots]


class Tracked(bytearray):
    """A bytearray a weak reference can follow (bytearray itself takes none)."""


class ExitWatched:
    """liburing, but for io_uring_queue_exit: it first calls `before()`."""

    def __init__(self, before: Callable[[], None]) -> None:
        self.real = drivers.chains_binding()
        self.before = before

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def io_uring_queue_exit(self, ring: Any) -> Any:
        self.before()
        return self.real.io_uring_queue_exit(ring)


@CHAINS
def test_the_buffers_receives_write_into_outlive_the_ring(chains_only: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stop leaves receives in flight, writing into their buffers until the ring is gone (a kernel before 6.17 ran
    # a pending receive's copy as io_uring_queue_exit closed the ring; with COOP_TASKRUN, on any system call's
    # return): freed with the loop's frame before it, a late reply would land in memory reused (the heap's own).
    made: list[weakref.ref[Tracked]] = []

    def tracked(size: int) -> Tracked:
        buffer = Tracked(size)
        made.append(weakref.ref(buffer))
        return buffer

    freed_at_exit: list[int] = []
    monkeypatch.setattr(uring_chains, "bytearray", tracked, raising=False)  # the module's name, before builtins'
    binding = ExitWatched(lambda: freed_at_exit.append(sum(ref() is None for ref in made)))
    monkeypatch.setattr(uring_chains, "chains_binding", lambda: binding)
    with Server(holding) as server:
        result = drive("io_uring", server.address, Flag(lambda: server.has_accepted(4)), requests=100, slots=4)
    assert result["errors"] == {ABORTED: 4}
    assert len(made) >= 2 * 4 and freed_at_exit == [0]


@pytest.fixture
def no_liburing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def missing() -> object:
        raise ImportError("No module named 'liburing'")

    drivers.chains_unavailable.cache_clear()
    monkeypatch.setattr(drivers, "chains_binding", missing)
    yield
    drivers.chains_unavailable.cache_clear()


def test_without_liburing_the_chains_say_what_to_install(no_liburing: None) -> None:
    assert "needs liburing 2024.5.3: pip install" in (drivers.chains_unavailable() or "")
