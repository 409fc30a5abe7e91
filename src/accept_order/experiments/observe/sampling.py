"""What observe reads from /proc and netlink while the server runs: each worker's CPU and context switches,
the listen queue's depth, the kernel's listen counters, and (without tracing) which worker holds which
connection. Every read is of the kernel's tables: nothing here writes to the server or signals it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...probes.listeners import listening_sockets_of
from ...probes.server_netns import counters_of
from ...probes.tcp_info import server_sockets
from ...servers.thread_switches import WorkerUsage
from .server import Unit, Watched, forked_sockets, held_sockets

SAMPLE_EVERY_S = 0.1  # the listen queue (and, untraced, who holds what) is sampled this often ...
BUDGET = 0.01  # ... or less often, so that sampling takes at most this share of one CPU (see paced)
_LISTEN = "0A"
_TIME_WAIT = "06"


@dataclass(frozen=True)
class Usage:
    voluntary: int
    involuntary: int
    cpu_s: float


def usage_of(unit: Unit, reader: WorkerUsage, threads: bool = True) -> Usage | None:
    """A worker's context switches and CPU time so far, read as latency --attach reads them (`reader`, one per
    observation): a thread's own (HAProxy's, h2o's); a process's every thread's, switches and CPU alike. Its
    /proc/PID/status, the main thread's alone, read over 120 sequential connections 0 switches of a Puma worker's
    447, 204 of Caddy's 1,099, 151 of a gunicorn gthread worker's 383 (tests/test_observe_thread_sleeps.py). None
    when gone."""
    found = reader.of(unit.id, thread=unit.tid is not None, threads=threads)
    return None if found is None else Usage(*found)


class PacedUsage:
    """Every worker's usage at each of observe's ticks (usage_of), its threads' switches read again only while that
    costs at most BUDGET of an interval: at 2 vCPUs, 64 workers of 8 threads took 60-80 ms of CPU a tick, 8 of 1,000
    0.84 s, longer than the 1 s interval, and the ticks and the samples share one loop (review RJ). The CPU is the
    process clock at every tick; the switches are read at the start and the last tick in any case (a thread that
    ends between two readings loses its switches since the first)."""

    def __init__(self, interval_s: float) -> None:
        self.reader = WorkerUsage()
        self.interval_s = interval_s
        self.cost_s = 0.0  # the CPU the last reading of every thread took

    def read(self, units: Sequence[Unit], every: bool = False) -> list[Usage | None]:
        """Each unit's usage now; `every`: read every thread's switches whatever it costs (the start, the end)."""
        threads = every or self.cost_s <= BUDGET * self.interval_s
        began = time.process_time()
        read = [usage_of(unit, self.reader, threads) for unit in units]
        if threads:
            self.cost_s = time.process_time() - began
        return read


class QueueSampler:
    """The depth of the server's listen queues (Recv-Q, summed over its listeners), one sample per call."""

    def __init__(self, watched: Watched) -> None:
        self.watched = watched
        self.samples: list[int] = []  # every depth seen since the start
        self._mark = 0  # the first sample of the current interval

    def sample(self) -> None:
        depth = 0
        for port in self.watched.ports:
            rows = listening_sockets_of(port, [self.watched.netns_pid])
            depth += sum(row.queue for row in rows if row.inode in self.watched.inodes)
        self.samples.append(depth)

    @property
    def pending(self) -> int:
        """Samples taken in the current interval."""
        return len(self.samples) - self._mark

    def interval(self) -> tuple[int | None, float | None]:
        """(max, mean) of the samples since the last call; (None, None) when there were none."""
        taken = self.samples[self._mark :]
        self._mark = len(self.samples)
        if not taken:
            return None, None
        return max(taken), sum(taken) / len(taken)


def paced(cost_s: float) -> float:
    """How long to wait before the next sample, after one that took `cost_s`: SAMPLE_EVERY_S, or longer
    when a sample is slow (a server in another network namespace is read from its /proc/PID/net/tcp, as, without
    tracing, are its connections where netlink cannot be asked: both list every socket of the namespace)."""
    return max(SAMPLE_EVERY_S, cost_s / BUDGET)


def counters(netns_pid: int) -> dict[str, int]:
    """The kernel's listen counters in the server's network namespace (/proc/PID/net/netstat)."""
    return counters_of(netns_pid)


def open_connections(netns_pid: int, ports: Sequence[int]) -> set[int]:
    """Inodes of the server side of the TCP connections on `ports` that are still open (not listening, not
    TIME_WAIT, accepted or not), from /proc/PID/net/tcp{,6} of the server's namespace."""
    wanted = {f"{port:04X}" for port in ports}
    found: set[int] = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{netns_pid}/net/{name}", encoding="ascii", errors="replace") as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # fields: sl, local, remote, state, tx:rx, tr:when, retrnsmt, uid, timeout, inode
            if len(fields) > 9 and fields[3] not in (_LISTEN, _TIME_WAIT) and fields[1][-4:] in wanted:
                inode = int(fields[9]) if fields[9].isdigit() else 0
                if inode:
                    found.add(inode)
    return found


def server_connections(netns_pid: int, ports: Sequence[int]) -> set[int]:
    """open_connections, asked of the kernel over netlink, filtered by port there (3-4 ms here), and from
    /proc/PID/net/tcp only where netlink cannot be asked. That file lists every socket of the namespace: beside
    7,500 others (TIME_WAITs of other jobs) it took 100 ms, longer than a 20-request connection lives, so the
    connections it listed were closed by the time the workers' fd tables were read after it, and a gunicorn
    gthread observed untraced was seen holding none of its 400 (tests/test_observe_holdings_short_lived.py)."""
    try:
        return {sock.inode for sock in server_sockets(ports, netns_pid) if sock.inode}
    except OSError:  # PermissionError too: the namespace may not be entered
        return open_connections(netns_pid, ports)


class Holdings:
    """Without tracing: which worker process holds which open connection, sampled (approximate: a
    connection that opens and closes between two samples is never seen)."""

    def __init__(self, watched: Watched) -> None:
        self.watched = watched
        self.seen: dict[int, int] = {pid: 0 for pid in watched.workers}  # connections seen so far
        self._last: dict[int, set[int]] = {pid: set() for pid in watched.workers}  # held at the last sample

    def sample(self) -> None:
        connections = server_connections(self.watched.netns_pid, self.watched.ports)
        for pid in self.watched.workers:
            mine = (held_sockets(pid) | forked_sockets(self.watched, pid)) & connections
            # A connection held at two samples in a row is one connection; inodes are not reused soon.
            self.seen[pid] += len(mine - self._last[pid])
            self._last[pid] = mine

    def taken(self, units: Sequence[Unit], by_load: Callable[[int], int]) -> list[int]:
        """Per unit, the connections it was seen holding so far, by these looks or by the load's (`by_load` of a
        worker process), the larger: each is what it saw of them, and the load's, paced apart (a dump over
        netlink, not /proc/PID/net/tcp), may see more. A gunicorn gthread observed untraced counted 1 here where
        the load's table beside it saw 67. A thread of a threaded server: 0 (its fd table is its process's)."""
        return [max(self.seen[u.pid], by_load(u.pid)) if u.tid is None else 0 for u in units]

    def held(self, pid: int) -> int:
        """Connections the worker held at the last sample."""
        return len(self._last.get(pid, ()))
