"""Which network namespace of this machine a --target address lives in: the one whose kernel counts the server's
listen queue (ListenOverflows, ListenDrops, SYN cookies), which may not be this tool's.

A namespace is known here by its /proc/PID/net/* files, which procfs gives as PID's namespace's and which are read
without entering it (server_netns.netstat_namespace tells one from another by the netstat file's inode). The address
lives in a namespace when that namespace's local routing table holds it (/proc/PID/net/fib_trie's 'host LOCAL'
entries, /proc/PID/net/if_inet6 for IPv6) and something there listens on the port (/proc/PID/net/tcp, tcp6).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from . import landing
from .landing import Landing
from .nat_rules import may_nat_here
from .route_netns import routed_into
from .server_netns import namespaces, netstat_namespace

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
LISTEN = "0A"  # the tcp table's state of a listening socket
SYN_RECV = "03"


@dataclass(frozen=True)
class Located:
    """Where the address lives: `ours` (this tool's namespace), or the pids of another namespace's processes (any
    one of them reads its counters: server_netns.netstat_in), or neither (`pids` empty, not ours): another machine,
    or a namespace whose files could not be read, or one this machine's that a connection made to find it was not
    found in (`why` says so: more than one holds it, `holders` how many, or NAT sent it on). `sent_to` is the
    server's own address where NAT rewrote the connection's (DNAT host:8080 -> 10.0.0.2:80); `landed`, that a
    connection made to find it told which namespace (probes/landing.py), not the addresses held alone."""

    ours: bool
    namespace: int | None = None
    pids: tuple[int, ...] = ()
    holders: int = 0  # namespaces of this machine found holding the address and listening on the port
    sent_to: tuple[str, int] | None = None
    landed: bool = False
    routed: bool = False  # of several holding it, the one this namespace's route goes straight into (route_netns)
    why: str | None = None  # why its counters are not read, where its address is this machine's

    @property
    def told(self) -> str | None:
        """How the namespace was told where a connection made to it did, or this namespace's route (None where
        the addresses held told)."""
        if not (self.landed or self.routed):
            return None
        said = "found where a connection made to it before the load landed"
        if self.routed:
            said = "found by this namespace's route to it, a veth into that namespace"
        if self.sent_to is not None:
            said += f", DNATed to {self.sent_to[0]}:{self.sent_to[1]}"
        if self.holders > 1:
            said += f"; {self.holders} of this machine's network namespaces hold its address"
        return said


def _local(fib_trie: str) -> list[ipaddress.IPv4Network]:
    """The networks a namespace's routing table says are its own ('/32 host LOCAL' under '|-- 10.0.0.2')."""
    found, last = [], None
    for line in fib_trie.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "|--":
            last = words[1]
        elif len(words) >= 3 and words[1] == "host" and words[2] == "LOCAL" and last and words[0].startswith("/"):
            try:
                found.append(ipaddress.IPv4Network(f"{last}{words[0]}", strict=False))
            except ValueError:
                continue
    return found


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def holds(pid: int | str, address: Address) -> bool:
    """The namespace of `pid` has `address` as one of its own."""
    if isinstance(address, ipaddress.IPv4Address):
        text = _read(f"/proc/{pid}/net/fib_trie")
        return text is not None and any(address in net for net in _local(text))
    if address.is_loopback:
        return True  # ::1 is every namespace's own
    text = _read(f"/proc/{pid}/net/if_inet6")
    return text is not None and any(
        line.split() and ipaddress.IPv6Address(int(line.split()[0], 16)) == address for line in text.splitlines()
    )


def listens(pid: int | str, port: int) -> bool:
    """Something in `pid`'s namespace listens on TCP `port` (IPv4 or IPv6, any address). The kernel lists a tcp
    table's listeners first, then walks the machine's every other socket for the rest (88-126k here, mostly
    TIME_WAIT, 12-40 ms a table): the read stops at the first socket past them (a SYN_RECV aside: kernels before
    4.4 listed those under their listener)."""
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}", encoding="ascii", errors="replace") as f:
                next(f, None)  # the heading
                for line in f:
                    fields = line.split()
                    if len(fields) <= 3 or fields[3] not in (LISTEN, SYN_RECV):
                        break
                    if fields[3] == SYN_RECV:
                        continue
                    if int(fields[1].rpartition(":")[2], 16) == port:
                        return True
        except OSError:
            continue
    return False


def _addresses(host: str) -> list[Address]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return []
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def _namespaces() -> Iterator[tuple[int, list[int]]]:
    """(netstat inode, the pids in it) of every namespace with a process this tool may look at, ours left out."""
    ours = netstat_namespace("self")
    yield from ((inode, pids) for inode, pids in namespaces().items() if inode != ours)


def may_rewrite(addresses: list[Address]) -> bool:
    """A connection from here to one of this namespace's own addresses may be sent elsewhere by NAT (a container's
    published port: DNAT in the nat table's output hook, while a proxy may listen on the port here too), which needs
    conntrack in this namespace (its sysctls exist once the kernel has it) and a nat chain or table here
    (nat_rules: conntrack alone, built into this kernel, made every --target at this host's own address connect
    once more, which the server counted). Loopback aside: NAT to another host from 127.0.0.1 needs
    route_localnet, and a listener here is where it goes. An address no namespace here holds (a service's virtual
    address DNATed to a container) is taken for another machine's: no connection is made to find out, as a load
    from client hosts (--clients) would have this host make it, which may not reach it."""
    if all(a.is_loopback for a in addresses) or not os.path.exists("/proc/sys/net/netfilter/nf_conntrack_count"):
        return False
    return may_nat_here()


def holding(address: str) -> set[int]:
    """The namespaces of this machine (netstat inodes, ours too) that hold `address`."""
    try:
        wanted = ipaddress.ip_address(address)
    except ValueError:
        return set()
    return {inode for inode, pids in namespaces().items() if holds(pids[0], wanted)}


def locate(host: str, port: int, land: Callable[..., Landing] = landing.land) -> Located:
    """Where `host:port` is served on this machine, if it is (see Located). Where the addresses held do not tell
    (two namespaces hold it; it is this namespace's own and NAT may send it on, a listener here or not), this
    namespace's route does where it goes straight into one of them over a veth (route_netns), and otherwise one
    connection made to it tells (`land`, probes/landing.py), which the server counts."""
    addresses = _addresses(host)
    if not addresses:
        return Located(False)
    here = any(holds("self", a) for a in addresses)
    if here and not may_rewrite(addresses):
        return Located(True)  # this namespace's own address, and no NAT here to send it on: a connection stays here
    found = (
        []
        if here
        else [  # a connection to our own address stays here unless NAT sends it on: the look tells
            (inode, pids)
            for inode, pids in _namespaces()
            if any(holds(pids[0], a) for a in addresses) and listens(pids[0], port)
        ]
    )
    if not here and len(found) < 2:  # none: another machine (see may_rewrite); one: the namespace the route reaches
        return Located(False, found[0][0], tuple(found[0][1]), 1) if found else Located(False)
    if not here and (straight := routed_into(str(addresses[0]), dict(found))) is not None:
        return Located(False, straight, tuple(dict(found)[straight]), len(found), routed=True)  # no connection made
    first = {inode for inode, _ in found} if found else {netstat_namespace("self") or 0}
    landed = land(host, port, first, holding)  # first where it lands unless NAT sends it on
    if landed.ours:
        return Located(True, landed=True)
    server = landed.server
    asked = server is not None and server[1] == port and any(landing.same(server[0], str(a)) for a in addresses)
    sent = None if asked else server  # where NAT sent it: not the address and port asked for
    if landed.namespace is not None:
        return Located(False, landed.namespace, landed.pids, len(found), sent, landed=True)
    if not here:
        why = (
            f"{len(found)} of this machine's network namespaces hold its address and listen on its port, and which "
            f"one the load's connections reach is not known: {landed.why}"
        )
    elif sent is not None:
        why = f"DNATed: {landed.why}"
    else:
        listening = "NAT may send its connections on" if listens("self", port) else "nothing listens on its port here"
        why = f"its address is this host's own and {listening}: {landed.why}"
    return Located(False, holders=len(found), sent_to=sent, why=why)
