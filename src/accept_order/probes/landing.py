"""Which network namespace of this machine a connection to HOST:PORT from this one lands in: found by making one
and looking for its other end.

Two namespaces may hold the same address (two containers, each 10.0.0.2, on bridges of their own), and a connection
to this host's own address may be rewritten by NAT (DNAT host:8080 -> 10.0.0.2:80, as a container's published port
is): neither the addresses the namespaces hold nor their listeners say which kernel counts the client's connections.
The kernel's tables do: the server side of a connection is listed in its namespace's /proc/PID/net/tcp (tcp6) from
the SYN on (SYN_RECV, then ESTABLISHED, and after it closes), its remote end the client's address and port, its
local end the address the server listens on (NAT's new one). Read without entering any namespace, as
address_netns reads. NAT that also rewrites the source (masquerade) hides the client's end: the connection is then
found nowhere, and this namespace's conntrack table (/proc/net/nf_conntrack, where the kernel has it) may still
say where it was sent.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass

from . import conntrack_entry
from .netlink_diag import (
    MSG_HEAD,
    NO_COOKIE,
    REQ_V2,
    SOCKID_BE,
    SOCKID_TAIL,
    diag_messages,
    message,
    open_diag_socket,
)
from .server_netns import namespaces, netstat_namespace

# A server side's states while the client holds its end: SYN_RECV, ESTABLISHED, and FIN_WAIT1/2 where the server
# closed first (not TIME_WAIT: an earlier connection's, from the same port, lingers in it)
SERVER_SIDE = frozenset({"01", "03", "04", "05"})
NONE = "seen in none of this machine's network namespaces that this tool can read"
CONNECT_S = 2.0  # a SYN the path drops: the load will say it too; this look gives up before it


@dataclass(frozen=True)
class Landing:
    """Where one connection landed: `namespace` (netstat inode) and its pids, ours (`ours`) or another's, with
    the server side's own address (`server`: NAT's destination where one rewrote it); namespace None where it was
    found in none, `why` then saying what was seen."""

    namespace: int | None = None
    pids: tuple[int, ...] = ()
    ours: bool = False
    server: tuple[str, int] | None = None
    why: str = ""


def _decode(hexaddr: str) -> str:
    """An address as /proc/net/tcp{,6} prints it: each 32-bit word a host-order hex integer."""
    raw = bytes.fromhex(hexaddr)
    if sys.byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def same(a: str, b: str) -> bool:
    """One address, as tcp6 lists an IPv4 peer of a dual-stack listener (::ffff:10.0.0.1) or as itself."""
    try:
        x, y = ipaddress.ip_address(a), ipaddress.ip_address(b)
    except ValueError:
        return False
    x = x.ipv4_mapped or x if isinstance(x, ipaddress.IPv6Address) else x
    y = y.ipv4_mapped or y if isinstance(y, ipaddress.IPv6Address) else y
    return x == y


def server_ends(pid: int | str, client: tuple[str, int]) -> list[tuple[str, int]]:
    """The local address and port of each live socket in `pid`'s namespace whose remote end is `client`: the server
    side of the client's connection, where it landed there, and any other connection's from the same address and
    port to another server (a port is reused towards other destinations, and a closed one's TIME_WAIT lingers: the
    latter is left out). Empty: none there, or unreadable."""
    found = []
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}", encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] not in SERVER_SIDE:
                continue
            try:
                (local, lport), (remote, rport) = (field.split(":") for field in fields[1:3])
                if int(rport, 16) == client[1] and same(_decode(remote), client[0]):
                    found.append((_decode(local), int(lport, 16)))
            except (ValueError, OSError):
                continue
    return found


def conntrack_destination(
    client: tuple[str, int], asked: tuple[str, int], text: str | None = None
) -> tuple[str, int] | None:
    """Where this namespace's conntrack says the connection from `client` to `asked` was sent: its reply tuple's
    source, the server NAT chose (`asked` itself where none rewrote it). None where the kernel keeps no such table
    here (/proc/net/nf_conntrack is a build option) or has no entry for it."""
    if text is None:
        try:
            return conntrack_entry.sent_to(client, asked)  # the entry alone, by its tuple: 0.3 ms against 64
        except conntrack_entry.Unanswered:
            pass  # not this user's to ask over netlink, or no ctnetlink: the table, where readable
        try:
            with open("/proc/net/nf_conntrack", encoding="ascii") as f:
                text = f.read()
        except OSError:
            return None
    mark = f"sport={client[1]} "
    for line in text.splitlines():
        if mark not in line:
            continue  # another connection's: not split (28,567 entries here)
        pairs = [word.split("=", 1) for word in line.split() if "=" in word]
        values = {key: [v for k, v in pairs if k == key] for key in ("src", "dst", "sport", "dport")}
        if min(map(len, values.values())) < 2:
            continue
        original = (values["src"][0], values["sport"][0], values["dst"][0], values["dport"][0])
        if same(original[0], client[0]) and original[1] == str(client[1]) and same(original[2], asked[0]):
            if original[3] == str(asked[1]):
                return values["src"][1], int(values["sport"][1])
    return None


def server_ends_here(client: tuple[str, int]) -> list[tuple[str, int]]:
    """server_ends of this namespace, asked of the kernel over sock_diag for the sockets in SERVER_SIDE's states whose
    remote port is the client's (the kernel's filter: its tcp table, /proc/net/tcp, held 37,522 sockets here, mostly
    other tests' TIME_WAIT, 72 ms to read); /proc's where netlink cannot be asked."""
    try:
        with open_diag_socket() as sock:
            found = []
            for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), start=1):
                sockid = SOCKID_BE.pack(0, client[1], b"", b"") + SOCKID_TAIL.pack(0, NO_COOKIE, NO_COOKIE)
                states = sum(1 << int(state, 16) for state in SERVER_SIDE)
                request = message(REQ_V2.pack(family, socket.IPPROTO_TCP, 0, 0, states) + sockid, seq)
                for data, start, _end in diag_messages(sock, request, seq):
                    sport, dport, src, dst = SOCKID_BE.unpack_from(data, start + MSG_HEAD.size)
                    size = 4 if family == socket.AF_INET else 16
                    remote = socket.inet_ntop(family, dst[:size])
                    if dport == client[1] and same(remote, client[0]):
                        found.append((socket.inet_ntop(family, src[:size]), sport))
            return found
    except OSError:
        return server_ends("self", client)


def _ends(client: tuple[str, int], among: Collection[int] | None = None) -> list[Landing]:
    """Every live socket of this machine's namespaces (those of `among` only, netstat inodes, where given) whose
    remote end is `client`, as a Landing each."""
    ours = netstat_namespace("self")
    found = []
    for inode, pids in namespaces().items():
        if among is not None and inode not in among:
            continue
        for pid in pids:  # the first still there (and readable) speaks for its namespace
            if netstat_namespace(pid) == inode:
                ends = server_ends_here(client) if inode == ours else server_ends(pid, client)
                found += [Landing(inode, tuple(pids), inode == ours, end) for end in ends]
                break
    return found


def _pick(ends: list[Landing], server: tuple[str, int]) -> Landing | None:
    """The one of `ends` whose local end is `server` (where the connection was sent), if one alone is."""
    mine = [end for end in ends if end.server and end.server[1] == server[1] and same(end.server[0], server[0])]
    return mine[0] if len(mine) == 1 else None


def land(
    host: str,
    port: int,
    first: Collection[int] | None = None,
    near: Callable[[str], Collection[int]] | None = None,
    timeout: float = CONNECT_S,
) -> Landing:
    """Where a connection from this namespace to `host:port` lands (see Landing). One connection is made and closed
    at once, before any load: the server sees one connection that sends nothing. `first`: the namespaces (netstat
    inodes) looked in before every other, where it lands unless NAT sends it on (those holding the address and
    listening; ours, for our own): each other one's tcp tables cost 12-40 ms to read here, the kernel walking the
    machine's every socket for them (33-126k, mostly TIME_WAIT, on this busy machine). `near(address)`: the
    namespaces that hold an address, where NAT's destination is looked for before every namespace.

    Its server side is the socket whose remote end is the connection's local one and whose local end is the address
    asked for, or where NAT sent it (this namespace's conntrack). Not any socket whose remote end is that: a port is
    used again towards other destinations, and a container's connection from it is not this one's server side."""
    try:
        sock = socket.create_connection((host, port), timeout)
    except OSError as exc:
        return Landing(why=f"a connection made to find where it lands failed ({exc.strerror or exc})")
    with sock:
        local, peer = sock.getsockname()[:2], sock.getpeername()[:2]
        client, asked = (str(local[0]), int(local[1])), (str(peer[0]), int(peer[1]))
        ends = _ends(client, first) if first is not None else []
        landed = _pick(ends, asked)  # where no NAT rewrote it: conntrack's table (28,567 entries here) is not read
        sent = conntrack_destination(client, asked) if landed is None else None
        if sent == asked:
            sent = None  # tracked, not rewritten
        if landed is None and sent is not None and near is not None:  # those holding NAT's destination first
            ends = _ends(client, near(sent[0]))
            landed = _pick(ends, sent)
        if landed is None:
            ends = _ends(client)
            landed = _pick(ends, asked) or (_pick(ends, sent) if sent else None)
    if landed is not None:
        return landed
    if sent is None:
        return Landing(why=f"a connection made to find where it lands was {NONE}")
    return Landing(server=sent, why=f"NAT sent a connection made to find where it lands to {sent[0]}:{sent[1]}, {NONE}")
