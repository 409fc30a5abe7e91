"""The network as tests use it: whether IPv6 loopback works here (needs_ipv6 skips where not), HTTP/1.0 requests
to a launched server that read which worker answered, and a port whose listener never accepts (the fixture
silent_port, which conftest's import registers for every test), and the pid a reply by a server started by hand names
(pid_answering). Tests import the helpers from conftest too."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from accept_order.core.protocol import parse_reply


def ipv6_loopback_works() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
            sock.listen(1)
            with socket.create_connection(sock.getsockname()[:2], timeout=2):
                pass
    except OSError:
        return False
    return True


needs_ipv6 = pytest.mark.skipif(not ipv6_loopback_works(), reason="IPv6 loopback (::1) does not work here")


HTTP_REQUEST = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"


def http_fetch(address: tuple[str, int]) -> tuple[int, int]:
    """One HTTP/1.0 request to a launched server: (the worker the reply names, our client port), the pair
    its own request log must hold."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(HTTP_REQUEST)
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
        parsed = parse_reply(reply.partition(b"\r\n\r\n")[2])
        assert parsed is not None and parsed[1] is not None, reply
        return parsed[1], sock.getsockname()[1]


def http_fetch_many(address: tuple[str, int], requests: int = 40, threads: int = 8) -> list[tuple[int, int]]:
    """`requests` of http_fetch, `threads` at a time."""
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda _: http_fetch(address), range(requests)))


def pid_answering(port: int) -> int:
    """One HTTP/1.1 request to 127.0.0.1:`port` on a connection of its own: the pid its reply names, as its last word
    (a server the test started by hand answering 'pid N', or HAProxy's 'worker T pid N')."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/")
        return int(connection.getresponse().read().split()[-1])
    finally:
        connection.close()


# Connections the silent listener's queue holds: more than any test's load has in flight (a ramp's --in-flight 4, a
# driver's 6), so each waits in the queue for its answer rather than for a SYN sent again
SILENT_BACKLOG = 64


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 whose listener never accepts: the kernel completes each handshake into its queue, and the
    client waits its --timeout for an answer that never comes (as it waits on an HTTP server under --protocol
    line); the kernel guarantees no byte comes, so every connection that finishes has failed."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(SILENT_BACKLOG)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
