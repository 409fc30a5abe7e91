"""observe's 'the server's own listeners dropped N' (69dc5bb) read each listener's sk_drops, which counts the
handshake-ending ACK a listener with TCP_DEFER_ACCEPT drops, one a connection: Apache event (Debian's, its default
AcceptFilter) under wrk -H 'Connection: close', its listen queue empty at each of 48 samples, beside a backlog-1
listener of another program that overflowed, read '8 handshake packets met a full listen queue ...; the server's
own listeners dropped 3,903' (3,903 connections accepted; ss -ltm's d grew as much, nstat's ListenDrops 8). Where
their count grew more than the namespace's ListenDrops, which every listen drop counts in, it is said as a bound."""

from __future__ import annotations

import socket

from observe_result_made import result

from accept_order.experiments.observe.verdict import kernel
from accept_order.probes.listeners import listener_drops

CONNECTIONS = 5


def _line(listener_drops: int, listen_drops: int | None) -> str:
    counted = {"TcpExtListenOverflows": 8} | ({} if listen_drops is None else {"TcpExtListenDrops": listen_drops})
    made = result([5, 5], counters=counted, listener_drops=listener_drops)
    return next(line for line in kernel(made) if "met a full listen queue" in line)


def test_more_than_listen_drops_is_said_as_a_bound() -> None:
    said = _line(3903, 8)
    assert "dropped at most 8 of them: their count grew 3,903, more than the namespace's ListenDrops (+8)" in said
    assert "3,895 or more were not a full queue's" in said and "TCP_DEFER_ACCEPT" in said, said
    assert _line(4, 8).endswith("the server's own listeners dropped 4")  # within the bound: as it was
    assert _line(0, 8).endswith("the server's own listeners dropped none")
    assert _line(4, None).endswith("the server's own listeners dropped 4")  # a file without ListenDrops


def test_a_deferring_listener_drops_a_packet_per_connection() -> None:
    """The kernel's side of it: each connection to a TCP_DEFER_ACCEPT listener that sends data adds to its sk_drops
    (ss -ltm's d) though its queue never fills (backlog 64, each accepted at once)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    with listener:
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 5)
        port = listener.getsockname()[1]
        before = listener_drops(port, "127.0.0.1")
        for _ in range(CONNECTIONS):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
                client.sendall(b"GET / HTTP/1.0\r\n\r\n")
                listener.settimeout(10)
                listener.accept()[0].close()
        after = listener_drops(port, "127.0.0.1")
    assert before is not None and after is not None
    assert after - before >= CONNECTIONS, (before, after)
