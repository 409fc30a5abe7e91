"""`inspect`: read a running server's accept mechanism from /proc, a few samples apart. Nothing is driven
at the server and nothing signals it: every read is of /proc (and netlink's socket tables)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace

from ...analysis.mechanism import classify, overall
from ...analysis.mechanism_values import Listener, Verdict
from ...analysis.other_listeners import served_otherwise
from ...core.capabilities import what_would_let_it
from ...core.environment import current
from ...core.kinds import ModeInfo, ServerKind
from ...core.models import Mechanism
from ...probes.fd_table import FdTables, OpenFile
from ...probes.file_table import polls_of
from ...probes.proc_processes import ProcessInfo, namespace_listeners
from ...probes.server_netns import counters_of, namespace_of, same_namespace, sysctls_of
from ...probes.serving import Server, check_pid, find_server, with_backlogs
from ...servers.registry import DEFAULT_KIND, recognise, server_kind
from .changes import change_views
from .held import connections_held, with_held
from .loops import with_registered_loops
from .result import ChangeView, InspectResult, MechanismView
from .sample import Sample, take
from .views import epoll_views, listener_views, process_rows, unit_views, unix_links

SAMPLES = 5
# Between looks. nginx's accept mutex is retried every accept_mutex_delay (500 ms): a lock that moves under load
# shows in some samples; an idle holder keeps it, and every sample shows the same one. 5 ms, not 20 (60 ms of
# every inspect): 20 runs each named the lock of nginx (accept_mutex on, 4 workers: idle, 200, 2000 connections/s
# and clients flat out) and of the built-in accept-mutex mode (idle, 300/s, flat out) as often at 5 ms and at 0
# as at 20 (every time), and no run's samples disagreed at any of them.
INTERVAL_S = 0.005

ALONE = "only one worker waits for connections: it takes every one, whatever it waits in"
# What /proc cannot show of a mechanism, said with it (a kind adds its own: ServerKind.unseen)
_NOT_READ = "are in the process's memory, which this user may not read: taken to be the listeners it holds"
UNSEEN: dict[str, str] = {
    Mechanism.REUSEPORT: "a BPF program on the group (SO_ATTACH_REUSEPORT_CBPF/EBPF) or SO_INCOMING_CPU marks "
    "would steer it instead of the hash: neither is visible in /proc",
    Mechanism.POLL: f"the descriptors a poll() call watches {_NOT_READ}",
    Mechanism.SELECT: f"the descriptors a select() call watches {_NOT_READ}",
    Mechanism.IO_URING: "which socket an armed io_uring accept waits on is not shown: taken to be the listener "
    "it holds",
}


def inspect(pid: int | None = None, port: int | None = None, samples: int = SAMPLES) -> InspectResult:
    """The server behind `pid` or `port`, as /proc shows it now. NotServing when there is none; PlanError
    for a pid no process can have."""
    if pid is not None:
        check_pid(pid)
    # each process's fd table read once, for the search and every sample (sample.py), and the files each sample
    # reads again kept open until the last
    with FdTables(keep=True) as tables:
        server = find_server(pid, port, tables)
        verdict, tally, taken, sample = looks(server, tables, samples)
    anchor = server.pids[0]
    rows = with_backlogs(anchor, list(server.listeners))
    top = server.processes[0]
    kind = _kind(server)
    units = unit_views(server, sample, verdict)
    held, unread = connections_held(server, sample)
    processes, units = with_held(process_rows(server, sample, verdict), units, held)
    mechanism = _mechanism(verdict, tally, kind, server, taken)
    changes, measure_all = _changes(kind, mechanism)
    own = same_namespace(anchor)
    sysctls = sysctls_of(anchor)
    return InspectResult(
        target=f"pid {pid}" if pid is not None else f"port {port}",
        recognised=kind.name if kind is not None else None,
        program=top.name,
        processes=processes,
        listeners=listener_views(rows, server, sample, units),
        units=units,
        epolls=epoll_views(server, sample, verdict),
        io_urings=sum(1 for table in sample.files.values() for f in polls_of(table) if f.ops and f.accept_armed),
        unix_links=unix_links(server, sample),
        mechanism=mechanism,
        changes=changes,
        measure_all=measure_all,
        namespace="this tool's" if own else f"its own (net:[{namespace_of(anchor)}])",
        sysctls=sysctls,
        counters=counters_of(anchor),
        environment=current(),
        notes=_notes(server, taken, tally, own, sysctls_known=any(v is not None for v in sysctls.values()))
        + ((unread,) if unread else ())
        + _unread_settings(kind, top),
    )


def looks(
    server: Server, tables: FdTables, samples: int = SAMPLES
) -> tuple[Verdict, dict[str, int], list[Sample], Sample]:
    """`samples` looks at the server's threads and what they show: the overall verdict, how many samples
    showed each mechanism, every sample, and the one the verdict came from (observe asks it too, to find an
    acceptor's workers)."""
    # a lock no one waits for is not seen: the kind may know of it
    kind, top = _kind(server), server.processes[0]
    rule = kind.lock_first_of(top.argv, top.pid) if kind is not None else None
    locking = rule.among(frozenset(r.inode for r in namespace_listeners(server.pids[0]))) if rule else None
    listening = frozenset(kind.listener_threads) if kind is not None else frozenset()
    taken = [take(server, tables, locking, listening)]
    for _ in range(samples - 1):
        time.sleep(INTERVAL_S)  # sampling real time on purpose: the lock of accept-mutex may move
        taken.append(take(server, tables, locking, listening))
    # a busy thread is its epoll's waiter all the same: read from the registrations where no wait shows it
    # (only where each thread runs a loop of its own: uWSGI's threads take turns at theirs, loops.py)
    loops = kind is None or kind.threads_are_workers or kind.loops_are_workers
    taken = with_registered_loops(taken, frozenset(r.inode for r in server.listeners), loops)
    listeners = [Listener(r.inode, r.address, r.port) for r in server.listeners]
    parent = {p.pid: p.ppid for p in server.processes}
    known = rule.why if rule is not None else None
    verdicts = [classify(s.seen, listeners, parent, s.sockets, known) for s in taken]
    # of samples that saw as many workers, the one where most of them sleep is shown (overall takes the first):
    # 'wait in epoll_wait() (1 running at the look)' over 'wait in their loops (all running at the look)'
    order = sorted(range(len(taken)), key=lambda i: -_asleep(taken[i]))
    ordered = [verdicts[i] for i in order]
    verdict, tally = overall(ordered)
    sample = taken[order[ordered.index(verdict)]]
    elsewhere = served_otherwise(sample.seen, listeners, parent, sample.sockets, verdict.mechanism, known)
    return replace(verdict, elsewhere=elsewhere), tally, taken, sample


def _asleep(sample: Sample) -> int:
    """How many of the sample's threads sleep on a listener (not taken for its waiter while running)."""
    return sum(1 for s in sample.seen if s.listeners and s.call != "running")


def _unread_settings(kind: ServerKind | None, top: ProcessInfo) -> tuple[str, ...]:
    """What the kind could not read of what the server was started with (an ini not readable here), as a note."""
    said = kind.settings_unread(top.argv, top.pid) if kind is not None else None
    return (said,) if said else ()


def _kind(server: Server) -> ServerKind | None:
    """The launched kind the server's first process is, by its name (the registry's recognise)."""
    top = server.processes[0]
    return recognise(top.name, top.argv)


def _info(kind: ServerKind | None, name: str) -> tuple[tuple[str, ...], ModeInfo]:
    """The kind's modes that /proc shows as mechanism `name`, and the one to explain it with (the built-in
    mode's, for a server this tool does not know)."""
    builtin = server_kind(DEFAULT_KIND).mode(name)
    if kind is None:
        return (), builtin
    modes = tuple(m.name for m in kind.modes().values() if m.mechanism == name)
    return modes, (kind.mode(modes[0]) if modes else builtin)


def _mechanism(
    verdict: Verdict, tally: dict[str, int], kind: ServerKind | None, server: Server, taken: list[Sample]
) -> MechanismView:
    name = verdict.mechanism
    if name is None:
        return MechanismView(None, (), None, False, "unknown", "", verdict.evidence, tally, ())
    modes, info = _info(kind, name)
    # one waiter of a SO_REUSEPORT group does not take every connection: each socket keeps its own share
    alone = len(verdict.waiters) == 1 and name not in (Mechanism.FD_PASS, Mechanism.ACCEPT_MUTEX, Mechanism.REUSEPORT)
    if name == Mechanism.IO_URING and alone:
        alone = _rings_armed(taken) <= 1
    seen_herd = server_kind(DEFAULT_KIND).mode(name).herds and not alone
    unseen = [UNSEEN[name]] if name in UNSEEN else []
    unseen += [kind.unseen[name]] if kind is not None and name in kind.unseen else []
    if name in (Mechanism.POLL, Mechanism.SELECT) and _sets_read(verdict, taken):
        unseen = []
    if name in (Mechanism.EPOLL, Mechanism.EPOLL_HERD, Mechanism.EPOLL_SHARED) and not all(s.kcmp for s in taken):
        unseen.append("kcmp(2) did not answer: one epoll instance shared by several processes looks like one each")
    return MechanismView(
        name=name,
        modes=modes,
        model=None if alone else info.model,
        herds=seen_herd,
        queue=info.queue,
        why=ALONE if alone else _why(kind, info, server),
        evidence=verdict.evidence,
        samples=tally,
        unseen=tuple(unseen),
        elsewhere=verdict.elsewhere,
    )


def _rings_armed(taken: list[Sample]) -> int:
    """The most io_urings one sample saw with an accept armed, or whose fdinfo could not tell (it may have one). A
    ring's accept waits on the listener whether its thread sleeps or runs: under load the busy worker is not seen
    waiting, yet its ring takes every connection ('latency --target' at a 2-worker io-uring server, -c 16, observed:
    worker 1 alone seen asleep, 'only one worker waits ... it takes every one'; the replies gave worker 0 all 3,040)."""

    def armed(file: OpenFile) -> bool:
        return file.kind == "io_uring" and (file.ops is None or file.accept_armed)

    return max((sum(armed(f) for table in s.files.values() for f in polls_of(table)) for s in taken), default=0)


def _why(kind: ServerKind | None, info: ModeInfo, server: Server) -> str:
    """The mode's sentence, as the kind reads it of what the server was started with (HAProxy's config)."""
    top = server.processes[0]
    return kind.why_of(info, top.argv, top.pid) if kind is not None else info.why


def _sets_read(verdict: Verdict, taken: list[Sample]) -> bool:
    """Every waiter's poll or select set was read from memory (in the sample the verdict came from)."""
    for sample in taken:
        waits = {(pid, w.tid): w for pid, ws in sample.waits.items() for w in ws}
        if all(unit in waits for unit in verdict.waiters):
            return all(waits[unit].fds is not None for unit in verdict.waiters)
    return False


def _changes(kind: ServerKind | None, mechanism: MechanismView) -> tuple[tuple[ChangeView, ...], str]:
    if kind is None or not kind.launched:
        return (), "accept-order compare --modes all"
    server = "" if kind.name == DEFAULT_KIND else f" --server {kind.name}"
    return change_views(kind, mechanism.modes), f"accept-order compare{server} --modes all"


def _notes(
    server: Server, taken: list[Sample], tally: dict[str, int], own: bool, sysctls_known: bool
) -> tuple[str, ...]:
    notes: list[str] = []
    if server.hidden:
        pids = ", ".join(map(str, server.hidden))
        whose = "its user" if len(server.hidden) == 1 else "their users"
        notes.append(f"pid {pids}: open files not readable by this user ({what_would_let_it(or_as=whose)})")
    unknown = Counter(w.call for s in taken for waits in s.waits.values() for w in waits)["unknown"]
    if unknown:
        notes.append(
            f"{unknown} thread samples: what they wait in is not readable by this user ({what_would_let_it()})"
        )
    if len(tally) > 1:
        said = ", ".join(f"{name} in {n}" for name, n in sorted(tally.items(), key=lambda kv: -kv[1]))
        notes.append(f"the {len(taken)} samples disagreed: {said}")
    if not own and not sysctls_known:
        notes.append("the server's network namespace is not this tool's and may not be entered (CAP_SYS_ADMIN)")
    return tuple(notes)
