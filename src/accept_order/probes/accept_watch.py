"""Accepts per thread while a server runs: accepts.py's bpftrace, keyed by (pid, tid), printing its running
totals every PRINT_MS so that they can be read while it runs (observe's live view), and once more at the end.

It counts, for the processes given, the accept()/accept4() calls that returned a socket and those that came
back empty (EAGAIN: the caller woke, or polled, for a connection another worker had already taken). The
key is the thread: HAProxy's threads share one process, and each is a worker of its own.

    with AcceptWatch(pids) as watch:
        watch.start()               # returns once the tracepoints are attached (see AcceptCounter)
        totals = watch.totals()     # the running totals, as last printed (never waits)
        totals, counts = watch.finish()  # exact totals at the end; counts.available / counts.why

Every print is a snapshot of counters that only grow, so the latest value of a key is its largest: no
framing of the periodic prints is needed, and a print that interleaves with the END block is harmless.
Nothing raises when tracing is impossible: finish() then answers available=False and says why.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from .accept_counts import AcceptCounts
from .accept_ports import ListenerPorts, blocked_in_accept, less, seeded
from .accepts import COUNTS_BEGIN, COUNTS_END, AcceptCounter, accepted_by
from .accepts import SOURCE as COUNTER_SOURCE
from .bpftrace_readings import ReadingClock, reading_probe

EAGAIN = 11
PRINT_MS = 200  # how stale a running total may be; a print of a few keys costs bpftrace microseconds
SOURCE = "counted by the kernel (bpftrace on the accept tracepoints, per thread)"
# + the marking process's pid (at most 2^22): the scheduling policies (none such: EINVAL) its sched_get_priority_max
# asks of, which the program takes for 'count from now' and 'count no more' (AcceptWatch.begin and freeze)
BEGIN_POLICY, FREEZE_POLICY = 0x20000000, 0x40000000
# END's time: the counts are as of about then (bpftrace detaches its probes before END: SIGINT to END took 0.28-0.39 s
# here, counting some accepts meanwhile; it exits ~0.15 s after), or of a freeze before it (AcceptWatch.freeze)
_ENDED = "accept-order ended at"
_ENDED_LINE = re.compile(rb"^accept-order ended at (\d+)$", re.MULTILINE)
_ENTRY = re.compile(rb"^@(ok|empty)\[(\d+), (\d+)\]: (\d+)$", re.MULTILINE)
_ON = re.compile(rb"^@(on|eon)\[(\d+), (\d+), (\d+)\]: (\d+)$", re.MULTILINE)

Key = tuple[int, int]  # (pid, tid)


@dataclass(frozen=True)
class ThreadCounts:
    """Running totals since the probes attached (a gated watch: since begin()): accepts that returned a socket,
    and accepts that came back empty (EAGAIN), per (pid, tid); `on`: those that returned a socket by the descriptor
    they were asked of, per (pid, tid, fd + 1): 0 where the call began before the probes attached (its descriptor
    unseen); `empty_on` the same of those that came back empty (accept_ports.py reads the listener's port of both)."""

    accepted: dict[Key, int] = field(default_factory=dict)
    empty: dict[Key, int] = field(default_factory=dict)
    on: dict[tuple[int, int, int], int] = field(default_factory=dict)
    empty_on: dict[tuple[int, int, int], int] = field(default_factory=dict)  # the empty ones, as `on`

    def of(self, pid: int, tid: int | None = None) -> tuple[int, int]:
        """(accepted, empty) of one thread, or of every thread of `pid` when tid is None."""
        if tid is not None:
            return self.accepted.get((pid, tid), 0), self.empty.get((pid, tid), 0)
        return (
            sum(n for (p, _), n in self.accepted.items() if p == pid),
            sum(n for (p, _), n in self.empty.items() if p == pid),
        )


def watch_program(
    pids: Sequence[int],
    threads: frozenset[int] = frozenset(),
    marker: int | None = None,
    gated: bool = False,
    comms: Sequence[str] = (),
) -> str:
    """Count per (pid, tid) what accept returned, print the totals every PRINT_MS and at END; from the moment
    process `marker` asks sched_get_priority_max of FREEZE_POLICY + its pid, count no more (AcceptWatch.freeze),
    and, `gated`, nothing before it asks of BEGIN_POLICY + its pid (AcceptWatch.begin).

    The pid filter (the thread-group id: every thread of a worker passes) is in the predicate, as in
    accepts.program, so that no other process reaches the maps; a worker among `threads` is a thread, passed by
    its own id (accept_filter.thread_workers). The descriptor each accept was asked of (+ 1, 0: unseen) keys @on:
    a thread may accept on a socket of its own beside the listener (a metrics port's). Threads named one of
    `comms` are counted too, under their own (pid, tid): a newcomer of the server's program (a reload's worker, a
    refork's), which the caller tells from another server of that name."""
    pred = accepted_by(pids, f"(args->ret >= 0 || args->ret == -{EAGAIN})", threads=threads, comms=comms)
    dump = "print(@ok); print(@empty); print(@on); print(@eon);"
    marks = counting = clear = ""
    mark = "tracepoint:syscalls:sys_enter_sched_get_priority_max /args->policy == {}/ {{ @{} = 1; }}\n"
    if marker is not None:  # the flags begin() and freeze() set: accepts are counted between the two
        marks, counting, clear = mark.format(FREEZE_POLICY + marker, "frozen"), " && @frozen == 0", " clear(@frozen);"
        if gated:
            marks += mark.format(BEGIN_POLICY + marker, "begun")
            counting, clear = f" && @begun == 1{counting}", f"{clear} clear(@begun);"
    return (
        seeded(blocked_in_accept(pids))  # the descriptors of accepts begun before the probes attached
        + marks
        + "tracepoint:syscalls:sys_enter_accept4, tracepoint:syscalls:sys_enter_accept\n"
        f"/{accepted_by(pids, 'args->fd >= 0', threads=threads, comms=comms)}/\n"
        "{ @fd[tid] = args->fd + 1; }\n"
        "tracepoint:syscalls:sys_exit_accept4, tracepoint:syscalls:sys_exit_accept\n"
        f"/{pred}{counting}/\n"
        "{ if (args->ret >= 0) { @ok[pid, tid] = count(); @on[pid, tid, @fd[tid]] = count(); }"
        " else { @empty[pid, tid] = count(); @eon[pid, tid, @fd[tid]] = count(); } delete(@fd[tid]); }\n"
        f"{reading_probe(PRINT_MS, dump)}"
        # clear() after the last print: bpftrace prints every non-empty map again on exit
        f'END {{ printf("{COUNTS_BEGIN}\\n{_ENDED} %llu\\n", nsecs); {dump}\n'
        f'      clear(@ok); clear(@empty); clear(@on); clear(@eon); clear(@fd);{clear} printf("{COUNTS_END}\\n"); }}\n'
    )


class AcceptWatch(AcceptCounter):
    """bpftrace as a child, counting the accepts of `pids` per thread (see the module doc)."""

    def __init__(self, pids: Sequence[int], gated: bool = False, comms: Sequence[str] = ()) -> None:
        super().__init__(pids)
        self.gated = gated  # nothing is counted before begin()
        self.comms = tuple(comms)  # threads of these names are counted too (watch_program)
        self._accepted: dict[Key, int] = {}
        self._empty: dict[Key, int] = {}
        self._on: dict[tuple[int, int, int], int] = {}
        self._empty_on: dict[tuple[int, int, int], int] = {}
        self.ended: float | None = None  # see finish()
        self.frozen_at: float | None = None  # see freeze()
        self._clock = ReadingClock()  # when the last whole reading was taken

    def _keep(self, out: bytearray) -> None:
        pass  # totals() reads the output as it comes, and drops what it has read

    def _reading(self) -> tuple[float, dict[int, int]] | None:
        """The totals as of the last whole periodic reading, per pid (stop() keeps them should END not come)."""
        totals = self._parse()
        if self._clock.at is None:
            return None
        return self._clock.at, {pid: totals.of(pid)[0] for pid in self.pids or ()}

    def program(self) -> str:
        return watch_program(self.pids or (), self.threads, os.getpid(), self.gated, self.comms)

    def begin(self) -> None:
        """Count from now on (a gated watch counts nothing before): observe's first look at the load comes right
        after, so that an accept between the probes' attaching and that look (2-10 ms here), counted by the accepts
        and seen open by the look, is not also taken for a connection that opened and closed unseen."""
        if self.attached:
            _mark(BEGIN_POLICY)

    def freeze(self) -> None:
        """Count no accept from now on, bpftrace running on: the program takes this call for its flag. Stopped by
        SIGINT, bpftrace detaches its probes before its END block (~0.3 s here) and counts some accepts meanwhile,
        so that a reading taken at END (observe's last look at the load) would count connections the accepts did
        not, and one taken at SIGINT connections they did: after this, a look ends where the count did."""
        if self.attached:
            _mark(FREEZE_POLICY)
            self.frozen_at = time.monotonic()

    def totals(self) -> ThreadCounts:
        """The running totals as bpftrace last printed them (at most PRINT_MS old); never waits."""
        while self.attached and self.read_more(0):
            pass
        return self._parse()

    def finish(self) -> tuple[ThreadCounts, AcceptCounts]:
        """Stop bpftrace (its END block prints the final totals) and return them, with whether counting
        worked and why not. `ended` is then when END ran (time.monotonic()'s clock): what the totals count
        up to; when END never came, when the last periodic reading was taken (counts.short says so); frozen
        before either (freeze()), when it was frozen."""
        counts = self.stop()
        if ended := _ENDED_LINE.search(bytes(self._out)):
            self.ended = int(ended.group(1)) / 1e9
        elif counts.short:
            self.ended = self._clock.at
        if self.ended is not None and self.frozen_at is not None:
            self.ended = min(self.ended, self.frozen_at)  # frozen: counted up to then
        totals = self._parse()
        if counts.available:
            counts = dataclasses.replace(counts, why=counts.why.replace(COUNTER_SOURCE, SOURCE, 1))
        return totals, counts

    def _parse(self) -> ThreadCounts:
        end = self._out.rfind(b"\n") + 1  # whole lines only: a line being printed waits for the next read
        if end:
            self._clock.feed(self._out[:end])
            for which, pid, tid, n in _ENTRY.findall(bytes(self._out[:end])):
                totals = self._accepted if which == b"ok" else self._empty
                key = (int(pid), int(tid))
                totals[key] = max(totals.get(key, 0), int(n))
            for which, pid, tid, fd, n in _ON.findall(bytes(self._out[:end])):
                on, into = (int(pid), int(tid), int(fd)), self._on if which == b"on" else self._empty_on
                into[on] = max(into.get(on, 0), int(n))
            # What has been read is dropped: an hour's prints would otherwise be kept to the end. stop()
            # finds the END block's framing in what it reads after this.
            del self._out[:end]
        return ThreadCounts(dict(self._accepted), dict(self._empty), dict(self._on), dict(self._empty_on))


def own_ports(totals: ThreadCounts, ports: Collection[int], listeners: ListenerPorts) -> ThreadCounts:
    """`totals` less the accepts (and empty accepts) asked of listeners on other ports than `ports`. Applied twice,
    the same: the accepts left out go from `on` and `empty_on` with their counts."""
    taken = listeners.elsewhere(totals.on, ports)
    found = listeners.elsewhere(totals.empty_on, ports)
    if not taken and not found:
        return totals
    return dataclasses.replace(
        totals,
        accepted=less(totals.accepted, taken),
        empty=less(totals.empty, found),
        on={key: n for key, n in totals.on.items() if key not in taken},
        empty_on={key: n for key, n in totals.empty_on.items() if key not in found},
    )


def _mark(policy: int) -> None:
    """The call a watch's program takes for a flag (see watch_program): no such policy, EINVAL, once its probe ran."""
    try:
        os.sched_get_priority_max(policy + os.getpid())
    except OSError:
        pass
