"""Which port each traced accept was on, so that observe --port A counts port A's connections alone.

A server's workers may listen on several ports (HAProxy's frontends, nginx's server blocks) and accept on all of
them; the accept tracepoints count every accept a worker makes. accept_watch.py keys each accept by the descriptor
it was asked of (sys_enter_accept's fd, a tracepoint argument: no kernel struct read, so bpftrace starts as cheaply
as before); here that descriptor is read in its process's fd table (/proc/PID/fd) once, when first seen, and the
socket's inode looked up among its network namespace's listeners. HAProxy with two frontends read 'the 2 threads
shared 15 connections' for --port A when all 15 went to B.

An accept is left out only where its descriptor is known to be a listener on another port, or a UNIX socket's
(NO_PORT: HAProxy's stats socket): one whose call began before the probes attached (its descriptor unseen) is
counted, as it was before ports were told apart, unless the thread was seen blocked in that accept as bpftrace
started (/proc/TID/syscall: its first argument, the descriptor, given to the program's BEGIN, `seeded`); so is one
whose process ended before its descriptor was read (the accept counter reads its workers' tables as it starts,
read_tables; observe reads each descriptor as first seen, at a look every 0.1 s)."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .proc_processes import namespace_listeners
from .proc_waits import ACCEPTS, thread_ids, thread_wait

Fd = tuple[int, int]  # (pid, fd)
OnKey = tuple[int, int, int]  # (pid, tid, fd + 1), as accept_watch counts them
# the 'port' of a UNIX socket's listener: on none of those asked (1-65535). HAProxy's threads accept on its stats
# socket too: 20 'show info' asks of it and 10 requests to frontend A read 30 accepts for --port A, beside a note
# that they were A's alone
NO_PORT = 0


class ListenerPorts:
    """The listening port behind a process's descriptor, read once per (pid, fd) and kept (a listener's descriptor
    lives as long as the server's config: a reload's new one is another process's)."""

    def __init__(self, netns_pid: int) -> None:
        self.netns_pid = netns_pid  # a process in the server's network namespace: its listeners are the server's
        self._inodes: dict[Fd, int | None] = {}  # None: read, and no socket
        self._ports: dict[int, int | None] = {}  # socket inode -> its port as a listener (None: not one at a dump)

    def port(self, pid: int, fd: int) -> int | None:
        """The port of the listener descriptor `fd` of `pid` is; NO_PORT for a UNIX socket's (accepted on: a
        listener of no port, HAProxy's stats socket); None where it is not known to be one."""
        if (pid, fd) not in self._inodes:
            inode = _socket_inode(pid, fd)
            if inode is None and not os.path.exists(f"/proc/{pid}/fd"):
                return None  # gone (or hidden) before it was read: not kept, its port unknown, the accept counted
            self._inodes[(pid, fd)] = inode
        inode = self._inodes[(pid, fd)]
        if inode is None:
            return None
        if inode not in self._ports:  # a listener opened since the last dump (a newcomer's own), or none: one dump
            self._ports.update((row.inode, row.port) for row in namespace_listeners(self.netns_pid))
        if inode not in self._ports:  # a UNIX socket's, or closed since (a soft-stopped HAProxy's): kept, read once
            self._ports[inode] = NO_PORT if inode in unix_sockets(self.netns_pid) else None
        return self._ports[inode]

    def read_tables(self, pids: Collection[int]) -> set[int]:
        """Read `pids`' fd tables now, keep their listeners' descriptors and return the ports they listen on: a
        process that exits before its accepts are placed (a reload's old worker, a recycled one) is placed by them,
        where its table read at the stop is gone and its accepts were every port's (5 for A's 2, B's 3)."""
        found: dict[Fd, int] = {}
        for pid in pids:
            try:
                names = os.listdir(f"/proc/{pid}/fd")
            except OSError:  # gone, or another user's
                continue
            for name in names:
                if (inode := _socket_inode(pid, int(name))) is not None:
                    found[(pid, int(name))] = inode
        if not found:
            return set()
        self._ports.update((row.inode, row.port) for row in namespace_listeners(self.netns_pid))
        listening = {fd: inode for fd, inode in found.items() if self._ports.get(inode) is not None}
        self._inodes.update(listening)  # connections' descriptors are read as asked of, should one become a listener
        return {port for inode in listening.values() if (port := self._ports[inode]) is not None}

    def elsewhere(self, on: Mapping[OnKey, int], ports: Collection[int]) -> dict[OnKey, int]:
        """Of `on`'s counts, those asked of a listener known to be on none of `ports`."""
        out: dict[OnKey, int] = {}
        for (pid, tid, fd), n in on.items():
            port = self.port(pid, fd - 1) if fd else None
            if port is not None and port not in ports:
                out[(pid, tid, fd)] = n
        return out


def own_port_counts(
    counts: Mapping[int, int],
    described: Mapping[tuple[int, int], int],
    ports: Collection[int],
    listeners: ListenerPorts,
) -> dict[int, int]:
    """An AcceptCounter's `counts` (by pid, or a thread worker's tid: /proc/TID/fd is its process's table) less the
    accepts `described` (by key and fd + 1: bpftrace_readings.parse_descriptors) asked of listeners on other ports."""
    out = listeners.elsewhere({(key, key, fd): n for (key, fd), n in described.items()}, ports)
    return {key: n for (key, _), n in less({(k, k): n for k, n in counts.items()}, out).items()}


def own_port_gaps(
    gaps: Mapping[int, int],
    gaps_on: Mapping[tuple[int, int, int], int],
    ports: Collection[int],
    listeners: ListenerPorts,
) -> dict[int, int]:
    """An AcceptCounter's gaps by bucket less those `gaps_on` (by bucket, pid and fd + 1) puts after an accept on a
    listener of another port: what a worker did between serving another port's connection and its next accept."""
    left = dict(gaps)
    for (bucket, pid, fd), n in gaps_on.items():
        port = listeners.port(pid, fd - 1) if fd else None
        if port is not None and port not in ports:
            left[bucket] = max(0, left.get(bucket, 0) - n)
    return {bucket: n for bucket, n in left.items() if n}


def own_port_totals(
    counts: Mapping[int, int],
    empty: Mapping[int, int] | None,
    gaps: Mapping[int, int] | None,
    described: tuple[Mapping[tuple[int, int], int], Mapping[tuple[int, int], int], Mapping[tuple[int, int, int], int]],
    ports: Collection[int],
    listeners: ListenerPorts,
    other_ports: Sequence[int],
) -> tuple[dict[int, int], dict[int, int] | None, dict[int, int] | None, list[str]]:
    """An AcceptCounter's END counts, empty accepts and gaps less those on listeners of other ports than `ports`
    (`described`: bpftrace_readings.parse_descriptors), and what to say where that cannot be done. A map by
    descriptor is bumped in the same probe as its total, so their sums are equal unless bpftrace's map filled (4,096
    keys, the rest dropped without a word: @gapon's bucket x pid x descriptor filled at 64 workers serving two ports,
    and 8,123 gaps were given for 4,800 accepts on A). What it lost cannot be placed: the counts are then every
    port's, as said, and the gaps none (another port's connections' service is no sample of this one's)."""
    notes: list[str] = []
    took, found, gaps_on = described
    others = ", ".join(map(str, other_ports))  # the workers' other ports, as read when the counter started
    lost = _dropped(counts, took) or (empty is not None and _dropped(empty, found))
    if lost:
        notes.append(
            f"it counts the accepts on every port the workers listen on, {others} too: bpftrace's map of them by "
            f"listener filled ({FULL}), so those on other ports could not be told apart"
        )
    else:
        counts = own_port_counts(counts, took, ports, listeners)
        empty = None if empty is None else own_port_counts(empty, found, ports, listeners)
    if gaps is not None and _dropped(gaps, gaps_on):
        notes.append(
            f"the gaps from each accept to the thread's next accept call are not kept: bpftrace's map of them by "
            f"listener filled ({FULL}; {sum(gaps_on.values()):,} of {sum(gaps.values()):,} kept), so those after a "
            f"connection to port {others} could not be told apart"
        )
        gaps = None
    elif gaps is not None:
        gaps = own_port_gaps(gaps, gaps_on, ports, listeners)
    return dict(counts), None if empty is None else dict(empty), None if gaps is None else dict(gaps), notes


FULL = "its 4,096 keys by default, BPFTRACE_MAP_KEYS_MAX"  # what fills it, and the knob that sets it


def _dropped(total: Mapping[Any, int], by_descriptor: Mapping[Any, int]) -> bool:
    """Whether the map by descriptor lost keys: it counts what `total` counts, bumped beside it."""
    return sum(by_descriptor.values()) < sum(total.values())


def less(counts: Mapping[tuple[int, int], int], out: Mapping[OnKey, int]) -> dict[tuple[int, int], int]:
    """`counts` by (pid, tid) less those of `out` (by pid, tid and descriptor), never below 0."""
    left = dict(counts)
    for (pid, tid, _), n in out.items():
        left[(pid, tid)] = max(0, left.get((pid, tid), 0) - n)
    return left


def _socket_inode(pid: int, fd: int) -> int | None:
    try:
        link = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None
    return int(link[8:-1]) if link.startswith("socket:[") and link.endswith("]") else None


def unix_sockets(pid: int) -> set[int]:
    """The inodes of the UNIX sockets in `pid`'s network namespace (/proc/PID/net/unix, the 7th field of a line each;
    read only where an accept's descriptor is a socket no TCP listener has); none where it cannot be read."""
    try:
        with open(f"/proc/{pid}/net/unix") as lines:
            next(lines, None)  # the header
            return {int(fields[6]) for line in lines if len(fields := line.split()) > 6 and fields[6].isdigit()}
    except OSError:
        return set()


def blocked_in_accept(pids: Collection[int]) -> dict[int, int]:
    """Thread id -> the descriptor it is blocked in accept on now, of `pids`' threads (a blocking server's: one whose
    threads wait in epoll or poll has none); none where /proc will not say (another user's, gone)."""
    out: dict[int, int] = {}
    for pid in pids:
        for tid in thread_ids(pid):
            wait = thread_wait(pid, tid, name="")
            if wait.call in ACCEPTS and wait.fd is not None:
                out[tid] = wait.fd
    return out


def seeded(fds: Mapping[int, int]) -> str:
    """The BEGIN probe giving each thread blocked in accept its descriptor (+ 1, as the enter probe keeps it in
    @fd): its accept began before the probes attached, so the enter probe never saw it. '' for none."""
    if not fds:
        return ""
    return "BEGIN { " + " ".join(f"@fd[{int(tid)}] = {int(fd) + 1};" for tid, fd in sorted(fds.items())) + " }\n"
