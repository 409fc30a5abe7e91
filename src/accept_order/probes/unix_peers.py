"""Which Unix socket is connected to which: the kernel's answer over NETLINK_SOCK_DIAG (as `ss -xp` asks).

A master and its workers talk over socketpairs (nginx's channels, Node's cluster IPC, an acceptor that
passes descriptors): each end is a `socket:[INODE]` in one process's fd table, and only the kernel knows
which inode is the other end. One dump of every Unix socket with UDIAG_SHOW_PEER answers for all of them.
The dump covers the network namespace of the netlink socket: ask from inside the server's.

Not every Unix connection between a server's processes is a socketpair: a helper that listens on a named Unix
socket of its own (h2o's neverbleed, the child that keeps the TLS private key and signs for the event loops)
is connected to by the server, and each end it accepted carries its listener's name (`unix_names`).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from .netlink_diag import NLATTR, attribute_at, diag_messages, message, open_diag_socket

UDIAG_SHOW_NAME = 0x1
UDIAG_SHOW_PEER = 0x4
UNIX_DIAG_NAME = 0
UNIX_DIAG_PEER = 2
_TCP_LISTEN = 10  # a listening Unix socket's udiag_state, as a TCP listener's
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


@dataclass(frozen=True)
class UnixNames:
    """The named Unix sockets of a network namespace: `listening`: name -> the inodes listening on it;
    `name_of`: inode -> its name, for every named socket (an accepted end carries its listener's)."""

    listening: dict[bytes, frozenset[int]]
    name_of: dict[int, bytes]

    def accepted_from_own(self, ends: set[int], held: set[int]) -> bool:
        """Every socket of `ends` was accepted from a listener among `held` (one process's sockets): the
        process at these ends is the server of the ones at the other, which connected to it."""
        return bool(ends) and all(
            (name := self.name_of.get(end)) is not None and bool(self.listening.get(name, frozenset()) & held)
            for end in ends
        )


def unix_names() -> UnixNames:
    """One dump of every Unix socket's name and state. OSError when netlink cannot be asked."""
    listening: dict[bytes, set[int]] = {}
    name_of: dict[int, bytes] = {}
    body = _REQ.pack(socket.AF_UNIX, 0, 0, _EVERY_STATE, 0, UDIAG_SHOW_NAME, _NO_COOKIE, _NO_COOKIE)
    with open_diag_socket() as sock:
        for data, start, end in diag_messages(sock, message(body, seq=2), seq=2):
            payload = data[start:end]
            if len(payload) < _MSG.size:
                continue
            _, _, state, _, inode, _, _ = _MSG.unpack_from(payload, 0)
            at = attribute_at(payload, UNIX_DIAG_NAME, 1, _MSG.size)
            if at is None:
                continue  # unnamed: a socketpair's end, or a socket never bound
            length = NLATTR.unpack_from(payload, at - NLATTR.size)[0] - NLATTR.size
            name = bytes(payload[at : at + length])
            name_of[inode] = name
            if state == _TCP_LISTEN:
                listening.setdefault(name, set()).add(inode)
    return UnixNames({name: frozenset(inodes) for name, inodes in listening.items()}, name_of)
