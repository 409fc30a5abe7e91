"""Which worker holds each of a filled pool's connections, where the replies name none (an attached server that
does not name itself: its attribution `holds_socket`, servers/attached_owners.py): found once after the fill,
when every connection has been accepted and answered once and stays with its worker for the rest of the load.
The later requests over a connection whose holder was found are then counted for that worker (loads/kept.py).

As the attribution's own `from_socket` finds one connection's holder (probes/owner.py), but for the whole pool at
once: each connection's server-side inode by one exact inet_diag lookup, then each worker's fd table read once
for all of them. One `from_socket` a connection reads every worker's sockets each time: 1,000 connections at 4
nginx workers took 1.65 s."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

UNNAMED = -1  # the worker core/target.py's KnownReplies gives a reply that names none


def holders(attribution: Any, sockets: Mapping[int, socket.socket]) -> dict[int, int]:
    """fd -> the index (into the attribution's `pids`) of the worker holding the server side of that connection,
    for those found (one whose server side is gone, or that no worker holds, is left out). {} where the
    attribution holds no socket (the replies name the worker)."""
    if not getattr(attribution, "holds_socket", False):
        return {}
    from ..probes.owner import SocketOwners, socket_holders

    pids = tuple(attribution.pids)
    owners = SocketOwners(pids)
    inodes: dict[int, int] = {}
    try:
        for fd, sock in sockets.items():
            try:
                inode = owners.server_inode(sock.getsockname(), sock.getpeername())
            except OSError:  # closed by the server meanwhile: not connected any more
                continue
            if inode is not None:
                inodes[fd] = inode
    finally:
        owners.close()
    held = socket_holders(set(inodes.values()), pids)
    worker = {inode: pids.index(pid) for pid, found in held.items() for inode in found}
    return {fd: worker[inode] for fd, inode in inodes.items() if inode in worker}
