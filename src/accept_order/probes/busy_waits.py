"""How long each worker was busy during a run, and how much of that it waited off its CPU: each worker's
/proc/PID/syscall looked at every few milliseconds from the run's start to its end, and what it was in counted.

A worker is idle while it waits for a connection (accept, or select, poll or epoll_wait on its listener's
readiness: what a prefork worker sleeps in between connections, a poll's or select's set read to tell it from a
handler's poll on its upstream; or the accept lock some take before that wait), and busy otherwise: on a CPU or
waiting for one ('running'), or asleep in any other call while it serves (an app's time.sleep in clock_nanosleep, a
database's reply in poll, read or recvfrom, the app's own lock in futex). Its CPU time alone leaves that last part
out: PyPI's gunicorn 27 with 3 sync workers whose app sleeps 2 ms served a first-hour tester 536 requests/s here
(~5.6 ms a request a worker) on ~0.5 ms of CPU a request, and a model that took the CPU for the service time blamed
the gap on other processes.

A worker of several threads is not read (which of its threads serves is not told by one look); another user's
process's syscall file is not this user's to read (no looks are counted for it). The readings are of the process,
not of each request: the busy share over the run, divided by what the worker served, is its mean service time.

Each look stands for the time since the one before it (busy_s, slept_s and looked_s, per worker), not for an equal
share of the run: the looks' thread shares this tool's interpreter and the CPUs, and is late where they are taken
(the run's set-up and end, when the workers are idle; other processes). Counted one look one share, a gunicorn
sleeping 2 ms (3 workers, latency --attach -n 100 -c 12, two CPU hogs beside it; load 3.7, Linux 6.18, 2 vCPUs) read
431 looks over a 5.5-s span (1,100 at 200 a second), the load's dense and the idle ones sparse: 14.9 ms a
connection, where the same server read 2.7-3.3 ms on runs without the hogs.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.signal_order import start_thread
from .held_connections import HeldConnections
from .proc_read import read_proc
from .proc_waits import (
    ACCEPTS,
    EPOLL_WAITS,
    FUTEX_CMD_MASK,
    FUTEX_LOCK_PI,
    FUTEX_LOCK_PI2,
    POLLS,
    SELECTS,
    parse_syscall,
    read_set,
    syscall_names,
)

# where a worker waits for a connection: accept and epoll_wait always; poll and select where their set holds one of
# its listeners (read from the process's memory: root's or the same user's), or cannot be read. A handler's wait
# for its database or upstream is often a poll too: libpq's, and a Python socket's with a timeout; taken for the
# listener's, an attached gunicorn whose app so waited 2 ms read no wait while serving and was modelled on its CPU
IDLE_CALLS = ACCEPTS | EPOLL_WAITS
SET_CALLS = SELECTS | POLLS
# and the lock some servers take before that wait, a process-shared priority-inheriting mutex whose waiters sleep in
# futex(FUTEX_LOCK_PI): uWSGI's --thunder-lock, Apache prefork's accept mutex with two Listens. Counted busy, uWSGI
# thunder-lock (3 workers, an app that returns at once; latency -n 2000 -c 8) read '72% of it asleep off the CPU
# while serving, in futex' and was modelled on 0.30 ms a connection, its CPU 0.13 ms.
ACCEPT_LOCKS = frozenset({FUTEX_LOCK_PI, FUTEX_LOCK_PI2})
RUNNING = "running"
EVERY_S = 0.005  # 200 looks a second: a 2-s run's busy share to about ±2% (binomial)
# reads a second at most, all workers together: 3 workers at 200 a second cost this tool 3% of a CPU here (0.093 s
# over 3 s), 4% where each look reads their selects' sets (0.125 s: idle gunicorn workers), so more workers are each
# looked at less often
MOST_READS_S = 600
MAX_WORKERS = 64
# how often the connections the server holds at once are counted (held_connections.py): a sock_diag dump walks every
# TCP socket of the host, 1.3 ms of a CPU (1.8 ms' wait) here among 19,000 in TIME_WAIT left by earlier runs: 1.3%
HELD_EVERY_S = 0.1
# and after a read that found connections held (the load running), sooner: a run's load is often a short part of the
# looks' span (Debian's nginx, -n 2000 -c 50: 0.3 s of 1.7-3.8), and every 0.1 s only 1-3 reads found any held
HELD_BUSY_EVERY_S = 0.04


@dataclass
class _Worker:
    pid: int
    threads: int = 0  # as the run started: a worker of several is not read, and the model says it counted it one
    # as the run ended: a pool that starts its threads on demand (gunicorn's gthread, a Python thread pool) is
    # one thread at the start, and its looks read its main thread alone (0: gone)
    threads_end: int = 0
    # its descriptors of the listeners, read at its first look in poll or select (None: not read, or none held): a
    # worker that waits in epoll_wait or accept never needs them, and an attached nginx's fd table may hold thousands
    listening: frozenset[int] | None = None
    listening_read: bool = False
    looks: int = 0
    idle: int = 0
    # seconds: each look's time since the one before it (or the start), summed over all its looks, its busy ones,
    # and its busy ones asleep off the CPU
    looked_s: float = 0.0
    busy_s: float = 0.0
    slept_s: float = 0.0
    waits: Counter[str] = field(default_factory=Counter)  # busy looks off the CPU, by call (not 'running' ones)
    unread: bool = False  # more than one thread, or its syscall file not ours to read
    gone: bool = False  # looked at no more: unread, or ended (a run that failed before stop() ends its looks so)


class BusySampler:
    """Looks at each worker's system call every `every` seconds in a thread of its own, from start() to stop()."""

    def __init__(
        self,
        pids: Sequence[int],
        every: float = EVERY_S,
        read: Callable[[str], bytes | None] = read_proc,
        listeners: Collection[int] = (),
        clock: Callable[[], float] = time.monotonic,
        held: HeldConnections | None = None,
    ) -> None:
        """`listeners`: the inodes of the server's listening sockets, whose descriptors a worker's poll or select
        waits on between connections (none given: every poll and select is taken for such a wait); `clock`: the
        seconds each look is timed by (a test's own); `held`: what counts the connections the server holds at once,
        read every HELD_EVERY_S with a look, HELD_BUSY_EVERY_S after one that found any (a worker of one thread that
        holds several is an event loop)."""
        self._listeners = frozenset(listeners)
        self._held, self._held_at, self._held_found = held, float("-inf"), False
        self._workers = [_Worker(pid) for pid in pids[:MAX_WORKERS]]
        self._every, self._read = max(every, len(self._workers) / MOST_READS_S), read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = self._last = 0.0
        self._clock = clock
        self._table = syscall_names()

    def start(self, thread: bool = True) -> None:
        """Look from now on (`thread` False: only where look() is called, as a test does)."""
        self._started = self._last = self._clock()
        for worker in self._workers:
            worker.threads = _threads(worker.pid)
            worker.unread = worker.gone = worker.threads != 1
        if all(w.unread for w in self._workers) or not thread:
            return
        # with SIGINT, SIGTERM and SIGHUP blocked in it: they stay the main thread's, which stops the run
        self._thread = start_thread(self._run, "busy-waits")

    def _run(self) -> None:
        while not self._stop.is_set() and self.look():
            self._stop.wait(self._every)

    def look(self) -> bool:
        """One look at every worker still looked at; False where none is left (each gone, or not read)."""
        looking = [w for w in self._workers if not w.gone]
        now = self._clock()
        since, self._last = now - self._last, now  # what this look stands for: the time since the one before
        for worker in looking:
            self._look(worker, since)
        every = HELD_BUSY_EVERY_S if self._held_found else HELD_EVERY_S
        if self._held is not None and looking and now - self._held_at >= every:
            self._held_found, self._held_at = bool(self._held.read()), now
        return bool(looking)

    def _look(self, worker: _Worker, since: float) -> None:
        data = self._read(f"/proc/{worker.pid}/syscall")
        if data is None:  # not ours to read, or gone: its looks so far stand, and it is not looked at again
            worker.unread, worker.gone = worker.looks == 0, True
            return
        text = data.decode("ascii", "replace").strip()
        try:
            call, number, args = parse_syscall(text, self._table)
        except ValueError:
            return
        worker.looks += 1
        worker.looked_s += since
        if call in SET_CALLS and not worker.listening_read:
            worker.listening = _listening(worker.pid, self._listeners) if self._listeners else None
            worker.listening_read = True
        if _waits_for_connection(worker, call, args, text):
            worker.idle += 1
            return
        worker.busy_s += since
        if call != RUNNING:  # a call not in the table by its number: Apache's read '?' in the report's sentence
            worker.waits[f"syscall {number}" if call == "?" else call] += 1
            worker.slept_s += since

    def stop(self) -> dict[str, Any] | None:
        """Evidence `busy_waits`: the span looked at (s), and each worker's threads as it started, looks, idle looks
        and off-CPU busy looks by call (no looks: not read), and the seconds its looks, its busy ones and its busy
        ones asleep stood for (each look the time since the one before); None where no worker was there to read."""
        span = self._clock() - self._started  # the looks are spread evenly over it
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for worker in self._workers:
            worker.threads_end = _threads(worker.pid) if worker.threads else 0
        if self._held is not None:
            self._held.close()
        if not any(w.threads for w in self._workers):
            return None  # none there to read
        return {
            **({} if self._held is None else self._held.evidence()),
            "span_s": round(span, 6),
            "workers": [
                {
                    "pid": w.pid,
                    "threads": w.threads,
                    "threads_end": w.threads_end,
                    "looks": w.looks,
                    "idle": w.idle,
                    "waits": dict(w.waits),
                    "looked_s": round(w.looked_s, 6),
                    "busy_s": round(w.busy_s, 6),
                    "slept_s": round(w.slept_s, 6),
                }
                for w in self._workers
            ],
        }


def _waits_for_connection(worker: _Worker, call: str, args: list[int], text: str) -> bool:
    """Whether the call a worker sleeps in (`text`: its syscall file, stripped) is its wait for a connection."""
    if call in IDLE_CALLS:
        return True
    if call == "futex":
        return len(args) > 1 and args[1] & FUTEX_CMD_MASK in ACCEPT_LOCKS
    if call not in SET_CALLS:
        return False
    if worker.listening is None:
        return True
    fds = read_set(worker.pid, call, args, f"/proc/{worker.pid}/syscall", text)
    return fds is None or not worker.listening.isdisjoint(fds)  # not read (left the call meanwhile): as before


def _listening(pid: int, listeners: frozenset[int]) -> frozenset[int] | None:
    """The descriptors of `pid` that are one of the `listeners` (socket inodes); None where its table is not ours to
    read (or it is gone), or it holds none: a worker handed its connections (over a Unix socket, Node's way) waits
    for them on what it holds, not on a listener."""
    marks = {f"socket:[{inode}]" for inode in listeners}
    fds: set[int] = set()
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{name}") in marks:
                    fds.add(int(name))
            except OSError:  # closed meanwhile
                continue
    except OSError:
        return None
    return frozenset(fds) or None


def _threads(pid: int) -> int:
    try:
        return os.stat(f"/proc/{pid}/task").st_nlink - 2
    except OSError:
        return 0


@dataclass(frozen=True)
class Busy:
    """What the looks say of the workers together: their busy seconds, and the share of those they were asleep off
    the CPU while serving, in which calls (most first); and the looks behind it, busy and asleep of those, which
    say how sure that share is (a share of looks: analysis/busy_choice.py)."""

    busy_s: float
    waited_share: float
    calls: tuple[str, ...]
    busy_looks: int = 0
    slept_looks: int = 0


def worker_threads(evidence: Mapping[str, object]) -> list[int]:
    """Each worker's threads, the more of as the run started and as it ended (evidence `busy_waits`: `threads`,
    `threads_end` where kept); [] where not read (a file from before it)."""
    read = evidence.get("busy_waits")
    each = read.get("workers") if isinstance(read, Mapping) else None
    if not isinstance(each, list):
        return []
    counts: list[int] = []
    for w in each:
        start, end = (w.get(k) if isinstance(w, Mapping) else None for k in ("threads", "threads_end"))
        if type(start) is not int:
            return []
        counts.append(max(start, end) if type(end) is int else start)
    return [n for n in counts if n > 0]


def busy_reading(evidence: Mapping[str, object], workers: int) -> Busy | None:
    """The workers' busy time from evidence `busy_waits`, where every one of `workers` was read; None otherwise (a
    file from before it, a threaded or another user's worker, a reading not of this shape)."""
    read = evidence.get("busy_waits")
    if not isinstance(read, Mapping):
        return None
    span, each = read.get("span_s"), read.get("workers")
    if not isinstance(span, (int, float)) or span <= 0 or not isinstance(each, list) or len(each) != workers:
        return None
    busy = waited = 0.0
    calls: Counter[str] = Counter()
    busy_looks = slept_looks = 0
    for w in each:
        looks, idle, waits = (w.get(k) if isinstance(w, Mapping) else None for k in ("looks", "idle", "waits"))
        if type(looks) is not int or type(idle) is not int or not isinstance(waits, Mapping):
            return None
        if not 0 <= idle <= looks or not looks or not all(type(n) is int and n >= 0 for n in waits.values()):
            return None
        assert isinstance(w, Mapping)
        if type(end := w.get("threads_end")) is int and end > 1:
            return None  # threads started during the run: its looks read its main thread alone
        slept = sum(waits.values())
        busy_looks, slept_looks = busy_looks + looks - idle, slept_looks + slept
        timed = _timed(w)  # each look the time since the one before; files before it: each an equal share
        busy_share, slept_share = timed if timed is not None else ((looks - idle) / looks, slept / looks)
        busy += span * busy_share
        waited += span * slept_share
        calls.update({str(k): int(n) for k, n in waits.items()})
    if busy <= 0:
        return None
    share = min(1.0, waited / busy)
    return Busy(busy, share, tuple(call for call, _ in calls.most_common()), busy_looks, slept_looks)


def _timed(worker: Mapping[str, object]) -> tuple[float, float] | None:
    """The worker's busy share and asleep-while-busy share of the time its looks stood for (looked_s, busy_s,
    slept_s); None where not kept (a file from before them) or not of that shape."""
    looked, busy, slept = (worker.get(k) for k in ("looked_s", "busy_s", "slept_s"))
    numbers = [x for x in (looked, busy, slept) if isinstance(x, (int, float)) and not isinstance(x, bool)]
    if len(numbers) != 3 or not numbers[0] > 0 or not 0 <= numbers[2] <= numbers[1] <= numbers[0]:
        return None
    return numbers[1] / numbers[0], numbers[2] / numbers[0]
