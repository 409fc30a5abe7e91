"""Which worker holds each of a filled pool's connections, where the replies name none (an attached server that
does not name itself): the attribution's `from_socket` (servers/attached_owners.py: the worker whose fd table
holds the accepted socket, found by inet_diag and /proc), asked once per connection after the fill, when every
connection has been accepted and answered once and stays with its worker for the rest of the load. The later
requests over a connection whose holder was found are then counted for that worker (loads/kept.py)."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

UNNAMED = -1  # the worker core/target.py's KnownReplies gives a reply that names none


def holders(attribution: Any, sockets: Mapping[int, socket.socket]) -> dict[int, int]:
    """fd -> the index of the worker holding the server side of that connection, for those found (one whose
    server side is gone, or held by no worker of the server, is left out). {} where the attribution holds no
    socket (the replies name the worker)."""
    if not getattr(attribution, "holds_socket", False):
        return {}
    found: dict[int, int] = {}
    try:
        for fd, sock in sockets.items():
            try:
                owner = attribution.from_socket(sock.getsockname(), sock.getpeername())
            except OSError:  # closed by the server meanwhile: not connected any more
                continue
            if owner is not None:
                found[fd] = owner
    finally:
        close = getattr(attribution, "close", None)
        if close is not None:
            close()  # the lookups' netlink socket: this process needs it no more
    return found
