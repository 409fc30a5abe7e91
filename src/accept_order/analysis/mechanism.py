"""Which accept mechanism a running server uses, from what its threads wait on (pure: no /proc here; the values it
reads and answers with are analysis/mechanism_values.py's).

The input is one sample: every thread of the server with what it sleeps in, resolved to the listeners it
waits on (`Seen`); the answer is a name from this tool's own mode vocabulary (the built-in modes:
blocking, epoll, epoll-herd, epoll-shared, poll, select, reuseport, fd-pass, io-uring, accept-mutex)
with the sentences that justify it. What decides, in order:

- fd-pass: one process waits on the listeners while others, holding none, wait on Unix sockets whose
  other end that process holds (it accepts and hands each connection over);
- reuseport: several listeners on one address and port, and the workers wait on different ones;
- accept-mutex: one worker waits on the listener while its siblings hold it but wait without it (in an
  epoll that lacks it, or for a lock), or run and take the lock first (beside a sibling waiting for it, or
  where the kind says so: Apache prefork with two Listens): a lock decides who listens (nginx's
  accept_mutex, uWSGI's thunder lock, Apache's accept mutex);
- otherwise the call the workers sleep in: accept (blocking), epoll (one instance shared by all:
  epoll-shared; EPOLLEXCLUSIVE in every worker's own: epoll; else epoll-herd), poll, select, io_uring.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..core.models import Mechanism
from ..core.text import plural
from .mechanism_values import Listener, Seen, Verdict
from .unseen import why_unseen

WAITS_ON_LISTENER = ("accept", "epoll", "poll", "select", "io_uring")
CALL_MODE = {
    "accept": Mechanism.BLOCKING,
    "poll": Mechanism.POLL,
    "select": Mechanism.SELECT,
    "io_uring": Mechanism.IO_URING,
}


def _where(listener: Listener) -> str:
    return f"[{listener.address}]:{listener.port}" if ":" in listener.address else f"{listener.address}:{listener.port}"


def classify(
    seen: Sequence[Seen],
    listeners: Sequence[Listener],
    parent: Mapping[int, int],
    sockets: Mapping[int, frozenset[int]],
    known_lock: str | None = None,
) -> Verdict:
    """The mechanism one sample shows (see _classify), with the workers busy with a connection at the look."""
    verdict = _classify(seen, listeners, parent, sockets, known_lock)
    busy = _busy(seen, verdict, parent)
    return replace(verdict, busy=busy) if busy else verdict


def _busy(seen: Sequence[Seen], verdict: Verdict, parent: Mapping[int, int]) -> tuple[tuple[int, int], ...]:
    """Single-threaded siblings of the workers (children of a worker's parent, which is a worker itself in uWSGI
    without a master) that hold a listener and wait in something else than a listener or a lock: serving a
    connection. A parent of the server's processes is its master (Apache's in pselect6), and a threaded process's
    other threads serve no connection of their own (an event child's pool): neither is one. Not for an acceptor's fed
    workers. A worker's own child is not one unless another child of it is a worker: a forking server's children,
    one per connection it accepted (socketserver's ForkingMixIn), hold the listener they inherited and never take
    a connection from it ('3 workers' for its one, read as busy). With no worker seen waiting, the children of a
    master (a holder whose children hold too): gunicorn's sync workers all serving read as '0 workers'. A thread its
    kind says never waits on the listeners (`aside`: Puma's reactor) is not counted: Puma's worker is its accepting
    thread, and a process with such threads is a worker with no master needed (Puma in single mode, -w 0, all busy
    read '0 workers')."""
    workers = {*verdict.waiters, *verdict.losers}
    if verdict.fed:
        return ()
    family = {parent.get(pid) for pid, _ in workers} - {None} if workers else _masters(seen, parent)
    threads = Counter(s.pid for s in seen if s.via != "aside")
    named = {s.pid for s in seen if s.via == "aside"}  # its kind named the thread of it that waits on the listeners
    parents = {parent.get(s.pid) for s in seen}
    return tuple(
        s.unit
        for s in seen
        if s.via in ("other", "running")
        and s.holds
        and s.unit not in workers
        and threads[s.pid] == 1
        and s.pid not in parents
        and (parent.get(s.pid) in family or s.pid in named)
    )


def _classify(
    seen: Sequence[Seen],
    listeners: Sequence[Listener],
    parent: Mapping[int, int],
    sockets: Mapping[int, frozenset[int]],
    known_lock: str | None = None,
) -> Verdict:
    """The mechanism one sample shows. `parent`: pid -> its parent's pid; `sockets`: pid -> the socket
    inodes in its fd table (to tell whose end of a Unix socketpair a fed worker waits on); `known_lock`: why
    the running threads the caller read as lock takers (`lock`, call `running`) take a lock first, where the
    server's kind says so (ServerKind.lock_first)."""
    by_inode = {lst.inode: lst for lst in listeners}
    seen = _lock_takers(seen, parent)
    waiting = [s for s in seen if s.via in WAITS_ON_LISTENER and s.listeners]
    # A master sleeping in poll/select/io_uring while its children wait on the same listeners is watching
    # something else (gunicorn's arbiter selects on its own pipe); the set it watches cannot be seen, so it
    # is left out. An accept or an epoll shows what it waits on: those always count, and so does a poll or select
    # set read from memory that names the listeners: a parent waiting so is a worker among its children (Puma's
    # --fork-worker: workers 1-3 are forked from worker 0, which serves too: read as their master, 3 workers of 4)
    parents = {parent.get(s.pid) for s in waiting}
    waiting = [s for s in waiting if s.via in ("accept", "epoll") or s.set_read or s.pid not in parents]
    if not waiting:
        return _none_waiting(seen, known_lock, _masters(seen, parent))
    units = tuple(s.unit for s in waiting)
    accepting = {s.pid for s in waiting}
    # an acceptor holds the listeners alone (Node's primary, the built-in fd-pass mode's): nginx's cache manager
    # and loader wait on channels a worker holds too, while the master holds the listeners beside the workers
    alone = all(not (held & by_inode.keys()) for pid, held in sockets.items() if pid not in accepting)
    if len(accepting) == 1 and alone:
        acceptor = next(iter(accepting))
        mine = sockets.get(acceptor, frozenset())
        fed = [s for s in seen if s.via == "passed" and not s.holds and s.unix_ends & mine]
        if fed:
            return Verdict(
                Mechanism.FD_PASS,
                units,
                fed=tuple(s.unit for s in fed),
                evidence=(
                    f"only pid {acceptor} waits on the listener; {plural(len({s.pid for s in fed}), 'process')} "
                    f"that hold none wait on Unix sockets whose other end pid {acceptor} holds: it accepts and "
                    "passes each connection on",
                ),
            )

    waited = {s.listeners for s in waiting}
    groups = Counter((by_inode[i].address, by_inode[i].port) for i in by_inode)
    shared_port = [key for key, n in groups.items() if n > 1]
    # Under load the other workers of a group may all be busy at every sample: one waiter on one socket of a
    # SO_REUSEPORT group still says which mechanism it is (the busy workers' sockets keep their share)
    # (a listener this sample does not know is no proof of a group: `all` of nothing would say it is)
    waited_groups = [(by_inode[i].address, by_inode[i].port) for s in waiting for i in s.listeners if i in by_inode]
    one_of_group = (
        len(waiting) == 1 and len(waiting[0].listeners) == 1 and bool(waited_groups) and waited_groups[0] in shared_port
    )
    if (len(waited) > 1 or one_of_group) and shared_port:
        # the group the workers wait on is the one named (a server may have one on each of two ports)
        address, port = next((key for key in waited_groups if key in shared_port), shared_port[0])
        return Verdict(
            Mechanism.REUSEPORT,
            units,
            evidence=(
                f"{groups[(address, port)]} listening sockets on "
                f"{_where(Listener(0, address, port))} (a SO_REUSEPORT group), and each worker waits on "
                "its own: the kernel picks the socket, and with it the worker, for each connection",
            ),
        )

    held = set().union(*(s.listeners for s in waiting))
    siblings = {parent.get(s.pid) for s in waiting}
    # a loser is another worker: a thread of the waiter's own process in an epoll without the listener is that
    # worker's other loop (Node's primary under load: its second thread made SCHED_RR read as an accept mutex);
    # one waiting for the lock is a loser wherever it is (uWSGI's threads of one process under --thunder-lock); one
    # in an epoll without it only as its process's main thread: another thread's epoll is a loop of its own beside
    # the thread that accepts (Puma's reactor, while its worker's accepting thread is busy, read as an accept mutex)
    # (a lock waiter may be the waiter's parent or child too: uWSGI without a master, whose first worker is the
    # others' parent, read 'epoll' idle with 2 workers, its other worker in FUTEX_LOCK_PI beside the holder)
    losers = [
        s
        for s in seen
        if (s.via == "lock" or (s.via == "idle" and s.pid not in accepting and s.tid == s.pid))
        and s.holds & held
        and s.unit not in units
        and (
            parent.get(s.pid) in siblings or (s.via == "lock" and (s.pid in siblings or parent.get(s.pid) in accepting))
        )
    ]
    if len(waiting) == 1 and losers:
        how = sorted({_how(s) for s in losers})
        known = (known_lock,) if known_lock and any(s.call == "running" for s in losers) else ()
        return Verdict(
            Mechanism.ACCEPT_MUTEX,
            units,
            losers=tuple(s.unit for s in losers),
            evidence=(
                f"only 1 of {1 + len(losers)} workers has the listener in what it waits on; the others hold "
                f"it but {' or '.join(how)}: a lock decides who listens",
                *known,
            ),
        )

    via = Counter(s.via for s in waiting).most_common(1)[0][0]
    # a worker running at the look waits in no call: its epoll is known, but 'running()' names no system call
    running = sum(1 for s in waiting if s.via == via and s.call == "running")
    named = sorted({s.call + "()" for s in waiting if s.via == via and s.call != "running"})
    if named:
        calls = ", ".join(named) + (f" ({running} running at the look)" if running else "")
    else:
        calls = "their loops (all running at the look)" if len(waiting) > 1 else "its loop (running at the look)"
    who = plural(len(waiting), "worker")
    one = len(waiting) == 1  # the verb agrees: under load one worker may be the only one waiting
    if via == "epoll":
        epolls = {s.epoll_id for s in waiting if s.via == "epoll"}
        if len(waiting) > 1 and len(epolls) == 1 and None not in epolls:
            return Verdict(
                Mechanism.EPOLL_SHARED,
                units,
                evidence=(f"{who} wait in {calls} on one epoll instance they share (one open file, by kcmp)",),
            )
        flags = {s.exclusive for s in waiting if s.via == "epoll"}
        if flags == {True}:
            return Verdict(
                Mechanism.EPOLL,
                units,
                evidence=(
                    f"{who} {'waits' if one else 'wait'} in {calls}, {'on its' if one else 'each on its'} own epoll "
                    "that watches the listener with EPOLLEXCLUSIVE",
                ),
            )
        if len(waiting) == 1:
            return Verdict(
                Mechanism.EPOLL,
                units,
                exclusive=False,
                evidence=(
                    f"1 worker waits in {calls} on an epoll that watches the listener without "
                    "EPOLLEXCLUSIVE (with one waiter there is no one else to wake)",
                ),
            )
        return Verdict(
            Mechanism.EPOLL_HERD,
            units,
            evidence=(
                f"{who} wait in {calls}, each on its own epoll that watches the listener without "
                "EPOLLEXCLUSIVE: a connection wakes them all",
            ),
        )
    if via == "accept" and running:  # a running one is a waiter only where its listener is a blocking socket
        return Verdict(CALL_MODE[via], units, evidence=(_blocking_accept(len(waiting), named, running),))
    sentence = {
        "accept": f"{who} {'sleeps' if one else 'sleep'} in {calls} on the listener itself",
        "poll": f"{who} {'sleeps' if one else 'sleep'} in {calls} holding the listener",
        "select": f"{who} {'sleeps' if one else 'sleep'} in {calls} holding the listener",
        "io_uring": f"{who} {'waits' if one else 'wait'} in {calls} on rings with an accept armed",
    }[via]
    return Verdict(CALL_MODE[via], units, evidence=(sentence,))


def _how(loser: Seen) -> str:
    if loser.via == "lock":
        return "are running (they take the lock before they wait)" if loser.call == "running" else "wait for a lock"
    return "wait in an epoll without it"


def _lock_takers(seen: Sequence[Seen], parent: Mapping[int, int]) -> list[Seen]:
    """A running thread taken for a waiter on its listeners (its epoll's, or accept()'s on a blocking socket) is a
    lock taker where a sibling holding one of them waits for a lock and another waits on them, the lock's holder:
    it takes that lock too before it waits. Apache prefork's children with two Listens, busy but for the one
    waiting for the mutex and its holder, read as an epoll herd: each holds an epoll that watches the listeners
    (APR's pollset), waited in only by the mutex's holder. With no holder seen waiting, a running one may be it
    (between its wakeup and its unlock: uWSGI's thunder lock under load), and they stay as they were."""
    locked = {(parent.get(s.pid), i) for s in seen if s.via == "lock" and s.call != "running" for i in s.holds}
    held = {
        (parent.get(s.pid), i) for s in seen if s.via in WAITS_ON_LISTENER and s.call != "running" for i in s.listeners
    }
    locked &= held
    if not locked:
        return list(seen)
    return [
        replace(s, via="lock", listeners=frozenset(), exclusive=None, epoll_id=None)
        if s.call == "running" and s.via in ("epoll", "accept") and {(parent.get(s.pid), i) for i in s.holds} & locked
        else s
        for s in seen
    ]


def _masters(seen: Sequence[Seen], parent: Mapping[int, int]) -> set[int | None]:
    """The processes that hold a listener and are the parent of others holding one: a master, never a worker."""
    holders = {s.pid for s in seen if s.holds}
    return {parent.get(pid) for pid in holders} & set(holders)


def _none_waiting(seen: Sequence[Seen], known_lock: str | None, masters: set[int | None]) -> Verdict:
    """No thread waits on a listener: every worker busy, unless the kind says its running workers take a lock
    first (`known_lock`), which is then the mechanism, with them and any waiting for the lock as its losers. A
    master's threads (`masters`: gunicorn 27's arbiter has one in an epoll) are no worker's."""
    losers = [s for s in seen if s.via == "lock" and s.holds]
    running = sum(1 for s in losers if s.call == "running")
    if not (known_lock and running):
        return Verdict(None, (), evidence=(why_unseen([s for s in seen if s.pid not in masters]),))
    locked = len(losers) - running
    also = f", {locked} {'waits' if locked == 1 else 'wait'} for a lock" if locked else ""
    return Verdict(
        Mechanism.ACCEPT_MUTEX,
        (),
        losers=tuple(s.unit for s in losers),
        evidence=(
            f"no worker waits on the listener at this moment: {running} holding it "
            f"{'is' if running == 1 else 'are'} running{also}",
            known_lock,
        ),
    )


def _blocking_accept(waiting: int, named: list[str], running: int) -> str:
    """Workers asleep in accept() and workers running at the look that hold the listener as a blocking socket
    (the look read its mode: a blocking socket is accepted from in accept(), never from a readiness loop)."""
    blocking = "a blocking socket, which is accepted from in accept()"
    if named:
        asleep = waiting - running
        return (
            f"{plural(asleep, 'worker')} {'sleeps' if asleep == 1 else 'sleep'} in {', '.join(named)} on the listener "
            f"itself, and {running} more {'is' if running == 1 else 'are'} running at the look: the listener is "
            f"{blocking}"
        )
    one = waiting == 1
    return (
        f"{plural(waiting, 'worker')} {'is' if one else 'are'} running at the look, holding the listener as "
        f"{blocking}: where {'it waits' if one else 'they wait'} between connections"
    )


def overall(verdicts: Sequence[Verdict]) -> tuple[Verdict, dict[str, int]]:
    """The samples' answer: the mechanism most samples showed (accept-mutex wins when any sample saw the
    lock: an idle holder can keep it, so a sample that saw every worker listening is rarer; a herd wins over
    lone waiters without EPOLLEXCLUSIVE), from the sample of it that saw the most waiters, and how many
    samples showed each."""
    tally = Counter(v.mechanism for v in verdicts if v.mechanism is not None)
    if not tally:
        return verdicts[0], {}
    name = Mechanism.ACCEPT_MUTEX if Mechanism.ACCEPT_MUTEX in tally else tally.most_common(1)[0][0]
    # Under load a herd's other workers may be busy at most samples: one waiter in an epoll without EPOLLEXCLUSIVE
    # reads as epoll, which a sample that saw two or more of them disproves (h2o's threads, HAProxy's under wrk)
    lone = [v for v in verdicts if v.mechanism == Mechanism.EPOLL and len(v.waiters) == 1 and not v.exclusive]
    if name == Mechanism.EPOLL and Mechanism.EPOLL_HERD in tally and len(lone) == tally[Mechanism.EPOLL]:
        name = Mechanism.EPOLL_HERD
    # the sample that saw the most of its workers waiting: one that saw a single waiter says it takes every one
    chosen = max((v for v in verdicts if v.mechanism == name), key=lambda v: len(v.waiters))
    return chosen, {str(k): n for k, n in tally.items()}
