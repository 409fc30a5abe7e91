"""Each TCP socket of a server as the kernel destroys it, with its final counters: the sock_diag multicast
groups SKNLGRP_INET_TCP_DESTROY and SKNLGRP_INET6_TCP_DESTROY (NETLINK_SOCK_DIAG, `ss -E`).

When a TCP socket is freed the kernel sends, to every netlink socket of its network namespace that joined
those groups, one message laid out as an inet_diag dump's reply (SOCK_DIAG_BY_FAMILY, sequence 0): its
family, state (7, closed), ports, cookie (the same one inet_diag's dumps give it) and INET_DIAG_INFO, its
tcp_info as it was at the end. So probes/tcp_info.py's Decoder reads them. The inode is 0 (the socket has
left every fd table by then). The message comes from a workqueue after the socket left the kernel's
tables: a socket missing from a dump may still be announced a little later.

Who may join: the groups are open to any user (net/core/sock_diag.c creates the kernel socket with
NL_CFG_F_NONROOT_RECV; checked here, Linux 6.18: `nobody` joins and is told of every close). A server in
another network namespace is joined from inside it (setns, which needs CAP_SYS_ADMIN): the socket made
there keeps that namespace after its thread leaves.

What is announced is every TCP socket of the namespace (the clients' too, on one machine), not only the
server's: a classic BPF filter on the socket keeps those whose local port is one of the server's, in the
kernel, before they take room in the buffer (netlink's broadcast runs the receiver's sk_filter first); the
Decoder filters by port again (a kernel without the filter, or more ports than a filter can hold). A
reader thread empties the buffer every PACE_S, so that a burst of closes waits there, not in a wakeup of
ours per close. When the buffer is full anyway the kernel drops the message, counts it (SO_MEMINFO's
drops) and says ENOBUFS at the next read: counted (`overflows`, `dropped`), never fatal.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Sequence

from .listeners import NETLINK_SOCK_DIAG
from .server_netns import in_namespace_of
from .tcp_info import _ATTR_INFO, _HEAD, INET_DIAG_INFO, Decoder, TcpSocket

SKNLGRP_INET_TCP_DESTROY = 1  # linux/sock_diag.h; a group g is bit g - 1 of the bind address's groups
SKNLGRP_INET6_TCP_DESTROY = 3
GROUPS = 1 << (SKNLGRP_INET_TCP_DESTROY - 1) | 1 << (SKNLGRP_INET6_TCP_DESTROY - 1)
RCVBUF = 16 << 20  # bytes asked for the buffer (SO_RCVBUFFORCE as root; else up to net.core.rmem_max)
PACE_S = 0.02  # the reader empties the buffer this often while closes come
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SO_ATTACH_FILTER = getattr(socket, "SO_ATTACH_FILTER", 26)
SO_MEMINFO = getattr(socket, "SO_MEMINFO", 55)
SK_MEMINFO_DROPS = 8  # linux/sock_diag.h: its index in SO_MEMINFO's u32s
_READ = 1 << 16  # one message per read (each is ~380 bytes): room for any
_SPORT_AT = 16 + 4  # nlmsghdr, then inet_diag_msg's family, state, timer, retrans: idiag_sport (network order)
_FILTER = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k
_BPF_LDH_ABS, _BPF_JEQ_K, _BPF_RET_K = 0x28, 0x15, 0x06
_MAX_FILTERED = 250  # a jump's offset is 8 bits
# The fast path: a message as this kernel lays it out (header, inet_diag_msg, INET_DIAG_PROTOCOL's 8 bytes, then
# INET_DIAG_INFO) in one unpack; any other layout goes through the Decoder. Measured here (5,000 queued): a
# message read and decoded in 5.7-5.9 us of CPU this way, 6.5-7.2 us through the Decoder; the read alone 2.2-2.8.
_PROTOCOL = struct.Struct("=HH4x")
_ANNOUNCED = struct.Struct(_HEAD.format + _PROTOCOL.format[1:] + _ATTR_INFO.format[1:])
_BY_FAMILY = 20  # SOCK_DIAG_BY_FAMILY: an announcement's type
_PROTOCOL_ATTR = 10  # INET_DIAG_PROTOCOL; its value, the protocol, is one byte padded to 4


def port_filter(ports: Sequence[int]) -> bytes:
    """Classic BPF that keeps a message whose idiag_sport is one of `ports` (a halfword load reads it in
    network order, as the port is written) and drops the rest: load; one test per port jumping to `keep`;
    drop; keep."""
    count = len(ports)
    code = [_FILTER.pack(_BPF_LDH_ABS, 0, 0, _SPORT_AT)]
    code += [_FILTER.pack(_BPF_JEQ_K, count - index, 0, port) for index, port in enumerate(ports)]
    code += [_FILTER.pack(_BPF_RET_K, 0, 0, 0), _FILTER.pack(_BPF_RET_K, 0, 0, 0xFFFFFFFF)]
    return b"".join(code)


def _attach(sock: socket.socket, ports: Sequence[int]) -> bool:
    """The port filter on `sock`; False where the kernel refused it (then the Decoder's filter alone)."""
    if not 0 < len(ports) <= _MAX_FILTERED:
        return False
    code = port_filter(ports)
    program = ctypes.create_string_buffer(code, len(code))  # the kernel copies it during setsockopt
    fprog = struct.pack("HL", len(code) // _FILTER.size, ctypes.addressof(program))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    except OSError:
        return False
    return True


def _subscribe(ports: Sequence[int], rcvbuf: int) -> tuple[socket.socket, bool]:
    """A netlink socket of this thread's namespace joined to both groups, filtered, with its buffer."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    try:
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
        except OSError:  # not CAP_NET_ADMIN: the most net.core.rmem_max allows
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        filtered = _attach(sock, ports)
        sock.bind((0, GROUPS))
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock, filtered


class DestroyWatch:
    """The server's TCP sockets as the kernel destroys them (see the module doc): made, it has joined
    (PermissionError or OSError when it cannot); start() runs the reader thread (or call drain() yourself);
    take() hands over the sockets announced since the last take; close() leaves."""

    def __init__(self, ports: Sequence[int], netns_pid: int | None = None, rcvbuf: int = RCVBUF) -> None:
        if not ports or any(not 0 < port < 65536 for port in ports):
            raise ValueError(f"ports must be in 1..65535, got {list(ports)}")
        self.ports = frozenset(ports)
        ask = lambda: _subscribe(sorted(self.ports), rcvbuf)  # noqa: E731
        self.sock, self.filtered = ask() if netns_pid is None else in_namespace_of(netns_pid, ask)
        self.rcvbuf = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)  # what the kernel granted
        self.read = 0  # the server's sockets announced and read
        self.overflows = 0  # reads that said ENOBUFS: the buffer had been full, messages were dropped
        self.cpu_s = 0.0  # the reader thread's CPU (user and system) so far
        self._decoder = Decoder(0, self.ports, [])
        self._buffer = bytearray(_READ)
        self._events: list[TcpSocket] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._dropped: int | None = None  # the count as the socket closed

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="accept-order-closes", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        began = time.thread_time()
        try:
            while not self._stop.is_set():
                select.select([self.sock.fileno(), self._wake_r], [], [])
                if self._stop.is_set():
                    return
                self.drain()
                self._stop.wait(PACE_S)  # closes gather in the buffer meanwhile: read in batches
        except (OSError, ValueError):
            return  # closed under us
        finally:
            self.cpu_s += time.thread_time() - began

    def drain(self) -> int:
        """Read every message queued now; returns how many of the server's sockets they announced."""
        found: list[TcpSocket] = []
        self._decoder.out = found
        buffer, recv_into, unpack = self._buffer, self.sock.recv_into, _ANNOUNCED.unpack_from
        ports, size, append, info_size = self._decoder.ports, _ANNOUNCED.size, found.append, _ATTR_INFO.size
        while True:
            try:
                got = recv_into(buffer)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise
                self.overflows += 1  # the kernel dropped some (counted in `dropped`); the rest still come
                continue
            if got >= size:
                (length, mtype, _f, _q, _p, _a, state, sport, low, high, inode, _l, ptype, alen, atype, recv_ms, acked,
                 received, segs_in, segs_out) = unpack(buffer)  # fmt: skip
                if length == got and mtype == _BY_FAMILY and ptype == _PROTOCOL_ATTR and atype == INET_DIAG_INFO:
                    if sport in ports and alen >= info_size:
                        append(
                            TcpSocket(
                                low | high << 32,
                                inode,
                                state,
                                ports[sport],
                                received,
                                acked,
                                segs_in,
                                segs_out,
                                recv_ms,
                            )
                        )
                    continue
            self._decoder.read(buffer, got)
        with self._lock:
            self._events.extend(found)
            self.read += len(found)
        return len(found)

    def take(self) -> list[TcpSocket]:
        """The sockets announced (and read) since the last call, in the order they came."""
        with self._lock:
            taken, self._events = self._events, []
        return taken

    @property
    def dropped(self) -> int:
        """Messages the kernel dropped for this socket, its buffer full (0 where it cannot say). With the
        port filter, only the server's sockets' are counted; without it, every close of the namespace's."""
        if self._dropped is not None:
            return self._dropped
        try:
            info = self.sock.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 4 * (SK_MEMINFO_DROPS + 1))
        except OSError:
            return 0
        return int(struct.unpack_from("=I", info, 4 * SK_MEMINFO_DROPS)[0]) if len(info) >= 36 else 0

    def close(self) -> None:
        """Stop the reader and leave the groups. Safe to call twice."""
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            os.write(self._wake_w, b"x")
            self._thread.join()
        if self._wake_r >= 0:
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1
        if self._dropped is None:
            self._dropped = self.dropped
        self.sock.close()
