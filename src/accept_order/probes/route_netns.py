"""Which of this machine's network namespaces this one's route to an address goes straight into: the route's
device a veth (no gateway) whose peer lives in that namespace, as `ip route get` and `ip -d link` would say.

Where two namespaces hold the same address (two containers, each 10.0.0.2), this tells which one a connection made
here reaches without making one (probes/landing.py does, and the server counts it). Asked over rtnetlink: the
route (RTM_GETROUTE, the kernel's own lookup, policy rules and all), its device (RTM_GETLINK: its kind and the peer's
namespace id, IFLA_LINK_NETNSID), and the id this namespace gave each holder's namespace (RTM_GETNSID by a pid of
it). A bridge, a gateway or any other device says nothing here: None, and a connection tells.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Iterator, Mapping, Sequence

from accept_order.probes.netlink_messages import NLMSG_ERROR, NLMSGHDR, MalformedReply, messages

NETLINK_ROUTE = 0
RTM_NEWLINK, RTM_GETLINK, RTM_NEWROUTE, RTM_GETROUTE, RTM_NEWNSID, RTM_GETNSID = 16, 18, 24, 26, 88, 90
NLM_F_REQUEST = 0x1
RTMSG = struct.Struct("=BBBBBBBBI")  # family, dst_len, src_len, tos, table, protocol, scope, type, flags
IFINFOMSG = struct.Struct("=BxHiII")  # family, type, index, flags, change
RTGENMSG = struct.Struct("=Bxxx")  # family, padded to 4
NLATTR = struct.Struct("=HH")
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_VIA = 1, 4, 5, 18
RTN_UNICAST = 1
IFLA_LINKINFO, IFLA_INFO_KIND, IFLA_LINK_NETNSID = 18, 1, 37
NETNSA_NSID, NETNSA_PID = 1, 2
TIMEOUT_S = 2.0  # a kernel that never answers must not hang the caller


def _attrs(data: bytes, offset: int, end: int) -> Iterator[tuple[int, bytes]]:
    while offset + NLATTR.size <= end:
        length, kind = NLATTR.unpack_from(data, offset)
        if length < NLATTR.size:
            return
        yield kind & 0x3FFF, data[offset + NLATTR.size : offset + length]
        offset += (length + 3) & ~3


def _ask(sock: socket.socket, kind: int, body: bytes, answer: int, seq: int) -> tuple[bytes, int, int] | None:
    """One request's one reply of type `answer`: (data, start of its body, end); None for the kernel's error."""
    sock.send(NLMSGHDR.pack(NLMSGHDR.size + len(body), kind, NLM_F_REQUEST, seq, 0) + body)
    while True:
        data = sock.recv(1 << 16)
        try:
            for mtype, mseq, start, end in messages(data):
                if mseq == seq and mtype == answer:
                    return data, start, end
                if mseq == seq and mtype == NLMSG_ERROR:
                    return None
        except MalformedReply:
            return None
        if not data:
            return None


def _veth_peer_nsid(sock: socket.socket, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> int | None:
    """The namespace id of the peer of the veth this namespace's route to `address` leaves by, with no gateway."""
    family = socket.AF_INET if address.version == 4 else socket.AF_INET6
    dst = address.packed
    body = RTMSG.pack(family, len(dst) * 8, 0, 0, 0, 0, 0, 0, 0)
    body += NLATTR.pack(NLATTR.size + len(dst), RTA_DST) + dst
    route = _ask(sock, RTM_GETROUTE, body, RTM_NEWROUTE, 1)
    if route is None or RTMSG.unpack_from(route[0], route[1])[7] != RTN_UNICAST:
        return None
    attrs = dict(_attrs(route[0], route[1] + RTMSG.size, route[2]))
    if RTA_GATEWAY in attrs or RTA_VIA in attrs or len(attrs.get(RTA_OIF, b"")) != 4:
        return None  # through a gateway: where it goes from there is that host's to say
    (index,) = struct.unpack("=I", attrs[RTA_OIF])
    link = _ask(sock, RTM_GETLINK, IFINFOMSG.pack(socket.AF_UNSPEC, 0, index, 0, 0), RTM_NEWLINK, 2)
    if link is None:
        return None
    attrs = dict(_attrs(link[0], link[1] + IFINFOMSG.size, link[2]))
    info = dict(_attrs(attrs.get(IFLA_LINKINFO, b""), 0, len(attrs.get(IFLA_LINKINFO, b""))))
    if info.get(IFLA_INFO_KIND, b"").rstrip(b"\0") != b"veth" or len(attrs.get(IFLA_LINK_NETNSID, b"")) != 4:
        return None  # a bridge (its ports' namespaces: neighbours and forwarding say), a device of this namespace
    return int(struct.unpack("=i", attrs[IFLA_LINK_NETNSID])[0])


def _nsid_of(sock: socket.socket, pid: int, seq: int) -> int | None:
    """The id this namespace gave the network namespace of `pid` (none assigned: None)."""
    body = RTGENMSG.pack(socket.AF_UNSPEC) + NLATTR.pack(NLATTR.size + 4, NETNSA_PID) + struct.pack("=I", pid)
    reply = _ask(sock, RTM_GETNSID, body, RTM_NEWNSID, seq)
    if reply is None:
        return None
    nsid = dict(_attrs(reply[0], reply[1] + RTGENMSG.size, reply[2])).get(NETNSA_NSID, b"")
    found = struct.unpack("=i", nsid)[0] if len(nsid) == 4 else -1
    return int(found) if found >= 0 else None


def routed_into(address: str, holders: Mapping[int, Sequence[int]]) -> int | None:
    """Which of `holders` (netstat inode: its pids) this namespace's route to `address` goes straight into, over
    a veth; None where the route does not say (or the kernel would not: no netlink here)."""
    try:
        wanted = ipaddress.ip_address(address)
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as sock:
            sock.settimeout(TIMEOUT_S)
            sock.bind((0, 0))
            peer = _veth_peer_nsid(sock, wanted)
            if peer is None:
                return None
            seq = 3
            for inode, pids in holders.items():
                for pid in pids[:1]:  # any of its processes names the namespace
                    seq += 1
                    if _nsid_of(sock, pid, seq) == peer:
                        return inode
    except (OSError, ValueError, struct.error):
        return None
    return None
