"""Which worker process holds the server side of a TCP connection, found from outside the server.

`SocketOwners(pids).owner(client_local, client_peer)` takes the client socket's getsockname() and
getpeername() and returns the index (into ``pids``) of the worker whose fd table holds the accepted
socket, or None. Two steps:

1. The server side's inode. The server side of the 4-tuple is (src=client_peer, dst=client_local); one
   non-dump SOCK_DIAG_BY_FAMILY request with that exact inet_diag_sockid returns that one socket (the
   struct layouts are netlink_diag.py's). If netlink is unavailable or fails, /proc/net/tcp{,6} is read.
2. The process holding ``socket:[inode]``: readlink over /proc/PID/fd of each candidate. A listening
   socket is shared by every worker, but an accepted one is held by exactly one, so the first holder is
   the owner.

None means: no such connection, the server side is closed (an orphan or TIME_WAIT has no inode), it is
still in the accept queue (no struct socket, so no inode, until accept()), or no candidate holds it.

`socket_holders(inodes)` answers the other way round, for sockets every process may hold (a listener):
which processes' fd tables hold them.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import sys
from collections.abc import Collection, Iterable, Sequence

from ..core.started import Closing
from .fd_table import FdTables
from .netlink_diag import (
    MSG_HEAD,
    MSG_SIZE,
    MSG_TAIL,
    NLM_F_REQUEST,
    NLMSG_DONE,
    NLMSG_ERROR,
    NLMSGHDR,
    NO_COOKIE,
    RECV_BUFSIZE,
    REQ_V2,
    SOCK_DIAG_BY_FAMILY,
    SOCKID_BE,
    SOCKID_SIZE,
    SOCKID_TAIL,
    TCP_LISTEN,
    message,
    open_diag_socket,
)

Address = tuple[str, int]

_ALL_STATES = 0xFFFFFFFF  # an exact lookup ignores the state filter; ask for all anyway
_PROC_LISTEN = b"0A"  # TCP_LISTEN as /proc/net/tcp prints it
_ERR = struct.Struct("=i")


def _open_netlink() -> socket.socket:
    """A bound NETLINK_SOCK_DIAG socket (a module function so that tests can make it fail)."""
    return open_diag_socket()


def _family_and_host(address: Address) -> tuple[int, str]:
    host = address[0].split("%", 1)[0]  # a link-local scope ("fe80::1%eth0") is not part of the address
    return (socket.AF_INET6 if ":" in host else socket.AF_INET), host


def _proc_hex(family: int, host: str, byteorder: str = sys.byteorder) -> str:
    """An address as /proc/net/tcp{,6} prints it: each 32-bit word as a host-order hex integer
    (the inverse of listeners._proc_address)."""
    raw = socket.inet_pton(family, host)
    if byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return raw.hex().upper()


def proc_server_inode(
    client_local: Address, client_peer: Address, proc_net: str = "/proc/net", byteorder: str = sys.byteorder
) -> int | None:
    """The server side's inode from /proc/net/tcp{,6}; None if absent, listening or without an inode.

    An IPv4 connection accepted on a dual-stack IPv6 socket is listed in tcp6 with v4-mapped
    addresses, so that form is looked for too."""
    family, local_host = _family_and_host(client_peer)  # the server's local end is the client's peer
    _, remote_host = _family_and_host(client_local)
    candidates: list[tuple[str, int, str, str]] = []
    if family == socket.AF_INET:
        candidates.append(("tcp", socket.AF_INET, local_host, remote_host))
        candidates.append(("tcp6", socket.AF_INET6, "::ffff:" + local_host, "::ffff:" + remote_host))
    else:
        candidates.append(("tcp6", socket.AF_INET6, local_host, remote_host))
    for name, af, local, remote in candidates:
        # Every TCP socket of the namespace is a line (TIME_WAIT ones too, possibly 100,000s), so look for
        # the pair of addresses as bytes rather than splitting every line.
        local_end = f"{_proc_hex(af, local, byteorder)}:{client_peer[1]:04X}"
        remote_end = f"{_proc_hex(af, remote, byteorder)}:{client_local[1]:04X}"
        pair = f" {local_end} {remote_end} ".encode()
        try:
            with open(os.path.join(proc_net, name), "rb") as f:
                text = f.read()
        except (FileNotFoundError, NotADirectoryError):
            continue  # e.g. IPv6 disabled
        at = text.find(pair)
        while at >= 0:
            end = text.find(b"\n", at)
            fields = text[at : end if end >= 0 else len(text)].split()
            # fields: local, remote, state, tx:rx, tr:when, retrnsmt, uid, timeout, inode
            if len(fields) > 8 and fields[2] != _PROC_LISTEN:
                return int(fields[8]) or None
            at = text.find(pair, at + 1)
    return None


class SocketOwners(Closing):
    """Attribute connections to candidate worker processes; one netlink socket and one /proc/PID/fd
    directory fd per worker stay open for the object's life (``close()`` or ``with``)."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.pids = list(pids)
        self._seq = 0
        self._buf = bytearray(RECV_BUFSIZE)  # one buffer, so a lookup allocates no 64 KiB per recv
        try:
            self._netlink: socket.socket | None = _open_netlink()
        except OSError:
            self._netlink = None  # sandboxed or not Linux: every lookup reads /proc/net/tcp{,6}
        # A directory fd is tied to the process, not to its number: once the worker is gone, lookups
        # through it fail instead of reading a newcomer that reuses the pid.
        self._dirs: list[int | None] = [self._open_fd_dir(pid) for pid in self.pids]
        # Per worker, the fd names last seen to be sockets: accepted sockets come and go on the same few
        # fd numbers, so trying those first usually finds the owner without listing any fd table.
        self._socket_fds: list[list[str]] = [[] for _ in self.pids]

    @staticmethod
    def _open_fd_dir(pid: int) -> int | None:
        try:
            return os.open(f"/proc/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None  # vanished (or not ours to read): skipped for good

    def close(self) -> None:
        if self._netlink is not None:
            self._netlink.close()
            self._netlink = None
        for i, fd in enumerate(self._dirs):
            if fd is not None:
                os.close(fd)
                self._dirs[i] = None

    # -- step 1: the server side's inode -------------------------------------------------------------
    def server_inode(self, client_local: Address, client_peer: Address) -> int | None:
        """The inode of the server-side socket of this connection, or None (see the module docstring)."""
        if self._netlink is not None:
            try:
                return self._netlink_inode(self._netlink, client_local, client_peer)
            except OSError:
                pass  # timed out, refused or garbled: /proc/net still knows
        return proc_server_inode(client_local, client_peer)

    def _netlink_inode(self, sock: socket.socket, client_local: Address, client_peer: Address) -> int | None:
        family, src = _family_and_host(client_peer)
        _, dst = _family_and_host(client_local)
        sport, dport = client_peer[1], client_local[1]
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        seq = self._seq
        sockid = SOCKID_BE.pack(sport, dport, socket.inet_pton(family, src), socket.inet_pton(family, dst))
        sockid += SOCKID_TAIL.pack(0, NO_COOKIE, NO_COOKIE)  # matched by the 4-tuple alone
        body = REQ_V2.pack(family, socket.IPPROTO_TCP, 0, 0, _ALL_STATES) + sockid
        # No NLM_F_DUMP: the kernel looks the 4-tuple up and answers with that socket or an error. Not
        # diag_messages: an unknown socket's ENOENT is an answer here, and one buffer serves every lookup.
        sock.send(message(body, seq, NLM_F_REQUEST))
        buf = self._buf
        while True:
            size = sock.recv_into(buf)
            if size == 0:
                raise OSError(errno.EPROTO, "empty netlink reply")
            offset = 0
            while offset + NLMSGHDR.size <= size:
                length, mtype, _flags, mseq, _pid = NLMSGHDR.unpack_from(buf, offset)
                if length < NLMSGHDR.size or offset + length > size:
                    raise OSError(errno.EPROTO, f"bad netlink message length {length}")
                start = offset + NLMSGHDR.size
                offset += (length + 3) & ~3  # NLMSG_ALIGN
                if mseq != seq:
                    continue  # the late answer to a request that timed out earlier
                if mtype == NLMSG_ERROR:
                    (err,) = _ERR.unpack_from(buf, start)
                    if err == 0:
                        continue  # an ACK (not asked for), not an answer
                    if err == -errno.ENOENT:
                        return None  # the kernel knows no such socket: authoritative
                    raise OSError(-err, f"inet_diag lookup failed: {os.strerror(-err)}")
                if mtype == NLMSG_DONE:
                    return None
                if mtype == SOCK_DIAG_BY_FAMILY:
                    return self._parse_reply(buf, start, length - NLMSGHDR.size, sport, dport)

    @staticmethod
    def _parse_reply(buf: bytearray, start: int, size: int, sport: int, dport: int) -> int | None:
        if size < MSG_SIZE:
            raise OSError(errno.EPROTO, f"inet_diag_msg too short ({size} bytes)")
        _fam, state, _timer, _retrans = MSG_HEAD.unpack_from(buf, start)
        got_sport, got_dport, _src, _dst = SOCKID_BE.unpack_from(buf, start + MSG_HEAD.size)
        inode = MSG_TAIL.unpack_from(buf, start + MSG_HEAD.size + SOCKID_SIZE)[4]
        # With no established match the kernel's lookup falls back to the listener on that port, which
        # every worker holds: that is not the connection, so anything but the exact pair is no answer.
        if state == TCP_LISTEN or (got_sport, got_dport) != (sport, dport):
            return None
        return inode or None  # 0: orphaned (server closed), TIME_WAIT or not accepted yet

    # -- step 2: the process holding it --------------------------------------------------------------
    def holder(self, inode: int) -> int | None:
        """Index of the first candidate whose fd table holds ``socket:[inode]``, or None."""
        target = f"socket:[{inode}]"
        for i, dir_fd in enumerate(self._dirs):  # the cheap pass: fds that were sockets last time
            if dir_fd is None:
                continue
            for name in self._socket_fds[i]:
                try:
                    if os.readlink(name, dir_fd=dir_fd) == target:
                        return i
                except OSError:
                    continue  # closed since, or the process is gone
        for i, dir_fd in enumerate(self._dirs):  # the full pass, relearning each table's sockets
            if dir_fd is None:
                continue
            try:
                names = os.listdir(dir_fd)
            except (FileNotFoundError, ProcessLookupError):
                os.close(dir_fd)  # the worker has gone; it cannot come back
                self._dirs[i] = None
                continue
            except OSError:
                continue
            sockets: list[str] = []
            found = False
            for name in names:
                try:
                    link = os.readlink(name, dir_fd=dir_fd)
                except OSError:
                    continue  # closed between listdir and readlink
                if link.startswith("socket:"):
                    sockets.append(name)
                    found = found or link == target
            self._socket_fds[i] = sockets
            if found:
                return i
        return None

    def owner(self, client_local: Address, client_peer: Address) -> int | None:
        """Index (into pids) of the worker whose fd table holds the server side of this connection, or None.

        ``client_local`` and ``client_peer`` are the client socket's getsockname() and getpeername()
        (IPv6 4-tuples are fine: only host and port are used)."""
        inode = self.server_inode(client_local, client_peer)
        return None if inode is None else self.holder(inode)


def socket_holders(
    inodes: Collection[int], pids: Iterable[int] | None = None, tables: FdTables | None = None
) -> dict[int, set[int]]:
    """pid -> which of ``inodes`` (sockets) its fd table holds, for every process in /proc (or ``pids``).

    Who holds a listener, as `ss -ltnp` finds it: a listening socket has no owner in the kernel's tables,
    only holders. Processes that vanish while being read, or that this user may not look into, are left
    out (as root, none is). ``tables``: a look's fd tables, read through and kept (each read once a look)."""
    if not inodes:
        return {}
    candidates = pids if pids is not None else (int(name) for name in os.listdir("/proc") if name.isdigit())
    return (tables if tables is not None else FdTables()).holders(inodes, candidates)
