"""Whether this network namespace has a NAT table that could send a connection made here elsewhere: an nftables
chain of type nat (nft's own, iptables-nft's, Docker's and Podman's), or the legacy iptables nat table.

DNAT of a connection made in a namespace happens in that namespace's nat hooks (a container's published port is a
rule in the host's output chain). Where there is none, a connection to one of this namespace's own addresses is
taken here, whatever conntrack is loaded for: no connection need be made to find out (probes/landing.py makes one,
which the server counts). Read over nfnetlink (a dump of the chains, as `nft list chains` asks) and from
/proc/net/ip{,6}_tables_names, both of which the kernel keeps per namespace.
"""

from __future__ import annotations

import errno
import socket
import struct

from accept_order.probes.netlink_messages import NLMSG_DONE, NLMSG_ERROR, NLMSGHDR, messages

NETLINK_NETFILTER = 12
NFT_MSG_GETCHAIN = (10 << 8) | 4  # NFNL_SUBSYS_NFTABLES, NFT_MSG_GETCHAIN
NFT_MSG_NEWCHAIN = (10 << 8) | 3  # each chain of the dump comes back as one
NFTA_CHAIN_TYPE = 7
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NFGENMSG = struct.Struct("!BBH")  # family (NFPROTO_UNSPEC: every family), version, res_id
NLATTR = struct.Struct("=HH")
NLA_TYPE_MASK = 0x3FFF  # the type without NLA_F_NESTED / NLA_F_NET_BYTEORDER
TIMEOUT_S = 2.0  # a kernel that never answers must not hang the caller
UNSUPPORTED = (errno.EPROTONOSUPPORT, errno.EAFNOSUPPORT)  # no nfnetlink in this kernel: no nftables


def _chain_types(data: bytes, start: int, end: int) -> list[str]:
    """The NFTA_CHAIN_TYPE strings of one chain message's attributes, data[start:end] (after its nfgenmsg)."""
    found, offset = [], start
    while offset + NLATTR.size <= end:
        length, kind = NLATTR.unpack_from(data, offset)
        if length < NLATTR.size:
            break
        if kind & NLA_TYPE_MASK == NFTA_CHAIN_TYPE:
            found.append(data[offset + NLATTR.size : offset + length].split(b"\0")[0].decode("ascii", "replace"))
        offset += (length + 3) & ~3
    return found


def nft_nat_chains() -> int | None:
    """How many nftables chains of type nat this namespace has; None where the kernel would not say (not this
    user's to ask: nfnetlink needs CAP_NET_ADMIN; or no answer within TIMEOUT_S)."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    except OSError as exc:
        return 0 if exc.errno in UNSUPPORTED else None
    with sock:
        try:
            sock.settimeout(TIMEOUT_S)
            sock.bind((0, 0))
            body = NFGENMSG.pack(socket.AF_UNSPEC, 0, 0)
            head = NLMSGHDR.pack(NLMSGHDR.size + len(body), NFT_MSG_GETCHAIN, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
            sock.send(head + body)
            nat = 0
            while True:
                data = sock.recv(1 << 16)
                for kind, seq, start, end in messages(data):  # a malformed one: MalformedReply, an OSError
                    if seq != 1:
                        continue
                    if kind == NLMSG_DONE:
                        return nat
                    if kind == NLMSG_ERROR:
                        (err,) = struct.unpack_from("=i", data, start)
                        if err:
                            return 0 if -err in (errno.EPROTONOSUPPORT, errno.EOPNOTSUPP) else None
                    elif kind == NFT_MSG_NEWCHAIN:
                        nat += _chain_types(data, start + NFGENMSG.size, end).count("nat")
        except OSError:
            return None


def legacy_nat_tables() -> bool | None:
    """Whether iptables' legacy nat table (IPv4 or IPv6) is registered in this namespace: the kernel lists a
    namespace's x_tables in /proc/net/ip{,6}_tables_names once each is used there. None where unreadable."""
    found = False
    for names in ("/proc/net/ip_tables_names", "/proc/net/ip6_tables_names"):
        try:
            with open(names, encoding="ascii") as f:
                found = found or "nat" in f.read().split()
        except FileNotFoundError:
            continue  # no x_tables of that family in this kernel
        except OSError:
            return None
    return found


def may_nat_here() -> bool:
    """This namespace may rewrite a connection's destination: a nat chain or table here, or not known."""
    chains, legacy = nft_nat_chains(), legacy_nat_tables()
    return chains is None or legacy is None or chains > 0 or legacy
