"""Whether a TCP connection to or from a port exists, asked of the kernel with a filter it runs itself.

/proc/net/tcp lists every socket of the namespace: this machine's host namespace holds 30,000-40,000 TIME_WAITs
while the suite runs (every test's connections), and one read of it cost ~90 ms of system CPU plus ~100 ms to
parse in Python (test_kind_contract polled it every 10 ms). A NETLINK_SOCK_DIAG dump with a bytecode filter
(sport or dport equal to the port: what `ss '( sport = :P or dport = :P )'` sends) makes the kernel skip the
rest and send back only the port's sockets. Layouts as in linux/inet_diag.h and the product's probes/listeners.py.
"""

from __future__ import annotations

import socket
import struct

from accept_order.probes.netlink_diag import NETLINK_SOCK_DIAG, NLM_F_DUMP, NLM_F_REQUEST, SOCK_DIAG_BY_FAMILY

NLMSG_ERROR, NLMSG_DONE = 2, 3
# The states of a connection, TIME_WAIT (6) included (linux/tcp_states.h): not CLOSE (7), LISTEN (10) nor 13, the
# dump's pseudo-state for a socket bound and never connected (a server's between bind and listen; Linux >= 6.9),
# which /proc/net/tcp does not list either
CONNECTIONS = sum(1 << state for state in (1, 2, 3, 4, 5, 6, 8, 9, 11, 12))
INET_DIAG_REQ_BYTECODE = 1
# inet_diag_bc_op codes
BC_JMP, BC_S_GE, BC_S_LE, BC_D_GE, BC_D_LE = 1, 2, 3, 4, 5

_NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
_REQ_V2 = struct.Struct("=BBBBI")  # family, protocol, ext, pad, states
# inet_diag_sockid: both ports and addresses zero (a dump: the filter chooses), no interface, no cookie
_SOCKID = bytes(2 + 2 + 16 + 16) + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
_OP = struct.Struct("=BBH")  # code, yes, no (byte offsets from this op)
_NLATTR = struct.Struct("=HH")  # len, type


def _port_filter(port: int) -> bytes:
    """sport == port or dport == port, as inet_diag bytecode. Each op goes `yes` or `no` bytes on; the end of the
    program is a match, 4 bytes past it a miss. The kernel's audit follows the `yes` chain only, so every op is
    reached by it (the JMP between the two halves has yes=4, and a JMP always takes `no`)."""
    ops = [
        _OP.pack(BC_S_GE, 8, 20) + _OP.pack(0, 0, port),  # @0: sport >= P, or try dport (@20)
        _OP.pack(BC_S_LE, 8, 12) + _OP.pack(0, 0, port),  # @8: sport <= P, or try dport (@20)
        _OP.pack(BC_JMP, 4, 20),  # @16: sport == P: to the end (@36), a match
        _OP.pack(BC_D_GE, 8, 20) + _OP.pack(0, 0, port),  # @20: dport >= P, or a miss (@40)
        _OP.pack(BC_D_LE, 8, 12) + _OP.pack(0, 0, port),  # @28: dport <= P (@36, a match), or a miss (@40)
    ]
    return b"".join(ops)


def _request(family: int, port: int, seq: int) -> bytes:
    program = _port_filter(port)
    body = _REQ_V2.pack(family, socket.IPPROTO_TCP, 0, 0, CONNECTIONS) + _SOCKID
    body += _NLATTR.pack(_NLATTR.size + len(program), INET_DIAG_REQ_BYTECODE) + program
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body


def _any_socket(sock: socket.socket, family: int, port: int, seq: int) -> bool:
    """One family's dump: whether it held a socket (read to its end, so the next dump starts clean)."""
    sock.send(_request(family, port, seq))
    found = False
    while True:
        data = sock.recv(1 << 16)
        offset = 0
        while offset + _NLMSGHDR.size <= len(data):
            length, kind, _flags, got_seq, _pid = _NLMSGHDR.unpack_from(data, offset)
            if length < _NLMSGHDR.size:
                raise OSError(f"bad netlink message length {length}")
            if got_seq == seq:
                if kind == NLMSG_DONE:
                    return found
                if kind == NLMSG_ERROR:
                    (err,) = struct.unpack_from("=i", data, offset + _NLMSGHDR.size)
                    if err:
                        raise OSError(-err, "inet_diag dump failed")
                found = found or kind == SOCK_DIAG_BY_FAMILY
            offset += (length + 3) & ~3


def connection_on(port: int) -> bool:
    """A TCP connection with `port` at either end exists in this network namespace (TIME_WAIT too: one that
    existed a moment ago; a listener or a socket only bound is none). OSError where netlink's socket
    diagnostics cannot be had."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as sock:
        sock.settimeout(5.0)
        sock.bind((0, 0))
        return any(
            _any_socket(sock, family, port, seq) for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), 1)
        )
