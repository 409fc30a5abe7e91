"""The load each worker carries, not only what it accepts: which worker holds each open connection of the
server, and the bytes and data segments each connection moved while observed, added to its holder.

A sample is one inet_diag dump of the server's sockets with their tcp_info (probes/tcp_info.py) and the
workers' fd tables (`/proc/PID/fd -> socket:[INODE]`: the inode says who holds it). Each socket's counters
are differenced against its previous sample, keyed by its cookie (unique while the machine runs), and the
difference goes to the worker holding it now. A socket with no holder yet (still in a listen queue: inode
0) keeps its last attributed counters, so what it carried goes to the worker that takes it.

Where each socket's count starts (the rule chosen): a socket in the first sample counts from its counters
then (what it carried before the window is not the window's); a socket first seen later was not there at
the start, so it was accepted during the window and everything it carried was: it counts from 0. This needs
no tracing, and it is exact for bytes moved within the window, up to each connection's last sample: what a
connection carries between its last sample and its close is not counted, and a connection that opens and
closes between two samples is not seen at all (the result counts those against the traced accepts). How much
the first could be is counted: the connections that closed between two samples while busy (data came in
since the sample before their last, or within a second of their only one), the bytes counted on them, and
the longest time between two samples (each one's uncounted tail is shorter).

Closes, to the byte (probes/tcp_destroy.py): the kernel announces each of the server's sockets as it frees it,
with its final counters. A socket a look knew (by cookie) is differenced at its announcement against its
last look and added to the worker that held it then: its tail is counted, and it is not closed busy. One
missing from a look but not yet announced (the kernel announces from a workqueue, after the socket left its
tables) waits for its announcement; at the end the wait is SETTLE_S at most, and one still not announced
(lost when the buffer overflowed, or still in a process's fd table) is counted as before. So is one dumped with
an inode but in no worker's fd table: closed since the dump (a race, at a load's end on a busy machine: its tail,
dropped as after the window, left gunicorn's 61 kept connections 1,241 of 1,269 requests). A socket no look
saw (opened and closed between two) goes to its worker where that is known (the server has one worker
process); else it is counted as closed before any look, with its bytes. An abortive close (SO_LINGER 0:
tcp_disconnect) zeroes a socket's counters: its tail is unknown, and it counts as closed busy if it was.
The kernel counts a FIN received as one byte in (it moves rcv_nxt): a connection closed with one counts one
byte more than its data. Announcements read before the first look are of closes before the window, and those
of sockets the last look saw open (not closed by their server), read after it, of closes after the window: dropped.
Those of sockets no look saw, read while it settles, may be either: counted apart (closes_late) and said.
With more than one worker, a socket no look saw cannot be given to one: the watch is told the cookies the looks
know (DestroyWatch.known, None while a look reads the tables) and only counts the others, with their bytes in,
undecoded. The watch reads on a budget of CPU (tcp_destroy.SHARE): announcements it skipped for it (the kernel
dropped them while it held back, or they were left queued at the end) are counted apart from those lost; a
socket whose announcement was skipped is counted to its last look, like one never announced.

Threads share their process's fd table: for a threaded server the load is per process, not per thread.
Nothing here writes to the server: the dump and /proc are the kernel's tables. Root is needed only where
the kernel asks for it: another user's fd tables, and entering another network namespace.
"""

from __future__ import annotations

import statistics
import time
from collections import deque

from ...core.capabilities import SERVERS_USER, what_would_let_it
from ...core.waiting import wait_for
from ...probes.proc_processes import socket_inodes
from ...probes.server_netns import entry_refused
from ...probes.tcp_destroy import DestroyWatch
from ...probes.tcp_info import TcpSocket, server_sockets
from .load_tally import LoadTally
from .sampling import paced
from .server import Watched, forked_sockets

_ZERO = (0, 0, 0, 0)  # bytes in, bytes out, data segments in, data segments out
RECENT_S = 1.0  # at a socket's first sample: data in within this long says it is busy (no sample before)
COSTS_KEPT = 5  # the pace is the median CPU cost of this many recent samples (see sample)
SETTLE_S = 0.5  # at the end: the longest wait for the announcements of sockets gone from the last look
CLOSED_BY_SERVER = frozenset((4, 5, 9, 11))  # FIN_WAIT1, FIN_WAIT2, LAST_ACK, CLOSING, in no fd table (inode 0)


def _counters(sock: TcpSocket) -> tuple[int, int, int, int]:
    return (sock.bytes_received or 0, sock.bytes_acked or 0, sock.data_segs_in or 0, sock.data_segs_out or 0)


class LoadSampler(LoadTally):
    """Looks at the server's sockets and the workers' fd tables, and the kernel's announcements of closes: what
    each worker process held and carried, tallied (load_tally.py)."""

    def __init__(self, watched: Watched) -> None:
        super().__init__(watched)
        self.cost_s = 0.0  # what the last sample took
        self._costs: deque[float] = deque(maxlen=COSTS_KEPT)  # the CPU of the last samples but the first
        self.started: set[int] = set()  # cookies in the first sample: open before the window
        self._last: dict[int, tuple[int, int, int, int]] = {}  # cookie -> its counters already attributed
        # cookie -> (bytes in counted on it, busy at its last sample), for the sockets a worker held: the ones
        # whose uncounted tail matters when they close
        self._tail: dict[int, tuple[int, bool]] = {}
        self._holder: dict[int, int] = {}  # cookie -> the worker that held it at its last look with a holder
        self._gone, self._shut = set[int](), set[int]()  # gone from a look, unannounced; the last saw shut (settle)
        self._only = watched.workers[0] if len(watched.workers) == 1 else None  # the one worker: any holder
        # what was given to the one worker for being the only one (closes no look saw it hold), by when their
        # announcements were taken: (monotonic, connections, their counters), for taken_back
        self._given: list[tuple[float, int, tuple[int, int, int, int]]] = []
        # a one-process threaded server's: what each connection a look saw held carried, by its inode, for the
        # thread whose epoll watched it (thread_split.py's bytes per thread); cookie -> inode while it is open
        self.by_inode: dict[int, list[int]] | None = {} if watched.threaded and len(watched.workers) == 1 else None
        self._inodes: dict[int, int] = {}

    def open_closes(self) -> None:
        """Join the kernel's announcements of closes, before the first look; where that cannot be done the
        tails stay uncounted, and closes_missing says why."""
        try:
            self.closes = DestroyWatch(self.watched.ports, self.watched.netns_pid)
        except OSError as exc:  # PermissionError included: setns, or a kernel that keeps the groups to root
            self.closes_missing = f"{exc.strerror or exc}"
            return
        self.closes.start()

    def sample(self) -> None:
        """One dump and the workers' fd tables; every socket's counters since its last sample added to its
        holder. The first sample only sets where each socket starts."""
        if self.missing is not None:
            return
        began, cpu_began = time.perf_counter(), time.thread_time()
        closed = self.closes.take() if self.closes is not None else []
        if self.samples:  # before the dump: each one's last look is one before this (none: before the window)
            self._closed(closed)
        if self.closes is not None:  # every announcement decoded until this look's cookies are known
            self.closes.known = None
        try:
            sockets = server_sockets(self.watched.ports, self.watched.netns_pid)
            held = {pid: socket_inodes(pid) | forked_sockets(self.watched, pid) for pid in self.watched.workers}
        except PermissionError as exc:
            self.missing = _why(exc)
            return
        except OSError as exc:
            self.missing = f"the kernel's socket tables could not be read over netlink ({exc.strerror or exc})"
            return
        owner = {inode: pid for pid, inodes in held.items() for inode in inodes}
        first = self.samples == 0
        # busy: counters moved since the sample before, or data came in since it (within RECENT_S at a first)
        recent_ms = 1000 * max(RECENT_S, time.monotonic() - self._last_at if self.samples else 0.0)
        last: dict[int, tuple[int, int, int, int]] = {}
        tail: dict[int, tuple[int, bool]] = {}
        holder: dict[int, int] = {}
        old_tail, old_holder = self._tail, self._holder
        counts = dict.fromkeys(self.carried, 0)
        # accepted (an inode) yet in no worker's fd table: closed since the dump, gone (see the module doc)
        leaving = set[int]()
        for sock in sockets:
            now = _counters(sock)
            pid = owner.get(sock.inode) if sock.inode else None
            if first:
                self.started.add(sock.cookie)
            if pid is None:
                if sock.inode:
                    leaving.add(sock.cookie)
                last[sock.cookie] = now if first else self._last.get(sock.cookie, _ZERO)
                if sock.cookie in old_tail:  # left its worker's fd table, not yet the kernel's: closing
                    tail[sock.cookie] = old_tail[sock.cookie]
                if sock.cookie in old_holder:
                    holder[sock.cookie] = old_holder[sock.cookie]
                continue
            counts[pid] += 1
            before = now if first else self._last.get(sock.cookie, _ZERO)
            last[sock.cookie] = now
            holder[sock.cookie] = pid
            self.carried[pid].connections.add(sock.cookie)
            if sock.cookie not in self.started:
                self.new_seen.add(sock.cookie)
            self._add(pid, now, before)
            if self.by_inode is not None:
                self._inodes[sock.cookie] = sock.inode
                self._by_inode(sock.cookie, now, before)
            recv_ms = sock.last_data_recv_ms
            busy = now != before or (recv_ms is not None and recv_ms < recent_ms)
            tail[sock.cookie] = (old_tail.get(sock.cookie, (0, False))[0] + now[0] - before[0], busy)
        if self.closes is not None:  # gone from the tables: kept for its announcement, which comes after
            gone = self._last.keys() - last.keys()
            self._gone = ((self._gone | gone) - last.keys()) | leaving
            for cookie in gone:
                last[cookie] = self._last[cookie]
                if cookie in old_tail:
                    tail[cookie] = old_tail[cookie]
                if cookie in old_holder:
                    holder[cookie] = old_holder[cookie]
        else:
            for cookie, (counted, busy) in old_tail.items():
                if busy and cookie not in last:  # closed since the last sample, which saw it busy
                    self.closed_busy += 1
                    self.closed_busy_bytes_in += counted
        self._last, self._tail, self._holder = last, tail, holder  # closed sockets drop out here
        self._shut = {s.cookie for s in sockets if not s.inode and s.state in CLOSED_BY_SERVER}
        if self.closes is not None and self._only is None:  # the others cannot be given to a worker: counted
            self.closes.known = last
        for pid, carried in self.carried.items():
            carried.held = counts[pid]
            carried.peak = max(carried.peak, counts[pid])
        stamp = time.monotonic()
        if self.samples:
            self.longest_s = max(self.longest_s, stamp - self._last_at)
        else:
            self._first_at = stamp
        self._last_at = stamp
        self.samples += 1
        self.sampled = True
        self.cost_s = time.perf_counter() - began
        # Paced by the CPU the sample used (this thread's, user and system: the dump and fd tables are read on its
        # time), not its wall time: on a busy machine a sample waits for a CPU longer than it runs (10,000
        # connections: 0.43 s wall, 0.19 s CPU), the wait costs the server nothing, and BUDGET is a share of one CPU.
        # The median of the last few costs, the first left out: it reads every fd table and enters the namespace
        # cold (40+ ms of CPU where the next take 1-2), and one slow sample (preempted in the kernel's dump) would
        # otherwise put the next seconds off, past the life of the connections it was to see.
        if self.samples > 1:
            self._costs.append(time.thread_time() - cpu_began)
        self.every_s = paced(statistics.median(self._costs) if self._costs else 0.0)

    def _add(self, pid: int, now: tuple[int, int, int, int], before: tuple[int, int, int, int]) -> None:
        carried = self.carried[pid]
        carried.bytes_in += now[0] - before[0]
        carried.bytes_out += now[1] - before[1]
        carried.segments_in += now[2] - before[2]
        carried.segments_out += now[3] - before[3]
        carried.interval_bytes_in += now[0] - before[0]

    def _by_inode(self, cookie: int, now: tuple[int, int, int, int], before: tuple[int, int, int, int]) -> None:
        """What a connection a look saw held carried since, added to its inode's (a threaded server's, see
        __init__)."""
        if self.by_inode is not None and (inode := self._inodes.get(cookie)):
            moved = self.by_inode.setdefault(inode, [0, 0])
            moved[0] += now[0] - before[0]
            moved[1] += now[1] - before[1]

    def _closed(self, closed: list[TcpSocket]) -> None:
        """The announced closes: each one's final counters since its last look, to the worker that held it
        then (see the module doc)."""
        taken_at, given, moved = time.monotonic(), 0, _ZERO
        for sock in closed:
            final, cookie = _counters(sock), sock.cookie
            if cookie not in self._last:  # opened and closed between two looks
                if self._only is not None:
                    self._add(self._only, final, _ZERO)
                    self.closes_counted += 1
                    given, moved = given + 1, _plus(moved, final, _ZERO)
                else:
                    self.closed_unlooked += 1
                    self.closed_unlooked_bytes_in += final[0]
                continue
            before = self._last.pop(cookie)
            held_by = self._holder.pop(cookie, None)  # None: no look saw a worker hold it
            pid = self._only if held_by is None else held_by
            counted, busy = self._tail.pop(cookie, (0, False))
            self._gone.discard(cookie)
            if any(f < b for f, b in zip(final, before, strict=True)):  # zeroed by an abortive close
                if busy:
                    self.closed_busy += 1
                    self.closed_busy_bytes_in += counted
            elif pid is None:  # seen only waiting in a listen queue: no worker held it at a look
                self.closed_unlooked += 1
                self.closed_unlooked_bytes_in += final[0] - before[0]
            else:
                self._add(pid, final, before)
                self._by_inode(cookie, final, before)
                self.closes_counted += 1
                if held_by is None:  # given to the one worker for being the only one
                    given, moved = given + 1, _plus(moved, final, before)
            self._inodes.pop(cookie, None)
        if given:
            self._given.append((taken_at, given, moved))

    def taken_back(self, since: float) -> int:
        """Take back from the one worker what it was given for being the only one (closes no look saw it hold)
        from announcements taken at `since` (monotonic) or after: a newcomer holding the listener from then (a
        reload's, reloaded.py) serves the port too, so they may be its own, and are counted as closed before any
        look (no worker's). By hand, HAProxy -W reloaded in the window: 27 requests the new worker's replies named
        were counted to the old worker, which served 6 (2,640 bytes received said for its 480). How many."""
        if self._only is None:
            return 0
        carried, count = self.carried[self._only], 0
        for taken_at, given, moved in self._given:
            if taken_at >= since:
                count += given
                carried.bytes_in -= moved[0]
                carried.bytes_out -= moved[1]
                carried.segments_in -= moved[2]
                carried.segments_out -= moved[3]
                self.closes_counted -= given
                self.closed_unlooked += given
                self.closed_unlooked_bytes_in += moved[0]
        self._given = [entry for entry in self._given if entry[0] < since]
        return count

    def settle(self) -> None:
        """At the end, after the last look: the announcements of the sockets gone from it (SETTLE_S at most);
        one never announced is counted as closed busy if it was; then the announcements are left. The window
        ends at that look: a close of a socket it saw open is not the window's (one it saw closed by its server
        is), nor one no look saw announced while this waits (those read when this began, ms after it, are): those
        are counted apart (closes_late), since they may have closed in the window's last moments as well."""
        if self.closes is None or self.missing is not None:
            return
        closes, unseen = self.closes, self.closes.held()  # by now, read to what is queued: the window's
        first = [True]  # the first take keeps the closes no look saw too; a socket the look saw open, none

        def announced() -> bool:
            unlooked, first[0], window = first[0], False, self._gone | self._shut
            taken = closes.take()
            late = [s for s in taken if not unlooked and s.cookie not in window and s.cookie not in self._last]
            self.closes_late += len(late)
            self.closes_late_bytes_in += sum(s.bytes_received or 0 for s in late)
            self._closed([s for s in taken if s.cookie in window or (unlooked and s.cookie not in self._last)])
            return not self._gone

        wait_for(announced, SETTLE_S, interval_s=0.005)
        closes.close()
        self.closes_late += closes.unseen - unseen[0]  # counted undecoded by the reader meanwhile (see above)
        self.closes_late_bytes_in += closes.unseen_bytes_in - unseen[1]
        self.closes_lost, self.closes_skipped, self._unseen = self.closes.lost, self.closes.skipped, unseen
        for cookie in self._gone:
            counted, busy = self._tail.get(cookie, (0, False))
            if busy:
                self.closed_busy += 1
                self.closed_busy_bytes_in += counted
        self._gone = set()

    def close(self) -> None:
        if self.closes is not None:
            self.closes.close()


def _plus(
    total: tuple[int, int, int, int], final: tuple[int, int, int, int], before: tuple[int, int, int, int]
) -> tuple[int, int, int, int]:
    """`total` with what a connection moved from `before` to `final` added."""
    return (
        total[0] + final[0] - before[0],
        total[1] + final[1] - before[1],
        total[2] + final[2] - before[2],
        total[3] + final[3] - before[3],
    )


def _why(exc: PermissionError) -> str:
    if "setns" in str(exc):
        return f"{entry_refused()}, so its sockets' counters could not be read"
    return f"the workers' open files are not this user's to read ({what_would_let_it(or_as=SERVERS_USER)})"
