"""One look at a server's threads: what each sleeps in, resolved through its process's fd table to the
listeners it waits on (the `Seen` records analysis/mechanism.py classifies).

The fd tables are the look's (probes/fd_table.py `FdTables`), read once for all its samples. Read again at
each sample is what moves between two: what the threads wait in (their syscall and wchan files), what each
epoll watches and each io_uring has armed (their fdinfo: an accept mutex moves the listeners from one
worker's epoll to another's), and the link of the descriptor each thread waits on (it may have been opened
after the table was read, or its number closed and given to another file)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cmp_to_key
from typing import Any
from weakref import WeakKeyDictionary

from ...analysis.mechanism import WAITS_ON_LISTENER
from ...analysis.mechanism_values import Seen
from ...probes.fd_table import FdTables, OpenFile, file_order
from ...probes.file_flags import blocking_mode
from ...probes.file_table import polls_of
from ...probes.proc_waits import (
    ACCEPTS,
    EPOLL_WAITS,
    POLLS,
    RECEIVES,
    SELECTS,
    ThreadWait,
    thread_ids,
    thread_wait,
)
from ...probes.serving import Server


@dataclass(frozen=True)
class Sample:
    """Every thread of every process at one moment, with the open files it was resolved against."""

    seen: tuple[Seen, ...]
    waits: dict[int, tuple[ThreadWait, ...]]  # pid -> its threads' waits
    files: dict[int, Mapping[int, OpenFile]]  # pid -> fd -> file (a FileTable: its sockets made when asked)
    sockets: dict[int, frozenset[int]]  # pid -> every socket inode it holds
    kcmp: bool  # kcmp(2) answered: shared epolls were told apart
    same_epoll: dict[str, str]  # "pid:fd" of an epoll a thread waits in -> the first "pid:fd" of that open file


def _listeners_watched(file: OpenFile, listeners: frozenset[int]) -> frozenset[int]:
    return frozenset(w.inode for w in file.watching(listeners))


def resolve(
    pid: int,
    wait: ThreadWait,
    files: Mapping[int, OpenFile],
    listeners: frozenset[int],
    peers: dict[int, int],
    threads: int,
    holds: frozenset[int] | None = None,
    blocking: frozenset[int] = frozenset(),
) -> Seen:
    """What one thread waits on, from its call and its process's open files (`holds`: the listeners among
    them, when the caller has them already; `blocking`: those of them whose open file is in blocking mode,
    probes/file_flags.py, read where a running thread or an unread poll set needs them)."""
    if holds is None:
        holds = frozenset(f.inode for f in files.values() if f.kind == "socket" and f.inode in listeners)

    def make(via: str, **extra: Any) -> Seen:
        return Seen(pid, wait.tid, wait.call, via, holds=holds, wchan=wait.wchan, **extra)

    file = files.get(wait.fd) if wait.fd is not None else None
    if wait.call in ACCEPTS and file is not None and file.inode in listeners:
        return make("accept", listeners=frozenset({file.inode or 0}))
    every_blocking = bool(holds) and holds <= blocking
    if wait.call == "running" and (threads == 1 or wait.tid == pid) and every_blocking:
        # Busy now; its listeners are blocking sockets, which are accepted from in accept(): a readiness loop
        # would hang in accept() each time another worker took the connection first. Apache prefork's children
        # hold an epoll that watches their one listener (made for two or more Listens) and never wait in it:
        # under keep-alive, all busy, they read as an epoll herd when taken for that epoll's waiters
        return make("accept", listeners=holds)
    if wait.call == "running" and (threads == 1 or wait.tid == pid):
        # Busy now; it will wait again in the one epoll that watches its listeners, if it has one (a process's
        # main thread runs its loop in a server with a helper thread: uvicorn's workers, busy under a pool).
        epolls = [f for f in polls_of(files) if f.kind == "eventpoll" and _listeners_watched(f, listeners)]
        file = epolls[0] if len(epolls) == 1 else None
    if (wait.call in EPOLL_WAITS or wait.call == "running") and file is not None and file.kind == "eventpoll":
        watches = file.watching(listeners)
        watched = frozenset(w.inode for w in watches)
        if watched:
            exclusive = all(w.exclusive for w in watches)
            only = frozenset(w.inode for w in watches if w.exclusive)
            return make("epoll", listeners=watched, exclusive=exclusive, exclusive_on=only, epoll_id=f"{pid}:{file.fd}")
        if holds and wait.call != "running":
            return make("idle")
        ends = frozenset(peers[w.inode] for w in file.watches if w.inode in peers)
        if ends:
            return make("passed", unix_ends=ends)
    if wait.call == "running" and wait.tid == pid and not holds:
        # A busy main thread (Node's event loop) of a process that holds no listener: it will wait again in
        # the one epoll that watches a Unix socket to another process, where it is fed connections.
        fed = [f for f in polls_of(files) if f.kind == "eventpoll" and any(w.inode in peers for w in f.watches)]
        if len(fed) == 1:
            ends = frozenset(peers[w.inode] for w in fed[0].watches if w.inode in peers)
            return make("passed", unix_ends=ends)
    if wait.call in POLLS | SELECTS and holds:
        via = "poll" if wait.call in POLLS else "select"
        if wait.fds is None:  # the set is not readable: taken to be the listeners it holds, unless they are
            # blocking sockets (see above: an Apache prefork child polls its kept connection for the next request)
            if not every_blocking:
                return make(via, listeners=holds)
        else:
            watched = frozenset(files[fd].inode or 0 for fd in wait.fds if fd in files and files[fd].inode in listeners)
            if watched:
                return make(via, listeners=watched, set_read=True)
    if wait.call == "io_uring_enter" and file is not None and file.kind == "io_uring" and holds:
        # asleep on the listener only where the ring has an accept armed (PollList op=13): a server that accepts
        # in accept calls and waits on a ring for other work is not an io_uring acceptor; an unread fdinfo says
        # neither
        if file.ops is None:
            return make("ring-unread")
        if file.accept_armed:
            return make("io_uring", listeners=holds)
        if file.poll_armed:  # readiness through the ring (op=6) of a descriptor not named: the listener, or not
            return make("ring-poll")
    if wait.call in RECEIVES and file is not None and file.inode in peers and not holds:
        return make("passed", unix_ends=frozenset({peers[file.inode or 0]}))
    if wait.lock and holds:
        return make("lock")
    return make("running" if wait.call == "running" else "other")


def _shared_epolls(
    seen: list[Seen], known: dict[tuple[int, int, int, int], int | None] | None = None
) -> tuple[list[Seen], bool, dict[str, str]]:
    """Epoll ids made equal where two processes' descriptors are one open file (kcmp); False when kcmp
    could not answer (then every epoll counts as its own). The descriptors are sorted by the kernel's order
    of open files, which puts each open file's together, instead of compared pair by pair (64 workers'
    epolls were 2,016 kcmp calls a sample, now about 300). Each is named by the first "pid:fd" of its open
    file in another process; two descriptors of one process stay apart, as their threads wait apart.
    `known`: kcmp's answers so far in the look (FdTables.file_orders), asked once for all its samples."""
    keys = sorted({s.epoll_id for s in seen if s.epoll_id is not None})
    answers: dict[tuple[str, str], int | None] = {}
    kept = known if known is not None else {}
    answered = True

    parsed = {key: _pid_fd(key) for key in keys}

    def order(a: str, b: str) -> int:
        nonlocal answered
        (pid_a, fd_a), (pid_b, fd_b) = parsed[a], parsed[b]
        asked = (pid_a, fd_a, pid_b, fd_b)
        if asked not in kept:
            kept[asked] = file_order(pid_a, fd_a, pid_b, fd_b)
        answer = answers[a, b] = kept[asked]
        if answer is None:
            answered = answered and pid_a == pid_b  # one process's descriptors are never merged: not needed
            return (a > b) - (a < b)
        return answer

    def equal(a: str, b: str) -> bool:
        if (a, b) not in answers and (b, a) not in answers:
            order(a, b)  # neighbours in a sorted list were compared by the sort: only in case
        return answers.get((a, b), answers.get((b, a))) == 0

    groups: list[list[str]] = []
    for key in sorted(keys, key=cmp_to_key(order)):
        if groups and equal(groups[-1][-1], key):
            groups[-1].append(key)
        else:
            groups.append([key])
    ids: dict[str, str] = {}
    for group in groups:
        members = sorted(group)
        for i, key in enumerate(members):
            if key in ids:
                continue
            ids[key] = key
            for other in members[i + 1 :]:
                if other not in ids and parsed[other][0] != parsed[key][0]:
                    ids[other] = key
    renamed: list[Seen] = []
    for s in seen:  # only a renamed one made anew (dataclasses.replace costs 10 µs; ids names most as they are)
        new = ids.get(s.epoll_id) if s.epoll_id is not None else None
        renamed.append(replace(s, epoll_id=new) if new is not None and new != s.epoll_id else s)
    return renamed, answered, ids


def _pid_fd(key: str) -> tuple[int, int]:
    pid, _, fd = key.partition(":")
    return int(pid), int(fd)


# What a look's samples keep from one to the next, by the look's tables: each thread's last syscall and wchan
# files as read and the ThreadWait made of them, and what `resolve` made of that wait. A thread whose files
# read the same, in a process whose descriptor it waits on is the same file, is seen as it was without its
# files parsed or its wait resolved again (an idle 64-worker nginx: every thread of the four later samples).
_KEPT: WeakKeyDictionary[FdTables, dict[tuple[int, int], tuple[Any, ...]]] = WeakKeyDictionary()
# Calls whose wait is not the files alone: poll's and select's sets are read from memory, and a running
# thread is resolved against every epoll of its process
_READ_AGAIN = POLLS | SELECTS | {"running"}
# The fewest processes of one parent the kind's lock (ServerKind.lock_first) must apply to before a look names it
LOCK_SHARED_BY = 2
# What a process of the kind's layout shows where it takes part in the lock: a wait on its listeners (or a run taken
# for one), or a wait for the lock itself
_TAKES_PART = ("epoll", "accept", "lock")


def _thread_wait(tables: FdTables, pid: int, tid: int) -> tuple[ThreadWait, tuple[bytes | None, bytes | None]]:
    """What thread `tid` waits in now, as thread_wait reads it, and its syscall and wchan files as read: the
    ThreadWait of the look's last sample where they read the same (a ThreadWait is made of them alone)."""
    base = f"/proc/{pid}/task/{tid}"
    raw = (tables.read(f"{base}/syscall"), tables.read(f"{base}/wchan"))
    last = _KEPT.get(tables, {}).get((pid, tid))
    if last is not None and last[0] == raw and last[1].call not in _READ_AGAIN:
        return last[1], raw
    read = {f"{base}/syscall": raw[0], f"{base}/wchan": raw[1]}
    wait = thread_wait(pid, tid, name=tables.thread_names.get((pid, tid)), read=lambda path: read.get(path))
    return wait, raw


def _resolved(
    tables: FdTables,
    pid: int,
    wait: ThreadWait,
    raw: tuple[bytes | None, bytes | None],
    files: Mapping[int, OpenFile],
    listeners: frozenset[int],
    peers: dict[int, int],
    threads: int,
    holds: frozenset[int],
    blocking: frozenset[int],
) -> Seen:
    """resolve(...), or the last sample's answer for the same wait on the same file (see _KEPT)."""
    kept = _KEPT.setdefault(tables, {})
    file = files.get(wait.fd) if wait.fd is not None else None
    last = kept.get((pid, wait.tid))
    if (
        last is not None
        and last[1] is wait
        and last[2] is file
        and (last[3], last[4], last[5], last[8]) == (listeners, threads, holds, blocking)
        and last[6] is peers
    ):
        return last[7]
    seen = resolve(pid, wait, files, listeners, peers, threads, holds, blocking)
    kept[pid, wait.tid] = (raw, wait, file, listeners, threads, holds, peers, seen, blocking)
    return seen


# Whether each listener is a blocking socket, by look, by (pid, inode): an open file's mode is taken to keep its
# meaning while the look lasts, as its link does (a server sets it as it starts)
_FLAGS: WeakKeyDictionary[FdTables, dict[tuple[int, int], bool | None]] = WeakKeyDictionary()


def _needs_flags(wait: ThreadWait) -> bool:
    """The listeners' mode decides how this wait is read (resolve): a running thread, or a poll or select
    whose set could not be read."""
    return wait.call == "running" or (wait.call in POLLS | SELECTS and wait.fds is None)


def _blocking(tables: FdTables, pid: int, files: Mapping[int, OpenFile], holds: frozenset[int]) -> frozenset[int]:
    """The listeners among `holds` whose open file is in blocking mode, each read once a look (at its first
    descriptor in the process's table)."""
    known = _FLAGS.setdefault(tables, {})
    found = set()
    for inode in holds:
        if (pid, inode) not in known:
            fd = next((fd for fd, f in files.items() if f.kind == "socket" and f.inode == inode), None)
            known[pid, inode] = None if fd is None else blocking_mode(pid, fd)
        if known[pid, inode]:
            found.add(inode)
    return frozenset(found)


def _one_loop(mine: list[Seen]) -> list[Seen]:
    """One process's threads, a busy main thread taken for its epoll's waiter (resolve) only where no other
    thread of it waits in that epoll: a Go runtime's (Caddy) running main thread beside the thread in its
    netpoller is one loop, not two threads sharing an epoll."""
    waited = {s.epoll_id for s in mine if s.via == "epoll" and s.call != "running"}
    return [
        replace(s, via="running", listeners=frozenset(), exclusive=None, epoll_id=None)
        if s.via == "epoll" and s.call == "running" and s.epoll_id in waited
        else s
        for s in mine
    ]


def _accepting_peers(seen: list[Seen], parent: dict[int, int]) -> list[Seen]:
    """Running processes taken for accept() waiters on their blocking listeners (resolve) stay so only where a
    sibling process holds the listener too and no thread of the sample waits for it to be readable: a process
    alone may wait for readiness on a blocking listener, as none other takes its connection first (Python's
    socketserver: http.server, wsgiref, a parent sleeping in prefork's maintenance), and a forking server's
    children that hold its listener while their parent polls it never accept from it (ForkingMixIn)."""
    readied = [s.listeners for s in seen if s.via in ("poll", "select", "epoll", "io_uring") and s.call != "running"]
    polled = frozenset().union(*readied)
    holders = Counter((parent.get(s.pid), i) for s in {(s.pid, s.holds): s for s in seen}.values() for i in s.holds)

    def alone(s: Seen) -> bool:  # no sibling (another child of its parent) holds any of its listeners
        return parent.get(s.pid) is None or all(holders[parent.get(s.pid), i] < 2 for i in s.listeners)

    return [
        replace(s, via="running", listeners=frozenset())
        if s.via == "accept" and s.call == "running" and (s.listeners & polled or alone(s))
        else s
        for s in seen
    ]


def _taking_lock(mine: list[Seen], waits: tuple[ThreadWait, ...], shared: bool = True) -> list[Seen]:
    """A process its kind says takes a lock before it waits on its listeners (ServerKind.lock_first): a running
    thread of it taken for its epoll's or accept()'s waiter is a lock taker (`lock`, call `running`), not a waiter,
    where siblings share the lock (`shared`: one alone is left its epoll's waiter, as it reads idle); and a poll or
    select whose set could not be read is not taken to be its listeners (an Apache prefork child polls its kept
    connection; under load its set is often gone by the time it is read)."""
    unread = {w.tid for w in waits if w.call in POLLS | SELECTS and w.fds is None}
    return [
        replace(s, via="lock", listeners=frozenset(), exclusive=None, epoll_id=None)
        if shared and s.call == "running" and s.via in ("epoll", "accept")
        else replace(s, via="other", listeners=frozenset())
        if s.via in ("poll", "select") and s.tid in unread
        else s
        for s in mine
    ]


def _aside(mine: list[Seen], waits: tuple[ThreadWait, ...], listening: frozenset[str]) -> list[Seen]:
    """In a server where a thread its kind names as the one that waits on its listeners is seen
    (ServerKind.listener_threads), the threads that are `aside`, no worker's and no sign of listeners taken out: any
    other one waiting on a listener (Puma's control server, 'puma ctl', on its own port: read as a second worker, or
    as the one listening while every worker served), and in a process with a named thread its other ones (Puma's
    reactor in its epoll, read as Apache's event children at their limit while every worker served)."""
    names = {w.tid: w.name for w in waits}
    here = any(names.get(s.tid) in listening for s in mine)
    return [
        s
        if names.get(s.tid) in listening or not (here or (s.listeners and s.via in WAITS_ON_LISTENER))
        else replace(s, via="aside", listeners=frozenset(), exclusive=None, epoll_id=None)
        for s in mine
    ]


def take(
    server: Server,
    tables: FdTables | None = None,
    locking: Callable[[int, frozenset[int]], bool] | None = None,
    listening: frozenset[str] = frozenset(),
) -> Sample:
    """Every thread of the server's processes now; `tables`: the look's fd tables (kept across its samples),
    read now when not given; `locking`: whether a process of so many threads holding these sockets takes a lock
    before it waits on its listeners, as the server's kind says (ServerKind.lock_first); `listening`: the names of
    the threads that wait on them, where the kind names them (ServerKind.listener_threads)."""
    tables = tables if tables is not None else FdTables()
    listeners = frozenset(row.inode for row in server.listeners)
    parent = {p.pid: p.ppid for p in server.processes}
    read_now: list[tuple[int, list[Seen], bool]] = []  # each process's threads, and whether the kind's lock is its
    waits: dict[int, tuple[ThreadWait, ...]] = {}
    files: dict[int, Mapping[int, OpenFile]] = {}
    sockets: dict[int, frozenset[int]] = {}
    for pid in server.pids:
        tids = thread_ids(pid)
        read = [_thread_wait(tables, pid, tid) for tid in tids]
        waits[pid] = tuple(wait for wait, _ in read)
        tables.thread_names.update(((pid, w.tid), w.name) for w in waits[pid])
        table: Mapping[int, OpenFile]
        try:
            table, held = tables.files_and_sockets(pid, again=sorted({w.fd for w in waits[pid] if w.fd is not None}))
        except PermissionError:
            table, held = {}, frozenset()
        files[pid] = table
        sockets[pid] = held
        holds = held & listeners
        blocking = _blocking(tables, pid, table, holds) if any(map(_needs_flags, waits[pid])) else frozenset()
        mine = [
            _resolved(tables, pid, w, raw, table, listeners, server.peers, len(tids), holds, blocking)
            for w, raw in read
        ]
        read_now.append((pid, _one_loop(mine), locking is not None and locking(len(tids), held)))
    if listening & {w.name for ws in waits.values() for w in ws}:  # none seen (another version's names): as any
        read_now = [(pid, _aside(mine, waits[pid], listening), locks) for pid, mine, locks in read_now]
    # a lock among one worker decides nothing: the kind's names it only where siblings share it (Apache prefork-mutex
    # with one child read 'epoll, one waiter' idle and 'accept-mutex' under load)
    sharing = Counter(parent.get(pid) for pid, _, locks in read_now if locks)
    # uWSGI without a master: worker 1 is the first process and the others' parent, so no two are siblings; a
    # process that waits on (or runs for) the listeners or the lock takes part, Apache's parent (pselect6) does not
    taking = sum(1 for _, mine, locks in read_now if locks and any(s.via in _TAKES_PART for s in mine))
    seen: list[Seen] = []
    for pid, mine, locks in read_now:
        shared = max(sharing[parent.get(pid)], taking) >= LOCK_SHARED_BY
        seen += _taking_lock(mine, waits[pid], shared) if locks else mine
    seen = _accepting_peers(seen, parent)
    seen, answered, same = _shared_epolls(seen, tables.file_orders)
    return Sample(tuple(seen), waits, files, sockets, answered, same)
