"""From one sample and its verdict to the rows `inspect` saves and prints: processes, workers, listeners,
epoll instances, Unix links."""

from __future__ import annotations

from collections import Counter

from ...analysis.mechanism_values import Seen, Verdict
from ...core.measures import ListenerRow
from ...core.models import Mechanism
from ...probes.file_table import polls_of
from ...probes.proc_waits import ThreadWait
from ...probes.serving import Server
from .result import EpollView, ListenerView, ProcessRow, UnitView, WatchView
from .sample import Sample


def _one(inodes: frozenset[int], server: Server) -> str:
    if len(server.listeners) == 1:
        return "the listener"
    return f"listener {next(iter(inodes))}" if len(inodes) == 1 else f"{len(inodes)} listeners"


def _on(
    s: Seen, wait: ThreadWait, sample: Sample, server: Server, members: Counter[str], holder: bool, busy: bool
) -> str:
    """What the thread waits on, in a few words (`members`: how many descriptors each epoll open file has in
    the sample, by its first "pid:fd"; `holder`: a worker was seen waiting on the listeners, which a lock's holder
    does; `busy`: the verdict's busy worker)."""
    fd = wait.fd
    if s.via == "accept":  # running: taken for an accept() because its listener is a blocking socket (resolve)
        return _one(s.listeners, server) + (" (a blocking socket: accept() next)" if wait.call == "running" else "")
    if s.via == "epoll":
        flag = "EPOLLEXCLUSIVE" if s.exclusive else "no EPOLLEXCLUSIVE"
        own = f"{s.pid}:{fd}"
        shared = members[sample.same_epoll.get(own, own)]
        where = f"epoll fd {fd}" if fd is not None else "its epoll"
        return f"{where}{' (shared)' if shared > 1 else ''}: {_one(s.listeners, server)}, {flag}"
    if s.via in ("poll", "select"):
        if wait.fds is None:
            return f"a set not visible; holds {_one(s.holds, server)}"
        return f"its {s.via} set ({len(wait.fds)} fds): {_one(s.listeners, server)}"
    if s.via == "io_uring":
        return f"io_uring fd {fd}; holds {_one(s.holds, server)}"
    if s.via == "ring-unread":
        return f"io_uring fd {fd}: unknown whether it has an accept armed (its fdinfo could not be read)"
    if s.via == "passed":
        senders = sorted(p for p, inodes in sample.sockets.items() if inodes & s.unix_ends and p != s.pid)
        return f"Unix socket from pid {senders[0]}" if senders else "a Unix socket"
    if s.via == "lock" and wait.call == "running" and not holder:  # no one seen waiting with the lock: it may be
        # one of the running, between its wakeup and its accept (/proc shows no lock held)
        held = _one(s.holds, server)
        return f"running: takes the lock before it waits, and may hold it now (none waits with it); holds {held}"
    if s.via == "lock" and wait.call == "running":  # a lock taker (analysis/mechanism.py, ServerKind.lock_first)
        return f"running: takes the lock before it waits; holds {_one(s.holds, server)}"
    if busy:  # analysis/mechanism.py's Verdict.busy: serving a connection (a prefork child's kept one)
        return (
            f"busy: {wait.call}, not on {_one(s.holds, server)} (serving a connection); holds {_one(s.holds, server)}"
        )
    if s.via == "lock":
        return f"a lock (FUTEX_LOCK_PI); holds {_one(s.holds, server)}"
    if s.via == "idle":
        return f"epoll fd {fd} without the listener"
    return s.via


def unit_views(server: Server, sample: Sample, verdict: Verdict) -> tuple[UnitView, ...]:
    """The threads that take connections or wait for them: the verdict's waiters, fed workers, lock losers."""
    roles: dict[tuple[int, int], str] = {}
    for unit in verdict.waiters:
        roles[unit] = "acceptor" if verdict.mechanism == Mechanism.FD_PASS else "worker"
    roles.update({unit: "fed" for unit in verdict.fed})
    roles.update({unit: "lock" for unit in verdict.losers})
    roles.update({unit: "busy" for unit in verdict.busy})
    waits = {(pid, w.tid): w for pid, ws in sample.waits.items() for w in ws}
    members = Counter(sample.same_epoll.values())  # counted once, not once a worker (65,000 steps at 256)
    views: list[UnitView] = []
    index = 0
    for s in sorted((s for s in sample.seen if s.unit in roles), key=lambda s: s.unit):
        role = roles[s.unit]
        wait = waits[s.unit]
        label = "acc" if role == "acceptor" else f"w{index}"
        index += role != "acceptor"
        on = _on(s, wait, sample, server, members, bool(verdict.waiters), role == "busy")
        views.append(UnitView(label, s.pid, s.tid, role, wait.call, wait.fd, wait.wchan, on))
    return tuple(views)


def process_rows(server: Server, sample: Sample, verdict: Verdict) -> tuple[ProcessRow, ...]:
    units = {*verdict.waiters, *verdict.fed, *verdict.losers, *verdict.busy}
    working = {pid for pid, _ in units}
    parents = {p.ppid for p in server.processes if p.pid in working}
    rows = []
    for p in server.processes:
        if verdict.mechanism == Mechanism.FD_PASS and any(pid == p.pid for pid, _ in verdict.waiters):
            role = "acceptor"
        elif p.pid in working:
            role = "worker"
        elif p.pid in parents:
            role = "master"
        else:
            role = "process"
        waits = sample.waits.get(p.pid, ())
        holds = tuple(sorted(server.holders.get(p.pid, frozenset())))
        rows.append(ProcessRow(p.pid, p.ppid, p.name, role, len(waits), holds, waits[0].call if waits else "gone"))
    return tuple(rows)


def listener_views(
    rows: list[ListenerRow], server: Server, sample: Sample, units: tuple[UnitView, ...]
) -> tuple[ListenerView, ...]:
    """Each listener with the processes that hold it and the workers that wait on it."""
    labels = {(u.pid, u.tid): u.label for u in units if u.role in ("worker", "acceptor")}
    waiting = [(labels[s.unit], s.listeners) for s in sample.seen if s.unit in labels]
    return tuple(
        ListenerView(
            r.family,
            r.address,
            r.port,
            r.backlog,
            r.queue,
            r.inode,
            tuple(sorted(pid for pid, inodes in server.holders.items() if r.inode in inodes)),
            tuple(label for label, inodes in waiting if r.inode in inodes),
        )
        for r in rows
    )


def epoll_views(server: Server, sample: Sample, verdict: Verdict) -> tuple[EpollView, ...]:
    """Every epoll instance that watches a listener or that a worker waits in, with its watches; one
    shared instance is listed once, naming the other descriptors that are the same open file."""
    listeners = {r.inode for r in server.listeners}
    units = {*verdict.waiters, *verdict.fed, *verdict.losers}
    waited = {(pid, w.fd) for pid, ws in sample.waits.items() for w in ws if (pid, w.tid) in units}
    views: list[EpollView] = []
    listed: set[str] = set()
    alike: dict[str, list[tuple[int, int]]] = {}  # first "pid:fd" -> every descriptor of that open file
    for k, v in sample.same_epoll.items():
        pid_text, _, fd_text = k.partition(":")
        alike.setdefault(v, []).append((int(pid_text), int(fd_text)))
    for pid, table in sample.files.items():
        for fd, f in sorted((f.fd, f) for f in polls_of(table) if f.kind == "eventpoll"):  # not every socket
            if not ((pid, fd) in waited or any(w.inode in listeners for w in f.watches)):
                continue
            key = f"{pid}:{fd}"
            first = sample.same_epoll.get(key, key)
            if first in listed:
                continue
            listed.add(first)
            others = tuple(other for other in alike.get(first, ()) if other != (pid, fd))
            watches = tuple(WatchView(w.fd, w.events, w.inode, w.inode in listeners) for w in f.watches)
            views.append(EpollView(pid, fd, watches, others))
    return tuple(views)


def unix_links(server: Server, sample: Sample) -> int:
    """Unix socketpairs with one end in one of the server's processes and the other in another."""
    owner = {inode: pid for pid, inodes in sample.sockets.items() for inode in inodes}
    pairs = {frozenset((a, b)) for a, b in server.peers.items() if a in owner and b in owner and owner[a] != owner[b]}
    return len(pairs)
