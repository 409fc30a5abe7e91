"""One connection's conntrack entry, asked of the kernel by its tuple over ctnetlink (as `conntrack -G` asks): where
NAT sent it, without reading the whole table (/proc/net/nf_conntrack, 28,567 entries here: 63 ms of the kernel
formatting them, and more on a busy container host).

The request names the original tuple (source, destination, TCP, ports); the kernel answers with the entry, whose
reply tuple's source is the server NAT chose (itself where nothing rewrote it).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import struct
from collections.abc import Iterator

from accept_order.probes.netlink_messages import NLMSG_ERROR, NLMSGHDR, MalformedReply, messages

NETLINK_NETFILTER = 12
IPCTNL_MSG_CT_NEW, IPCTNL_MSG_CT_GET = (1 << 8) | 0, (1 << 8) | 1  # NFNL_SUBSYS_CTNETLINK
NLM_F_REQUEST = 0x1
NLA_F_NESTED = 0x8000
NFGENMSG = struct.Struct("!BBH")  # family, version, res_id
NLATTR = struct.Struct("=HH")
CTA_TUPLE_ORIG, CTA_TUPLE_REPLY = 1, 2
CTA_TUPLE_IP, CTA_TUPLE_PROTO = 1, 2
CTA_IP_V4_SRC, CTA_IP_V6_SRC = 1, 3  # the destination is the next type of each
CTA_PROTO_NUM, CTA_PROTO_SRC_PORT, CTA_PROTO_DST_PORT = 1, 2, 3
TIMEOUT_S = 2.0  # a kernel that never answers must not hang the caller


class Unanswered(Exception):
    """The kernel would not say (no ctnetlink, not this user's to ask): read the table instead."""


def _attr(kind: int, payload: bytes) -> bytes:
    head = NLATTR.pack(NLATTR.size + len(payload), kind)
    return head + payload + b"\0" * (-len(payload) % 4)


def _attrs(data: bytes) -> Iterator[tuple[int, bytes]]:
    offset = 0
    while offset + NLATTR.size <= len(data):
        length, kind = NLATTR.unpack_from(data, offset)
        if length < NLATTR.size:
            return
        yield kind & 0x3FFF, data[offset + NLATTR.size : offset + length]
        offset += (length + 3) & ~3


def _tuple(source: tuple[str, int], destination: tuple[str, int]) -> bytes:
    src, dst = ipaddress.ip_address(source[0]), ipaddress.ip_address(destination[0])
    first = CTA_IP_V4_SRC if src.version == 4 else CTA_IP_V6_SRC
    ips = _attr(first, src.packed) + _attr(first + 1, dst.packed)
    ports = _attr(CTA_PROTO_NUM, bytes([socket.IPPROTO_TCP]))
    ports += _attr(CTA_PROTO_SRC_PORT, struct.pack("!H", source[1])) + _attr(
        CTA_PROTO_DST_PORT, struct.pack("!H", destination[1])
    )
    return _attr(CTA_TUPLE_IP | NLA_F_NESTED, ips) + _attr(CTA_TUPLE_PROTO | NLA_F_NESTED, ports)


def _source(tuple_attrs: bytes) -> tuple[str, int] | None:
    """A tuple's source address and port."""
    nested = dict(_attrs(tuple_attrs))
    ips, ports = dict(_attrs(nested.get(CTA_TUPLE_IP, b""))), dict(_attrs(nested.get(CTA_TUPLE_PROTO, b"")))
    raw = ips.get(CTA_IP_V4_SRC) or ips.get(CTA_IP_V6_SRC)
    port = ports.get(CTA_PROTO_SRC_PORT, b"")
    if raw is None or len(raw) not in (4, 16) or len(port) != 2:
        return None
    return str(ipaddress.ip_address(raw)), int(struct.unpack("!H", port)[0])


def sent_to(client: tuple[str, int], asked: tuple[str, int]) -> tuple[str, int] | None:
    """Where this namespace's conntrack says the TCP connection from `client` to `asked` went: its reply tuple's
    source; None where it keeps no such entry. Unanswered where the kernel would not say."""
    family = socket.AF_INET if ipaddress.ip_address(client[0]).version == 4 else socket.AF_INET6
    body = NFGENMSG.pack(family, 0, 0) + _attr(CTA_TUPLE_ORIG | NLA_F_NESTED, _tuple(client, asked))
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER) as sock:
            sock.settimeout(TIMEOUT_S)
            sock.bind((0, 0))
            sock.send(NLMSGHDR.pack(NLMSGHDR.size + len(body), IPCTNL_MSG_CT_GET, NLM_F_REQUEST, 1, 0) + body)
            while True:
                data = sock.recv(1 << 16)
                for kind, seq, start, end in messages(data):
                    if seq != 1:
                        continue
                    if kind == NLMSG_ERROR:
                        (err,) = struct.unpack_from("=i", data, start)
                        if -err == errno.ENOENT:
                            return None  # no such entry
                        raise Unanswered(str(-err))
                    if kind == IPCTNL_MSG_CT_NEW:
                        reply = dict(_attrs(data[start + NFGENMSG.size : end])).get(CTA_TUPLE_REPLY)
                        return _source(reply) if reply is not None else None
                if not data:
                    raise Unanswered("the socket closed")
    except MalformedReply as exc:
        raise Unanswered("a malformed reply") from exc
    except OSError as exc:
        raise Unanswered(str(exc)) from exc
