"""Listening sockets of one port, the way `ss -ltn 'sport = :PORT'` shows them.

`listening_sockets` asks the kernel over NETLINK_SOCK_DIAG (``source="netlink"``; ``backlog`` is the
listen() backlog as the kernel stored it) and falls back to ``/proc/net/tcp{,6}`` (``source="proc"``;
``backlog`` is None because those files do not show it). `listening_sockets_of` looks in the network
namespaces of given processes instead of ours.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..core.measures import Family, ListenerRow
from .listen_drops import DropsReading, defers_accept, namespace_drops
from .netlink_diag import (
    MSG_HEAD,
    MSG_SIZE,
    MSG_TAIL,
    SOCKID_BE,
    SOCKID_SIZE,
    attribute_at,
    diag_messages,
    diag_request,
    open_diag_socket,
)

if TYPE_CHECKING:
    import ipaddress

INET_DIAG_SKV6ONLY = 11  # an attribute the kernel adds to every IPv6 listener's reply, asked or not


def _check_port(port: int) -> None:
    if not 0 < port < 65536:
        raise ValueError(f"port must be in 1..65535, got {port}")


def _parse_diag_msg(payload: bytes) -> ListenerRow:
    if len(payload) < MSG_SIZE:
        raise OSError(errno.EPROTO, f"inet_diag_msg too short ({len(payload)} bytes)")
    fam, _state, _timer, _retrans = MSG_HEAD.unpack_from(payload, 0)
    sport, _dport, src, _dst = SOCKID_BE.unpack_from(payload, MSG_HEAD.size)
    _expires, rqueue, wqueue, _uid, inode = MSG_TAIL.unpack_from(payload, MSG_HEAD.size + SOCKID_SIZE)
    if fam == socket.AF_INET:
        return ListenerRow("ipv4", socket.inet_ntop(socket.AF_INET, src[:4]), sport, rqueue, wqueue, inode)
    if fam == socket.AF_INET6:
        address = socket.inet_ntop(socket.AF_INET6, src)
        return ListenerRow("ipv6", address, sport, rqueue, wqueue, inode, v6only=_v6only(payload[MSG_SIZE:]))
    raise OSError(errno.EPROTO, f"unexpected address family {fam} in inet_diag reply")


def _v6only(attributes: bytes) -> bool | None:
    """IPV6_V6ONLY from the attributes after an inet_diag_msg (INET_DIAG_SKV6ONLY); None if absent."""
    at = attribute_at(attributes, INET_DIAG_SKV6ONLY, 1)
    return None if at is None else attributes[at] != 0


# The memory counters of a socket (INET_DIAG_SKMEMINFO, u32 each), asked with its bit in idiag_ext; the 9th is
# sk_drops, each handshake packet a listener drops (`ss -ltm`'s d; a SYN sent again is dropped again; DropsReading)
INET_DIAG_SKMEMINFO = 7  # linux/inet_diag.h
SK_MEMINFO_DROPS = 8


def drops_reading(
    port: int, host: str | frozenset[int] | None, pids: Sequence[int] = (), holders: Sequence[int] = ()
) -> DropsReading | None:
    """The handshake packets dropped so far by the listeners on `port` that connections to `host` go to (serving_on), or
    of these inodes (observe's), summed: the server's own count, where ListenOverflows is every listener's of the
    namespace. Asked in the network namespace `pids` (the server's processes) live in, ours without them: an attached
    server in a namespace of its own listens there, and a listener on the same port in ours is another program's. None
    where netlink cannot say, no such listener, the pids are in two namespaces, or theirs cannot be read (another user's
    process: /proc/PID/ns/net needs ptrace access) or entered (setns needs CAP_SYS_ADMIN). Whether the listeners defer
    accept is read from the fd tables of `holders` (else of `pids`, else ours)."""
    _check_port(port)
    ours = _netns("self")
    namespaces = {_netns(pid) for pid in pids}
    if len(namespaces) > 1 or None in namespaces:
        return None
    if namespaces and namespaces != {ours}:
        from .server_netns import in_namespace_of

        try:
            return in_namespace_of(pids[0], lambda: _drops_here(port, host, holders or pids))
        except OSError:
            return None
    return _drops_here(port, host, holders or pids)


def listener_drops(port: int, host: str | frozenset[int] | None, pids: Sequence[int] = ()) -> int | None:
    """drops_reading's sk_drops alone: what `ss -ltm` shows as d, summed."""
    return None if (reading := drops_reading(port, host, pids)) is None else reading.listeners


def _drops_here(port: int, host: str | frozenset[int] | None, holders: Sequence[int]) -> DropsReading | None:
    """drops_reading asked in this thread's network namespace (its counters read before and after the listeners)."""
    namespace, found = namespace_drops(), list[tuple[ListenerRow, int]]()
    try:
        with open_diag_socket() as sock:
            for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), start=1):
                request = diag_request(family, port, seq, ext=1 << (INET_DIAG_SKMEMINFO - 1))
                for data, start, end in diag_messages(sock, request, seq):
                    row = _parse_diag_msg(data[start:end])
                    drops = _drops(data[start + MSG_SIZE : end])
                    if row.port == port and drops is not None:
                        found.append((row, drops))
    except OSError:
        return None
    rows = [r for r, _ in found]  # inodes: another program's listener on the port (another address) left out
    mine = [r for r in rows if r.inode in host] if isinstance(host, frozenset) else serving_on(rows, host)
    chosen = {r.inode for r in mine}
    if not chosen:
        return None
    dropped, after = sum(d for r, d in found if r.inode in chosen), namespace_drops()
    return DropsReading(dropped, namespace, after, defers_accept(chosen, holders or (os.getpid(),)))


def _drops(attributes: bytes) -> int | None:
    """sk_drops from the attributes after an inet_diag_msg (INET_DIAG_SKMEMINFO); None if absent."""
    at = attribute_at(attributes, INET_DIAG_SKMEMINFO, 4 * (SK_MEMINFO_DROPS + 1))
    return None if at is None else int(struct.unpack_from("=I", attributes, at + 4 * SK_MEMINFO_DROPS)[0])


def _dump_listeners(sock: socket.socket, family: int, port: int | None, seq: int) -> list[ListenerRow]:
    """The listeners of one family on `port` (None: every port), in the kernel's order."""
    rows: list[ListenerRow] = []
    for data, start, end in diag_messages(sock, diag_request(family, port or 0, seq), seq):
        row = _parse_diag_msg(data[start:end])
        if port is None or row.port == port:
            rows.append(row)
    return rows


def netlink_listeners(port: int) -> list[ListenerRow]:
    """Listening TCP sockets on ``port`` (IPv4 and IPv6) via NETLINK_SOCK_DIAG. Raises OSError if netlink is
    unavailable (not Linux, sandboxed, old kernel)."""
    _check_port(port)
    return _netlink_dump(port)


def netlink_all_listeners() -> list[ListenerRow]:
    """Every listening TCP socket of this network namespace, IPv4 then IPv6, in the order /proc/net/tcp and
    tcp6 list them (both walk the kernel's listening hash): one dump of the listeners alone, where those
    files list every socket of the namespace (each connection a line). OSError as netlink_listeners."""
    return _netlink_dump(None)


def _netlink_dump(port: int | None) -> list[ListenerRow]:
    rows: list[ListenerRow] = []
    with open_diag_socket() as sock:
        for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), start=1):
            rows.extend(_dump_listeners(sock, family, port, seq))
    return rows


def _proc_address(hexaddr: str, family: Family, byteorder: str) -> str:
    raw = bytes.fromhex(hexaddr)
    if byteorder == "little":  # the kernel prints each 32-bit word as a host-order integer
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    af = socket.AF_INET if family == "ipv4" else socket.AF_INET6
    return socket.inet_ntop(af, raw)


def parse_proc_net_tcp(text: str, family: Family, byteorder: str = sys.byteorder) -> list[ListenerRow]:
    """Listening sockets (state ``0A``) from ``/proc/net/tcp`` (family ``"ipv4"``) or
    ``/proc/net/tcp6`` (``"ipv6"``) text, all ports.

    ``queue`` comes from rx_queue (the accept queue for listeners); ``backlog`` is None.
    ``byteorder`` is that of the machine that produced the text (addresses are printed as
    host-order words). Raises ValueError on malformed lines.
    """
    if family not in ("ipv4", "ipv6"):
        raise ValueError(f"family must be 'ipv4' or 'ipv6', got {family!r}")
    rows: list[ListenerRow] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] == "sl":
            continue
        try:
            if fields[3] != "0A":
                continue
            hexaddr, hexport = fields[1].split(":")
            _tx, rx = fields[4].split(":")
            rows.append(
                ListenerRow(
                    family=family,
                    address=_proc_address(hexaddr, family, byteorder),
                    port=int(hexport, 16),
                    queue=int(rx, 16),
                    backlog=None,
                    inode=int(fields[9]),
                    source="proc",
                )
            )
        except (IndexError, ValueError, OSError) as exc:
            raise ValueError(f"line {lineno}: cannot parse {line.strip()!r}: {exc}") from None
    return rows


def proc_listeners(port: int, proc_net: str = "/proc/net") -> list[ListenerRow]:
    """Listening TCP sockets on ``port`` from ``/proc/net/tcp`` and ``tcp6`` (missing files
    are skipped, e.g. IPv6 disabled)."""
    _check_port(port)
    rows: list[ListenerRow] = []
    families: tuple[tuple[str, Family], ...] = (("tcp", "ipv4"), ("tcp6", "ipv6"))
    for name, family in families:
        try:
            with open(os.path.join(proc_net, name), encoding="ascii") as f:
                text = f.read()
        except (FileNotFoundError, NotADirectoryError):
            continue
        rows.extend(row for row in parse_proc_net_tcp(text, family) if row.port == port)
    return rows


def _dotted(address: str) -> bool:
    """An IPv4 address spelled as ip_address spells it (netlink's, the default --host)."""
    parts = address.split(".")
    return len(parts) == 4 and all(p.isascii() and p.isdigit() and str(int(p)) == p and int(p) < 256 for p in parts)


def normal_address(address: str) -> str:
    """An address as one spelling ("::ffff:127.0.0.1" stays itself; "0:0::0" is "::"); a name as given."""
    if _dotted(address):
        return address  # no ipaddress imported for it
    import ipaddress

    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address


def takes(row: ListenerRow, host: str) -> bool:
    """Does the listener take connections made to address `host`? The kernel's rule: an IPv4 socket takes
    IPv4 connections to its address, or to any if it is 0.0.0.0, never IPv6 ones (`::1`); an IPv6 socket
    takes IPv6 connections to its address, or to any if it is `::`, and IPv4 ones only if it is not IPV6_V6ONLY:
    on `::`, or on that IPv4 address mapped (`::ffff:127.0.0.1`). A connection to a mapped address is an IPv4
    one. Where IPV6_V6ONLY is not known (/proc has no column for it), `::` is taken to be dual-stack, Linux's
    default (net.ipv6.bindv6only 0). A connection to 0.0.0.0 (`::`) goes to 127.0.0.1 (`::1`). ValueError for a
    host that is no address."""
    import ipaddress

    bound, wanted = ipaddress.ip_address(row.address), _connected_to(host)
    if isinstance(bound, ipaddress.IPv4Address):
        return isinstance(wanted, ipaddress.IPv4Address) and (bound.is_unspecified or bound == wanted)
    if isinstance(wanted, ipaddress.IPv6Address):
        return bound.is_unspecified or bound == wanted
    if bound.ipv4_mapped is not None:  # only a dual-stack socket may bind one
        return bound.ipv4_mapped.is_unspecified or bound.ipv4_mapped == wanted
    return bound.is_unspecified and row.v6only is not True


def _connected_to(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address a connection to `host` reaches: a mapped one is IPv4 (::ffff:127.0.0.1 is 127.0.0.1), and the
    unspecified one the loopback (Linux connects 0.0.0.0 to 127.0.0.1, `::` to ::1). A link-local host's zone
    (`fe80::1%eth0`, which --host keeps) is not part of the address a listener is bound to, as inet_diag and /proc
    print it."""
    import ipaddress  # where asked, not at start-up (normal_address)

    wanted = ipaddress.ip_address(host.partition("%")[0])
    if isinstance(wanted, ipaddress.IPv6Address) and wanted.ipv4_mapped is not None:
        wanted = wanted.ipv4_mapped
    if wanted.is_unspecified:
        return ipaddress.ip_address("127.0.0.1" if wanted.version == 4 else "::1")
    return wanted


def _precedence(row: ListenerRow, host: str) -> tuple[bool, bool]:
    """How the kernel ranks the listeners of one port that take connections to `host` (Linux 6.18
    __inet_lookup_listener): one bound to the address itself before a wildcard (it looks the address up first,
    the wildcard only if nothing is bound there), and for an IPv4 connection an IPv4 socket before an IPv6 one
    (an IPv6 SO_REUSEPORT socket is hashed behind them; compute_score adds one for PF_INET)."""
    import ipaddress

    bound, wanted = ipaddress.ip_address(row.address), _connected_to(host)
    if isinstance(bound, ipaddress.IPv6Address) and bound.ipv4_mapped is not None:
        bound = bound.ipv4_mapped
    return not bound.is_unspecified, wanted.version == 6 or row.family == "ipv4"


def serving_on(rows: list[ListenerRow], host: str | None) -> list[ListenerRow]:
    """The listeners among `rows` (one port, one network namespace) that connections to `host` go to: of those
    that take them (`takes`), the ones the kernel looks at first (`_precedence`): a 0.0.0.0 socket beside one
    bound to 127.0.0.1 (SO_REUSEPORT, another process's or the server's own) gets none of the connections to
    127.0.0.1, nor does a dual-stack `::` beside a 0.0.0.0 any IPv4 one (nginx's `listen 80; listen [::]:80`
    read from /proc, where IPV6_V6ONLY is not known). All of them without a host; a host that is a name: its
    address or a wildcard."""
    if not host:
        return rows
    if _dotted(host) and all(r.family == "ipv4" and _dotted(r.address) for r in rows):
        # IPv4 alone (every run of the default --host, rows as netlink spells them): the same rule without
        # importing ipaddress at start-up: the address itself if bound, else 0.0.0.0
        reached = "127.0.0.1" if host == "0.0.0.0" else host
        return [r for r in rows if r.address == reached] or [r for r in rows if r.address == "0.0.0.0"]
    try:
        taking = [r for r in rows if takes(r, host)]
        first = max((_precedence(r, host) for r in taking), default=None)
        return [r for r in taking if _precedence(r, host) == first]
    except ValueError:
        wanted = (normal_address(host), "0.0.0.0", "::")
        return [r for r in rows if normal_address(r.address) in wanted]


def dual_stack_assumed(rows: list[ListenerRow], host: str | None) -> list[ListenerRow]:
    """Of the listeners `serving_on` takes connections to `host` to go to, those it takes only by taking an unknown
    IPV6_V6ONLY (read from /proc, which has no column for it) for Linux's default, off: a lone `[::]` for an IPv4
    host. Were the flag set, none of those connections would reach it."""
    from dataclasses import replace

    if not host:
        return []
    try:
        return [r for r in serving_on(rows, host) if r.v6only is None and not takes(replace(r, v6only=True), host)]
    except ValueError:  # a host that is a name: serving_on took the wildcards, v6only or not
        return []


def listening_sockets(port: int) -> list[ListenerRow]:
    """Listening TCP sockets on ``port`` in this network namespace, like
    ``ss -ltn 'sport = :PORT'``.

    Uses netlink (rows have ``source == "netlink"`` and a ``backlog``); if that fails with
    OSError it reads /proc/net/tcp{,6} (``source == "proc"``, ``backlog is None``). Returns
    ``[]`` when nothing listens or neither interface exists.
    """
    try:
        return netlink_listeners(port)
    except OSError:
        return proc_listeners(port)


def _netns(pid: int | str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def listening_sockets_of(port: int, pids: Iterable[int]) -> list[ListenerRow]:
    """Listening TCP sockets on ``port`` in the network namespaces ``pids`` live in: ours through
    `listening_sockets`, another one (a server attached from outside its namespace) through the same netlink dump
    asked inside it (server_netns.in_namespace_of: IPV6_V6ONLY known, which decides whether a lone `[::]` takes
    IPv4 connections), else that process's own ``/proc/PID/net/tcp{,6}`` (the flag not known: v6only None). A pid
    whose namespace cannot be read counts as in ours."""
    from .server_netns import in_namespace_of

    ours = _netns("self")
    namespaces: dict[int | None, int] = {}
    for pid in pids:
        namespaces.setdefault(_netns(pid), pid)
    rows: list[ListenerRow] = []
    for ns, pid in namespaces.items():
        if ns is None or ns == ours:
            continue
        try:
            rows.extend(in_namespace_of(pid, lambda: netlink_listeners(port)))
            continue
        except OSError:
            pass  # not ours to enter (setns needs CAP_SYS_ADMIN), or no netlink there
        try:
            rows.extend(proc_listeners(port, f"/proc/{pid}/net"))
        except (OSError, ValueError):
            continue  # gone meanwhile, or not ours to read
    if ours in namespaces or None in namespaces or not namespaces:
        rows.extend(listening_sockets(port))
    return rows
