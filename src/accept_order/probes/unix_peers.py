"""Which Unix socket is connected to which: the kernel's answer over NETLINK_SOCK_DIAG (as `ss -xp` asks).

A master and its workers talk over socketpairs (nginx's channels, Node's cluster IPC, an acceptor that
passes descriptors): each end is a `socket:[INODE]` in one process's fd table, and only the kernel knows
which inode is the other end. One dump of every Unix socket with UDIAG_SHOW_PEER answers for all of them.
The dump covers the network namespace of the netlink socket: ask from inside the server's.
"""

from __future__ import annotations

import socket
import struct

from .netlink_diag import attribute_at, diag_messages, message, open_diag_socket

UDIAG_SHOW_PEER = 0x4
UNIX_DIAG_PEER = 2
_REQ = struct.Struct("=BBHIIIII")  # family, protocol, pad, states, ino, show, cookie[2]
_MSG = struct.Struct("=BBBBIII")  # family, type, state, pad, ino, cookie[2]
_EVERY_STATE = 0xFFFFFFFF
_NO_COOKIE = 0xFFFFFFFF


def _parse(payload: bytes, peers: dict[int, int]) -> None:
    if len(payload) < _MSG.size:
        return
    inode = _MSG.unpack_from(payload, 0)[4]
    at = attribute_at(payload, UNIX_DIAG_PEER, 4, _MSG.size)
    if at is not None and (peer := struct.unpack_from("=I", payload, at)[0]):
        peers[inode] = peer


def unix_peers() -> dict[int, int]:
    """inode -> its peer's inode, for every connected Unix socket of this network namespace.
    OSError when netlink cannot be asked (not Linux, a sandbox)."""
    peers: dict[int, int] = {}
    body = _REQ.pack(socket.AF_UNIX, 0, 0, _EVERY_STATE, 0, UDIAG_SHOW_PEER, _NO_COOKIE, _NO_COOKIE)
    with open_diag_socket() as sock:
        for data, start, end in diag_messages(sock, message(body, seq=1), seq=1):
            _parse(data[start:end], peers)
    return peers
