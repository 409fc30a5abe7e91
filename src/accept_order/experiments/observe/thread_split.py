"""Which thread of a threaded server serves which connection: the connections each thread's own epoll watches,
looked at once an interval at most, less often where a look is slow (probes/thread_epolls.py). HAProxy's threads
share one fd table, so the load read from it is the process's; but each thread polls its own epoll, and the thread
a connection was handed to alone watches it there. Where two threads wait on one epoll the split is not this
(whichever wakes serves), and is not said.

A look: one inet_diag dump of the server's open connections (their inodes), each thread's syscall line, and each
epoll's fdinfo. A thread running at a look is not seen waiting, so until it is its epoll is not known: its
connections are counted as in no known epoll, and said so. Under a load that keeps the threads running, most are
first seen waiting only once it is over (by hand: HAProxy 2.6, 4 threads, wrk -c40, threads 1 and 3 running at each
look for 5 s, then idle), so the look each thread was first placed at is kept and said: the most each held and the
distinct it watched are of the looks from there (the idle end alone read '0 at most' where each served 10)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from ...probes.server_netns import same_namespace
from ...probes.tcp_info import server_sockets
from ...probes.thread_epolls import epoll_count, epolls_waited, watched_inodes
from ...servers.watched import gone
from .result import ObserveResult
from .sampling import paced
from .server import Watched


class ThreadSplit:
    """Per thread of a one-process threaded server: the connections its epoll watched at the last look, the most at
    one look, and the distinct connections it watched at any look."""

    def __init__(self, watched: Watched) -> None:
        self.pid = watched.workers[0]
        self.tids = [u.tid for u in watched.units if u.tid is not None]
        self.ports = watched.ports
        self.netns_pid = None if same_namespace(watched.netns_pid) else watched.netns_pid
        self.listeners = watched.inodes
        self.epolls: dict[int, int] = {}  # tid -> the epoll it was last seen waiting on
        self.looks = 0
        self.held: list[int | None] = [None] * len(self.tids)
        self.peak = [0] * len(self.tids)
        self.seen: list[set[int]] = [set() for _ in self.tids]
        self.first: list[int | None] = [None] * len(self.tids)  # the look (from 1) at which each was first placed
        self.unplaced: int | None = None  # connections in no known epoll at one look, the most
        # why there is no split: set once (here where its threads share epolls: its fd table, read before the
        # window), and no look is taken after it
        self.why = shared_epolls(self.pid, len(self.tids))
        self._next = 0.0  # the monotonic time before which a look is put off (its cost paced, as the others')

    def look(self, last: bool = False) -> None:
        """One look: each thread's epoll (where it waits now), the server's connections, and each one's watcher;
        put off while the last one's cost is more than its BUDGET share of the time since (2,000 connections: 40 ms
        a look at load 10), except the `last`, at the window's end."""
        now = time.monotonic()
        if self.why is not None or (not last and now < self._next):
            return
        try:
            self._look()
        finally:
            self._next = now + paced(time.monotonic() - now)

    def _look(self) -> None:
        if gone(self.pid):  # exited (a reload's old worker): what its port holds now is another process's
            return
        self.epolls.update(epolls_waited(self.pid, self.tids))
        if len(set(self.epolls.values())) < len(self.epolls):
            self.why = "its threads wait on one epoll between them, so any of them may serve what it watches"
            return
        try:
            open_ = {s.inode for s in server_sockets(self.ports, self.netns_pid) if s.inode} - self.listeners
        except OSError as exc:
            self.why = f"its connections could not be listed ({exc.strerror or exc})"
            return
        placed: set[int] = set()
        for index, tid in enumerate(self.tids):
            epfd = self.epolls.get(tid)
            watched = watched_inodes(self.pid, epfd) if epfd is not None else None
            if watched is None:
                self.held[index] = None
                continue
            if self.first[index] is None:
                self.first[index] = self.looks + 1
            mine = watched & open_
            if mine & placed:  # a connection in two threads' epolls: no one thread serves it
                self.why = "a connection was watched by two threads' epolls, so which serves it is not one thread's"
                return
            placed |= mine
            self.held[index] = len(mine)
            self.peak[index] = max(self.peak[index], len(mine))
            self.seen[index] |= mine
        self.unplaced = max(self.unplaced or 0, len(open_ - placed))
        self.looks += 1

    def of(self, tid: int | None, carried: Mapping[int, list[int]] | None = None) -> dict[str, int | None]:
        """The fields of thread `tid`'s ObservedWorker; None where there is no split or it was not placed at the
        last look (held), or at any (the most at one look and the distinct: of the looks from `serving_from` on,
        where it was first placed; what it held at looks before, its epoll not known, is not among them). With
        `carried` (the load's bytes in and out by connection inode, load.py's by_inode), the bytes of the
        connections its epoll watched at any look: a connection stays with the thread it was handed to, so all it
        carried is that thread's."""
        if tid not in self.tids or self.why is not None or not self.looks:
            return {}
        index = self.tids.index(tid)
        first = self.first[index]
        fields: dict[str, int | None] = {
            "serving_held": self.held[index],
            "serving_peak": None if first is None else self.peak[index],
            "serving_seen": None if first is None else len(self.seen[index]),
            "serving_from": first,
        }
        if carried is not None and first is not None:
            moved = [carried[inode] for inode in self.seen[index] if inode in carried]
            fields["serving_bytes_in"] = sum(m[0] for m in moved)
            fields["serving_bytes_out"] = sum(m[1] for m in moved)
        return fields


def shared_epolls(pid: int, threads: int) -> str | None:
    """Why there is no split where the process holds fewer epolls than the threads taken as its workers: they share
    them, and the one seen waiting in an epoll is only the one polling it now. A server this tool does not know is
    taken per thread: by hand, a Go net/http server (GOMAXPROCS=4, 10 threads, 1 epoll, 12 kept connections) had
    one thread in epoll_pwait, and the line read that it served all 12."""
    count = epoll_count(pid)
    if not count or count >= threads:  # none: gone, or threads that wait elsewhere (no split is found)
        return None
    return (
        f"its {threads} threads hold {count} {'epoll' if count == 1 else 'epolls'} between them, so the one seen "
        "waiting in an epoll is only the one polling it then, not the one that serves what it watches"
    )


def serving_line(result: ObserveResult) -> str | None:
    """The verdict's line on which thread serves what: the connections each thread's epoll watched (HAProxy hands
    each accepted connection to one thread, which alone polls it). None where not looked at (not threaded, a file
    from before) or where there is no split (said why)."""
    if not result.threaded or not result.serving_looks and result.serving_why is None:
        return None
    if result.serving_why is not None:
        return f"which thread serves each connection is not known: {result.serving_why}"
    if not split_known(result):
        return None  # no thread was seen waiting in an epoll (threads that block elsewhere): nothing is split
    held = ", ".join("-" if w.serving_held is None else f"{w.serving_held:,}" for w in result.workers)
    peak = ", ".join("-" if w.serving_peak is None else f"{w.serving_peak:,}" for w in result.workers)
    seen = sum(w.serving_seen or 0 for w in result.workers)
    never = [str(w.index) for w in result.workers if w.serving_seen is None]
    # placed from a later look (None: a file saved before serving_from, whose figures were of every look)
    late = [w for w in result.workers if w.serving_seen is not None and (w.serving_from or 1) > 1]
    said = (
        f"connections each thread serves (those its own epoll watches, at {result.serving_looks:,} "
        f"{'look' if result.serving_looks == 1 else 'looks'}): {held} at the last look, {peak} at most; "
        f"{seen:,} distinct {'at the looks each was placed' if late or never else 'in all'}"
    )
    said += _bytes(result)
    if result.serving_unplaced and result.reloaded is None:  # after a reload, the newcomer's are on the port too
        said += f"; up to {result.serving_unplaced:,} open at one look in no thread's known epoll"
    if late:
        groups: dict[int, list[str]] = {}
        for w in late:
            groups.setdefault(w.serving_from or 1, []).append(str(w.index))
        froms = " and ".join(f"thread {', '.join(group)} from look {look:,}" for look, group in sorted(groups.items()))
        said += (
            f"; {froms} of {result.serving_looks:,} only (a thread running at a look is not placed at it, as under "
            "a load that keeps it busy): the most and the distinct of each are of those looks, and what each served "
            "before is among the connections in no known epoll"
        )
    if never:
        said += (
            f" (thread {', '.join(never)} never seen waiting in its epoll, so its own are among the connections in no "
            "known epoll: -)"
        )
    return said


def _bytes(result: ObserveResult) -> str:
    """What each thread's connections carried, where the load was read with the split (a file from before: none)."""
    if all(w.serving_bytes_in is None for w in result.workers):
        return ""
    moved_in = ", ".join("-" if w.serving_bytes_in is None else f"{w.serving_bytes_in:,}" for w in result.workers)
    moved_out = ", ".join("-" if w.serving_bytes_out is None else f"{w.serving_bytes_out:,}" for w in result.workers)
    return (
        # a connection open as observe began counts from that first look, one opened since from its start (load.py)
        "; their bytes (each connection's from its start, or the first look for one open as observe began, to its "
        f"close, to the thread whose epoll watched it): "
        f"{moved_in} in, {moved_out} out (a connection no look placed, opened and closed between two, is in none)"
    )


def split_known(result: ObserveResult) -> bool:
    """Whether the result splits its connections by thread: looked at, with no reason not to, and some thread seen
    waiting in its epoll (placed at the last look, or at every look: under a load that keeps every thread running
    at the first look, only the last's split may be known, and is said)."""
    return (
        result.threaded
        and result.serving_looks > 0
        and result.serving_why is None
        and any(w.serving_seen is not None or w.serving_held is not None for w in result.workers)
    )
