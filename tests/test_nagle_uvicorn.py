"""`latency --server uvicorn --pool` (asyncio loop) over kept connections took ~44 ms a request (p50), uvloop 4 ms,
nginx 0.3 ms. asyncio sets TCP_NODELAY only on sockets made with IPPROTO_TCP; the socket uvicorn's supervisor
binds for --workers is made with protocol 0, so the connections its workers accepted kept Nagle's algorithm, and
h11 writes a reply's headers and body in two writes: the body waited for the client's delayed ACK (40 ms at
least). The tool's uvicorn now has TCP_NODELAY on its listening socket, which accepted sockets inherit.

Asserted: what the kernel says of the connections the workers accepted (TCP_NODELAY, read from the server's side
through pidfd_getfd), and that few requests over a kept connection take the delayed-ACK timer's 40 ms or more
(without it every other one did).
granian (tokio) and gunicorn (which sets TCP_NODELAY on its listener itself; its sync workers keep no connection)
do not share the cause: latency --pool -c 8 p50 0.5 ms for granian on this machine."""

from __future__ import annotations

import ctypes
import os
import socket
import time
from collections.abc import Iterator

import pytest

from accept_order.core.spec import ServerSpec
from accept_order.servers.launched.base import LaunchedServer
from accept_order.servers.launched.uvicorn import uvicorn_missing
from accept_order.servers.registry import runnable, server_kind

if uvicorn_missing():
    pytest.skip(f"uvicorn launched runs: {uvicorn_missing()}", allow_module_level=True)

SYS_PIDFD_GETFD = 438  # x86_64 and the generic table alike
DELAYED_ACK_MIN_S = 0.040  # Linux's TCP_DELACK_MIN: a reply held back by Nagle waits at least this long
REQUEST = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"


def their_socket(pid: int, fd: int) -> socket.socket:
    """A duplicate of descriptor `fd` of process `pid` (pidfd_getfd(2): root, or a ptrace-able process)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        mine = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
    finally:
        os.close(pidfd)
    if mine < 0:
        err = ctypes.get_errno()
        pytest.skip(f"pidfd_getfd({pid}, {fd}): {os.strerror(err)}")
    return socket.socket(fileno=mine)


def server_side_nodelay(pids: list[int], client: tuple[str, int]) -> int | None:
    """TCP_NODELAY of the server's socket connected to `client`, found in the workers' fd tables."""
    for pid in pids:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    continue
            except OSError:
                continue
            with their_socket(pid, int(name)) as sock:
                try:
                    peer = sock.getpeername()
                except OSError:
                    continue
                if peer[:2] == client:
                    return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    return None


def exchange(conn: socket.socket) -> float:
    """One request on a kept connection, read to the end of its body: its seconds."""
    began = time.perf_counter()
    conn.sendall(REQUEST)
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        assert chunk, f"the server closed a kept connection: {data!r}"
        data += chunk
    return time.perf_counter() - began


@pytest.fixture(params=["asyncio", "uvloop"])
def uvicorn(request: pytest.FixtureRequest) -> Iterator[LaunchedServer]:
    if runnable("uvicorn", [request.param])[1]:
        pytest.skip(runnable("uvicorn", [request.param])[1][request.param])
    target = server_kind("uvicorn").make(ServerSpec(kind="uvicorn", mode=request.param, workers=2, keepalive=True))
    assert isinstance(target, LaunchedServer)
    with target as server:
        yield server


def test_the_connections_uvicorn_accepts_have_nodelay_and_answer_before_a_delayed_ack(
    uvicorn: LaunchedServer,
) -> None:
    with socket.create_connection(uvicorn.address, timeout=10) as conn:
        exchange(conn)  # accepted and answered: the worker holds it
        assert server_side_nodelay(list(uvicorn.pids), conn.getsockname()[:2]) == 1
        # the first replies of a connection are ACKed at once (quick-ack mode): the stall showed after them,
        # in every other reply (15 of 30 took 42-47 ms, the others about 1 ms)
        times = [exchange(conn) for _ in range(40)][10:]
    held_back = [t for t in times if t >= DELAYED_ACK_MIN_S]
    assert len(held_back) < len(times) / 4, sorted(times)
