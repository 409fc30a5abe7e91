"""Which Unix socket is connected to which: the kernel's answer over NETLINK_SOCK_DIAG (as `ss -xp` asks).

A master and its workers talk over socketpairs (nginx's channels, Node's cluster IPC, an acceptor that
passes descriptors): each end is a `socket:[INODE]` in one process's fd table, and only the kernel knows
which inode is the other end. One dump of every Unix socket with UDIAG_SHOW_PEER answers for all of them.
The dump covers the network namespace of the netlink socket: ask from inside the server's.
"""

from __future__ import annotations

import errno
import socket
import struct

from .listeners import (
    _NETLINK_TIMEOUT,
    _NLMSGHDR,
    NETLINK_SOCK_DIAG,
    NLM_F_DUMP,
    NLM_F_REQUEST,
    NLMSG_DONE,
    NLMSG_ERROR,
    SOCK_DIAG_BY_FAMILY,
)

UDIAG_SHOW_PEER = 0x4
UNIX_DIAG_PEER = 2
_REQ = struct.Struct("=BBHIIIII")  # family, protocol, pad, states, ino, show, cookie[2]
_MSG = struct.Struct("=BBBBIII")  # family, type, state, pad, ino, cookie[2]
_RTA = struct.Struct("=HH")  # rta_len, rta_type


def _parse(payload: bytes, peers: dict[int, int]) -> None:
    if len(payload) < _MSG.size:
        return
    inode = _MSG.unpack_from(payload, 0)[4]
    offset = _MSG.size
    while offset + _RTA.size <= len(payload):
        length, kind = _RTA.unpack_from(payload, offset)
        if length < _RTA.size:
            break
        if kind == UNIX_DIAG_PEER and length >= _RTA.size + 4:
            (peer,) = struct.unpack_from("=I", payload, offset + _RTA.size)
            if peer:
                peers[inode] = peer
        offset += (length + 3) & ~3


def unix_peers() -> dict[int, int]:
    """inode -> its peer's inode, for every connected Unix socket of this network namespace.
    OSError when netlink cannot be asked (not Linux, a sandbox)."""
    peers: dict[int, int] = {}
    af_netlink = getattr(socket, "AF_NETLINK", None)
    if af_netlink is None:
        raise OSError(errno.EAFNOSUPPORT, "AF_NETLINK is not available on this platform")
    with socket.socket(af_netlink, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as sock:
        sock.settimeout(_NETLINK_TIMEOUT)
        sock.bind((0, 0))
        body = _REQ.pack(socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0, UDIAG_SHOW_PEER, 0xFFFFFFFF, 0xFFFFFFFF)
        header = _NLMSGHDR.pack(_NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
        sock.send(header + body)
        while True:
            data = sock.recv(1 << 16)
            if not data:
                raise OSError(errno.EPROTO, "netlink socket closed during dump")
            offset = 0
            while offset + _NLMSGHDR.size <= len(data):
                length, mtype, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, offset)
                if length < _NLMSGHDR.size:
                    raise OSError(errno.EPROTO, f"bad netlink message length {length}")
                payload = data[offset + _NLMSGHDR.size : offset + length]
                offset += (length + 3) & ~3
                if mtype == NLMSG_DONE:
                    return peers
                if mtype == NLMSG_ERROR:
                    (err,) = struct.unpack_from("=i", payload, 0)
                    if err:
                        raise OSError(-err, "unix_diag dump failed")
                elif mtype == SOCK_DIAG_BY_FAMILY:
                    _parse(payload, peers)
