"""NETLINK_SOCK_DIAG as `ss` speaks it, shared by the probes that ask the kernel about sockets: its constants and
message layouts (linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h), a bound socket to ask on, an inet_diag
dump request, and one loop over a dump's replies. inet_diag's users: listeners.py (the listeners), sockets.py (the
count per state), owner.py (one connection's socket, a lookup of its own: no dump); unix_diag's: unix_peers.py.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
from collections.abc import Iterator

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20  # the request and reply type of every family: inet_diag, unix_diag
NLM_F_REQUEST = 0x1
NLM_F_ROOT = 0x100
NLM_F_MATCH = 0x200
NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH
NLMSG_ERROR = 2
NLMSG_DONE = 3
TCP_LISTEN = 10

NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
# inet_diag_sockid: sport, dport (big endian), src[16], dst[16], if, cookie[2] (host order)
SOCKID_BE = struct.Struct("!HH16s16s")
SOCKID_TAIL = struct.Struct("=III")
SOCKID_SIZE = SOCKID_BE.size + SOCKID_TAIL.size  # 48
# inet_diag_req_v2: family, protocol, ext, pad, states, then the sockid
REQ_V2 = struct.Struct("=BBBBI")
# inet_diag_msg: family, state, timer, retrans, sockid, expires, rqueue, wqueue, uid, inode
MSG_HEAD = struct.Struct("=BBBB")
MSG_TAIL = struct.Struct("=IIIII")
MSG_SIZE = MSG_HEAD.size + SOCKID_SIZE + MSG_TAIL.size  # 72
NLATTR = struct.Struct("=HH")  # rtattr: len, type
RECV_BUFSIZE = 1 << 16
NETLINK_TIMEOUT = 2.0  # a kernel that never answers must not hang the caller
NO_COOKIE = 0xFFFFFFFF  # INET_DIAG_NOCOOKIE: no socket named by its cookie


def attribute_at(data: bytes | bytearray | memoryview, kind: int, size: int, offset: int = 0) -> int | None:
    """Where the payload of the first attribute of `kind` with at least `size` bytes of it begins, in the attributes
    of `data` from `offset` on (after a message's fixed part); None if there is none, or the list is cut short."""
    while offset + NLATTR.size <= len(data):
        length, found = NLATTR.unpack_from(data, offset)
        if length < NLATTR.size:
            return None
        if found == kind and length >= NLATTR.size + size:
            return offset + NLATTR.size
        offset += (length + 3) & ~3  # RTA_ALIGN
    return None


def open_diag_socket() -> socket.socket:
    """A NETLINK_SOCK_DIAG socket, bound, with NETLINK_TIMEOUT on every call; it asks about this network namespace.
    OSError where netlink cannot be asked (not Linux, a sandbox)."""
    af_netlink = getattr(socket, "AF_NETLINK", None)
    if af_netlink is None:
        raise OSError(errno.EAFNOSUPPORT, "AF_NETLINK is not available on this platform")
    sock = socket.socket(af_netlink, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    try:
        sock.settimeout(NETLINK_TIMEOUT)
        sock.bind((0, 0))
    except OSError:
        sock.close()
        raise
    return sock


def message(body: bytes, seq: int, flags: int = NLM_F_REQUEST | NLM_F_DUMP) -> bytes:
    """A SOCK_DIAG_BY_FAMILY request of `body` (a dump, unless `flags` say otherwise)."""
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY, flags, seq, 0) + body


def diag_request(family: int, port: int, seq: int, states: int = 1 << TCP_LISTEN, ext: int = 0) -> bytes:
    """An inet_diag dump of the TCP sockets of `family` in `states` (a bitmask: bit n, state n) on source `port`
    (0: any); `ext`: the attributes asked besides (idiag_ext, bit n-1 for attribute n: INET_DIAG_SKMEMINFO's 1 << 6)."""
    sockid = SOCKID_BE.pack(port, 0, b"", b"") + SOCKID_TAIL.pack(0, NO_COOKIE, NO_COOKIE)
    return message(REQ_V2.pack(family, socket.IPPROTO_TCP, ext, 0, states) + sockid, seq)


def diag_messages(
    sock: socket.socket, request: bytes, seq: int, bufsize: int = RECV_BUFSIZE
) -> Iterator[tuple[bytes, int, int]]:
    """Send a sock_diag dump `request` and yield each reply to `seq` as (data, start, end), its message (an
    inet_diag_msg, a unix_diag_msg) being data[start:end] (not copied: a dump of 47,000 sockets reads one byte of
    each), until the kernel's NLMSG_DONE. OSError for the kernel's error, a closed socket or a malformed message;
    replies to other requests are skipped."""
    sock.send(request)
    while True:
        data = sock.recv(bufsize)
        if not data:
            raise OSError(errno.EPROTO, "netlink socket closed during dump")
        offset = 0
        while offset + NLMSGHDR.size <= len(data):
            length, mtype, _flags, mseq, _pid = NLMSGHDR.unpack_from(data, offset)
            if length < NLMSGHDR.size or offset + length > len(data):
                raise OSError(errno.EPROTO, f"bad netlink message length {length}")
            start, end = offset + NLMSGHDR.size, offset + length
            offset += (length + 3) & ~3  # NLMSG_ALIGN
            if mseq != seq:
                continue  # stale reply to an earlier request
            if mtype == NLMSG_DONE:
                return
            if mtype == NLMSG_ERROR:
                (err,) = struct.unpack_from("=i", data, start)
                if err:  # 0: an ACK, not an error
                    raise OSError(-err, f"sock_diag dump failed: {os.strerror(-err)}")
            elif mtype == SOCK_DIAG_BY_FAMILY:
                yield data, start, end
