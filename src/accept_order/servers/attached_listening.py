"""Whether an attached server's processes (servers/attached.py) hold the listener its connections go to, and no
process outside them does: otherwise every count and verdict would be of someone else's accepts."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.capabilities import SERVERS_USER, what_would_let_it
from ..core.errors import NotServing
from .attached_workers import master_accepts, named_helper

# psutil and the probes are imported where used: the registry lists the attached kind at start-up (issue 30)


def _name(pid: int) -> str:
    """`pid 7 (nginx)`: the command name from /proc, as ps shows it."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f"pid {pid} ({f.read().strip()})"
    except OSError:
        return f"pid {pid}"


def _parent(pid: int) -> int | None:
    import psutil

    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None


def _readable(pid: int) -> bool:
    """Whether this user may read pid's fd links (one gone hides nothing). Listing them is not enough: root
    without CAP_SYS_PTRACE lists another user's and may read none."""
    from ..probes.fd_table import read_links

    return read_links(pid) is not None


def _names(pids: Sequence[int], shown: int = 3) -> str:
    named = [_name(pid) for pid in pids[:shown]]
    more = f" and {len(pids) - shown} more" if len(pids) > shown else ""
    return ", ".join(named) + more


def _held_by(holders: dict[int, set[int]]) -> str:
    """Who holds the listener, top of each process tree first: `pid 7 (nginx) and 3 of its children`."""
    roots = [pid for pid in sorted(holders) if _parent(pid) not in holders]
    if len(roots) == 1:
        children = len(holders) - 1
        return f"{_name(roots[0])}" + (f" and {children} of its children" if children else "")
    return _names(roots) + f" ({len(holders)} processes in all)"


def check_listening(
    host: str, port: int, attach: Sequence[int], workers: Sequence[int], *, helpers: Sequence[str]
) -> None:
    """NotServing unless the attached processes hold a listener that takes connections to host:port, and
    no process outside them (their parent, a master that only listens, aside) holds one too: otherwise
    the connections would go to someone else and every count and verdict would be invented. Exit 1, as observe's
    refusal of such a pid: what the machine turned out to be. `helpers`: as worker_pids's."""
    from ..probes.accept_waits import FORKS
    from ..probes.listeners import listening_sockets_of, serving_on
    from ..probes.owner import socket_holders

    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    # the listeners connections to host go to: a wildcard beside one bound to host gets none (serving_on)
    rows = serving_on(listening_sockets_of(port, [*attach, *workers]), host)
    holders = socket_holders({row.inode for row in rows})
    attached = set(attach) | set(workers)
    if len(attach) == 1 and list(workers) != [attach[0]]:
        children = "child" if len(workers) == 1 else "children"
        who, plural = f"{_name(attach[0])} and its {len(workers)} {children}", True
    else:
        who, plural = _names(attach), len(attach) > 1
    if not attached & holders.keys():
        hidden = sorted(pid for pid in attached if not _readable(pid))
        if rows and hidden:
            raise NotServing(
                f"--attach: cannot tell whether {_names(hidden)} {'holds' if len(hidden) == 1 else 'hold'} the "
                f"listener on {where}: {'its' if len(hidden) == 1 else 'their'} open files are not this user's "
                f"to read ({what_would_let_it(or_as=SERVERS_USER)})"
            )
        # where they listen instead, the --host to give: whether nobody else or another program holds this one
        every = listening_sockets_of(port, [*attach, *workers])
        mine = {i for p, inodes in socket_holders({r.inode for r in every}).items() if p in attached for i in inodes}
        theirs = sorted({r.address for r in every if r.inode in mine})
        at = ", ".join(f"[{a}]:{port}" if ":" in a else f"{a}:{port}" for a in theirs)
        subject = who if rows else "they" if plural else "it"  # where another holds it, 'they' would read as those
        listen = f"; {subject} {'listen' if plural else 'listens'} on {at}: give --host {theirs[0]}" if theirs else ""
        if not rows:
            owner = f"nobody listens on {where}"
        elif not holders:
            owner = f"a socket listens on {where}, but no process this user may look into holds it"
        else:
            owner = f"it is held by {_held_by(holders)}"
        raise NotServing(f"--attach: {who} {'hold' if plural else 'holds'} no listener on {where}; {owner}{listen}")
    masters = {_parent(pid) for pid in workers}
    titles = tuple(helpers)
    named = {pid for pid in holders if len(attach) == 1 and _parent(pid) in attach and named_helper(pid, titles)}
    others = holders.keys() - attached - masters - named
    if others and len(attach) == 1 and list(workers) == [attach[0]] and {_parent(pid) for pid in others} == {attach[0]}:
        # the master waits on the listener and its children that hold it do not: each was forked for a connection
        others = set() if master_accepts(attach[0], sorted(others), holders) == FORKS else others
    if others:
        raise NotServing(
            f"--attach: the listener on {where} is held by {_held_by(holders)}, not only by {who}: some "
            "connections would go to processes that are not attached (attach the master's pid or every worker's)"
        )
    _reached_from_here(host, port, where, attached, who, plural)


def _reached_from_here(host: str, port: int, where: str, attached: set[int], who: str, plural: bool) -> None:
    """NotServing where the attached processes listen in another network namespace (an `unshare -Urn` or a rootless
    container's) that connections to host:port made from this tool's do not reach: the load would go to this
    namespace's listener there, or to nobody, and be counted as theirs ('latency --attach' of a python http.server
    in a namespace of its own read 50 served at 724/s, that were a server of this namespace's, whose log had them).
    An address this namespace routes out (a veth's, a container's, as a --target's) is left to reach it, whatever
    listens here on the port: a 0.0.0.0 listener takes only connections to this namespace's own addresses."""
    from ..probes.listeners import listening_sockets, serving_on
    from ..probes.owner import socket_holders
    from ..probes.server_netns import netstat_namespace

    ours = netstat_namespace("self")
    if ours is None or any(netstat_namespace(pid) in (ours, None) for pid in attached):
        return  # in this namespace (or not known to be elsewhere): what check_listening read is where they go
    if not _stays_here(host, port):
        return  # routed out of this namespace, towards theirs or another machine's
    here = serving_on(listening_sockets(port), host)
    holders = {pid: set(inodes) for pid, inodes in socket_holders({row.inode for row in here}).items()}
    if holders.keys() & attached:
        return
    if here:
        sent = f"connections to {where} made here go to {_held_by(holders) if holders else 'a listener of its own'}"
    elif _loopback(host):
        sent = f"connections to {host} never leave this namespace, where nobody listens on {where}"
    else:
        return
    pid = min(attached)
    raise NotServing(
        f"--attach: {who} {'listen' if plural else 'listens'} on {where} in another network namespace than this "
        f"tool's, and {sent}; run accept-order inside theirs (nsenter -t {pid} -n, with -U --preserve-credentials "
        "where a user namespace of this user's holds it), or give --host an address of the server's that this "
        "namespace routes to"
    )


def _stays_here(host: str, port: int) -> bool:
    """Whether connections to host:port made here are taken in this namespace: loopback and the unspecified address
    are; another of its own addresses is unless NAT sends it on (address_netns.locate, which makes one connection
    to find out only where conntrack is loaded here); an address it does not hold is routed out. A server under `ip
    netns exec` reached by its veth address, beside a 0.0.0.0 listener of this namespace on the same port, was
    refused as if that listener took its connections."""
    import ipaddress

    try:
        if ipaddress.ip_address(host).is_unspecified:
            return True  # a connection to 0.0.0.0 is one to this host
    except ValueError:
        pass  # a name: locate resolves it
    if _loopback(host):
        return True
    from ..probes.address_netns import locate

    return locate(host, port).ours


def _loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
