"""A listener made to drop handshake packets, and the kernel's own count of its drops (SO_MEMINFO's 9th u32, the
socket's sk_drops): the witness the listener-drops tests hold the tool's netlink reading against
(tests/test_ramp_listener_drops.py, tests/test_listener_drops_other_netns.py). Imported by name, as conftest's
helpers are."""

from __future__ import annotations

import socket
import struct
import time

SO_MEMINFO = getattr(socket, "SO_MEMINFO", 55)


def own_drops(listener: socket.socket) -> int:
    """The kernel's count on the socket itself."""
    return int(struct.unpack_from("=I", listener.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 36), 32)[0])


def dropped_more(listener: socket.socket) -> None:
    """Connections to `listener` (on 127.0.0.1 or 0.0.0.0, a small backlog, never accepting) until it has dropped one
    more: past its queue, a SYN is dropped at once on loopback. The clients are closed before a SYN is sent again,
    so its count stays where it is after this."""
    port, was = listener.getsockname()[1], own_drops(listener)
    clients = []
    deadline = time.monotonic() + 20
    try:
        while own_drops(listener) == was and time.monotonic() < deadline:
            client = socket.socket()
            client.setblocking(False)
            clients.append(client)
            try:
                client.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
    finally:
        for client in clients:
            client.close()
    assert own_drops(listener) > was
