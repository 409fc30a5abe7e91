"""A reload (or a replacement) during the window: a process of the server's program, started after observe chose the
workers, that holds one of its listeners when the window ends. HAProxy's `-sf OLD` starts one that takes the port
over and soft-stops the old; its master-worker's `kill -USR2` re-executes the master, which forks a new worker and
hands it the listeners (`-x sockpair@N`); gunicorn's HUP, Apache's or nginx's new workers hold them too. Their
accepts are not counted (observe watches the workers it chose), and a config read as observe began is not theirs,
so the result says when it happened and, where the kind reads one (HAProxy's multi-queue: handoff_read), what the
newcomer's config says, read after the window.

Read from /proc only, once, after the window: each process's command name and start time (a few hundred small
reads), then the fd table of those that match, against the listeners of the server's ports in its namespace. Not
the watched workers' own children (a forking server's, whose children hold the listener they inherited)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from ...core.handoff import HandOffRead
from ...probes.serving import INIT, children_of, namespace_listeners, process_info, socket_inodes
from ...servers.registry import recognise
from .result import Reloaded
from .server import Watched, threads

ANCESTORS = 64  # a newcomer's ancestors looked through at most for a watched one (a loop of pids is no tree)


def boot_clock() -> float:
    """Seconds since boot, on the clock /proc/PID/stat's start times count (CLOCK_BOOTTIME)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def netns_of(pid: int) -> int | None:
    """The inode of `pid`'s network namespace; None where it has gone or may not be read."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def reloaded(
    watched: Watched,
    netns: int | None,
    chosen_at: float,
    began_at: float,
    seen: Mapping[int, float] | None = None,
    accepted: Mapping[int, int] | None = None,
    over: Mapping[int, bool | None] | None = None,
) -> Reloaded | None:
    """The processes named as the workers, in the server's network namespace (`netns`), started after `chosen_at`
    (boot_clock: when observe chose the workers), that hold a listener on its ports now, and those `seen` accepting
    on one during the window (newcomers.py: pid -> its start, boot_clock), gone since or not; when each started, in
    seconds after `began_at` (the window's start, boot_clock), what each accepted (`accepted`: the kernel's count,
    by pid; None: not counted), and what the config of the newest still there says of the hand-off; `over`: whether
    each of `seen` took over, read while it ran (newcomers.py). None where there is none."""
    tick = os.sysconf("SC_CLK_TCK")
    known = {*watched.workers, *(p for p in (watched.master, watched.acceptor) if p is not None)}
    theirs = children_of(watched.workers)  # a forking server's children hold the listener they inherited
    holding: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or (pid := int(name)) in known or pid in theirs:
            continue
        started = started_s(pid, tick)
        if started is None or started <= chosen_at or _comm(pid) != watched.program or netns_of(pid) != netns:
            continue
        if holds_listener(pid, watched.ports):
            holding[pid] = started
    seen = seen or {}
    holding |= {pid: started for pid, started in seen.items() if holds_listener(pid, watched.ports)}
    found = {**seen, **holding}
    if not found:
        return None
    order = sorted(found, key=lambda p: (found[p], p))
    starts = tuple(round(max(0.0, found[p] - began_at), 1) for p in order)
    serving = [p for p in order if p in holding]
    read = _handoff(watched, serving[-1]) if serving else None  # the newest's config: what serves on
    over = over or {}
    taking: list[bool | None] = []
    for pid in order:  # each in turn: a later one may take over from an earlier (a second -sf names the first)
        taking.append(over[pid] if over.get(pid) is not None else takes_over(pid, known))
        known |= {pid} if taking[-1] else set()
    first_over = next((t for t in taking if t is not None), None)  # the first whose taking over is known
    return Reloaded(
        tuple(order),
        starts[0],
        read,
        first_over,
        starts=starts,
        accepts=tuple(accepted.get(p, 0) for p in order) if accepted is not None else (),
        left=tuple(p for p in order if p not in holding),
    )


def takes_over(pid: int, known: set[int]) -> bool | None:
    """Whether process `pid` takes over from those `known` (the workers watched, their master): one of them is
    among its ancestors (a master's new worker; HAProxy -W's re-executed master keeps its pid; nginx's binary
    upgrade starts a master under the old), or its command line names one after HAProxy's -sf or -st (a reload
    started by hand or a unit, as -W's own workers are too: 'haproxy -sf OLD -x sockpair@3 -W ...'). Neither:
    another server of the program on the same port (SO_REUSEPORT), which is no reload of this one. None: gone
    since it was found, so not known."""
    info = process_info(pid)
    if info is None:
        return None
    if known & set(_stopped_by(info.argv)):
        return True
    parent, seen = info.ppid, 0
    while parent > INIT and seen < ANCESTORS:
        if parent in known:
            return True
        up = process_info(parent)
        parent, seen = (up.ppid if up is not None else 0), seen + 1
    return False


def _stopped_by(argv: tuple[str, ...]) -> list[int]:
    """The pids HAProxy's command line tells to finish (-sf) or stop (-st): those after the flag, up to the next
    option."""
    pids, listing = [], False
    for arg in argv[1:]:
        if arg in ("-sf", "-st"):
            listing = True
        elif listing and arg.isdigit():
            pids.append(int(arg))
        else:
            listing = False
    return pids


def started_s(pid: int, tick: int) -> float | None:
    """When `pid` started, in seconds since boot (/proc/PID/stat's starttime); None where it has gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rpartition(b")")[2].split()[19]) / tick
    except (OSError, ValueError, IndexError):
        return None


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().rstrip("\n")
    except OSError:
        return None


def holds_listener(pid: int, ports: tuple[int, ...]) -> bool:
    """Whether `pid`'s fd table holds a listening socket on one of `ports` in its namespace (not this user's to
    read, or gone: not known to, so no)."""
    return bool(listening_ports(pid) & set(ports))


def listening_ports(pid: int) -> set[int]:
    """The ports of the listening sockets `pid`'s fd table holds in its namespace (none where it is not this user's
    to read, or gone)."""
    try:
        held = socket_inodes(pid)
    except OSError:
        return set()
    return {row.port for row in namespace_listeners(pid) if row.inode in held}


def _handoff(watched: Watched, pid: int) -> HandOffRead | None:
    """What the newcomer's config says of handing on, where its kind reads one and its threads may hand on (one
    listener shared by several): read now, after the window, as read_handoff read the watched workers'."""
    info = process_info(pid)
    kind = recognise(info.name, info.argv) if info is not None else None
    if info is None or kind is None:
        return None
    count = len(threads(pid))
    if kind.handed_on(count > 1, len(watched.listeners), count) is None:
        return None
    return kind.handoff_read(info.argv, pid)


def reload_note(reload: Reloaded, program: str, taken_back: int = 0, running: frozenset[int] = frozenset()) -> str:
    """The note that says it: which processes, when each started, what each accepted (the kernel's count, where
    there is one) and that it is not among the workers'. Not 'reloaded' alone: a replacement (gunicorn's
    --max-requests) or an added worker (a prefork pool grown) is one too. `taken_back`: connections closed since then
    that no look saw the one worker hold, counted to no worker (load.py's taken_back: the newcomer may have served
    them). `running`: those of reload.left (no longer holding the listener) that still ran as the window ended: a
    soft-stopped HAProxy finishing the connections it holds has closed its listeners, and has not exited."""
    one = len(reload.pids) == 1
    which = f"pid {reload.pids[0]}" if one else f"pids {', '.join(map(str, reload.pids))}"
    whose = (
        "another server's on its port, not its reload: the first neither descends from the processes watched nor "
        "names them with -sf or -st"
        if reload.takes_over is False
        else "a reload's, a replacement's or an added worker's"
    )
    if len(reload.starts) == len(reload.pids) and not one:  # each hand-off in turn, with what each accepted
        said = (
            f"{program} started {which} since observe chose its workers, in the order they started: "
            + ", then ".join(_each(reload, i, running) for i in range(len(reload.pids)))
        )
        said += (
            f"; {whose}, each counted apart from the workers above (observe counts the workers it chose as it began)"
        )
    else:
        holds = f"{'it holds' if one else 'they hold'} its listener as the window ends"
        if one and reload.left:  # seen accepting on it, holding it no more by the end
            holds = f"it accepted on its listener and {_gone(reload.pids[0], running)}"
        said = (
            f"{program} started {which} since observe chose its workers, {reload.after_s:.1f} s into the window"
            f"{'' if one else ' (the first)'}, and {holds}: {whose}, whose accepts are not counted here (observe "
            "counts the workers it chose as it began)"
        )
        if one and reload.accepts:
            said = said.removesuffix(
                "whose accepts are not counted here (observe counts the workers it chose as it began)"
            ) + (
                f"which accepted {_connections(reload.accepts[0])} while observed (the kernel's count, its own), not "
                "among the workers above (observe counts the workers it chose as it began)"
            )
    if taken_back:
        said += (
            f"; {taken_back:,} {'connection' if taken_back == 1 else 'connections'} closed since, which no look saw "
            f"the process watched hold, {'is' if taken_back == 1 else 'are'} counted to no worker: "
            f"{'it' if one else 'they'} may have served {'it' if taken_back == 1 else 'them'}"
        )
    return said


def _each(reload: Reloaded, index: int, running: frozenset[int]) -> str:
    """One newcomer of several: when it started, what it accepted, and whether it is still there."""
    pid = reload.pids[index]
    accepted = f"accepted {_connections(reload.accepts[index])}; " if reload.accepts else ""
    there = _gone(pid, running) if pid in reload.left else "holds its listener as the window ends"
    return f"pid {pid} {reload.starts[index]:.1f} s into the window ({accepted}{there})"


def _gone(pid: int, running: frozenset[int]) -> str:
    """What became of a newcomer that no longer held the listener as the window ended (see reload_note)."""
    if pid in running:
        return "closed its listener before the window ended, and still ran as it ended"
    return "exited before the window ended"


def _connections(n: int) -> str:
    return f"{n:,} {'connection' if n == 1 else 'connections'}"


def replaced_note(reload: Reloaded, program: str) -> str:
    """The note where every worker watched exited and a newcomer holds the listener: not a server that stopped."""
    serving = [pid for pid in reload.pids if pid not in reload.left] or list(reload.pids)  # a reload's gone since
    which = f"pid {serving[0]}" if len(serving) == 1 else f"pids {', '.join(map(str, serving))}"
    starts = dict(zip(reload.pids, reload.starts, strict=False))
    at = starts.get(serving[0], reload.after_s)  # the first of those serving on (a file from before: the first's)
    # where the kernel counted its accepts, the note above credits them: not 'does not watch' beside it
    unwatched = "which is not among the workers above" if reload.accepts else "which observe does not watch"
    return (
        f"every worker watched had exited: {program} serves on in {which}, started {at:.1f} s into the "
        f"window (see the note above), {unwatched}, so it ended there"
    )


def reload_clause(reload: Reloaded | None, name: str) -> str:
    """What the hand-off line adds after a reload: the reading above is the watched threads' (read as observe began);
    the newcomer's config, read after the window, says its own, with its doubts."""
    if reload is None:
        return ""
    pids, one = ", ".join(map(str, reload.pids)), len(reload.pids) == 1
    said = "; the threads counted are those watched from the start, whose config was read as observe began: "
    if reload.takes_over is False:  # no reload: another server on the port (see reload_note)
        which = f"pid {pids}, another {name} started" if one else f"pids {pids}, other {name}s started"
        said += f"{which} {reload.after_s:.1f} s in on its port, not its reload, {'is' if one else 'are'} not counted"
    elif len(reload.starts) == len(reload.pids) and not one:  # each hand-off in turn, the last one's serving since
        when = ", ".join(f"{at:.1f}" for at in reload.starts[:-1]) + f" and {reload.starts[-1]:.1f}"
        turns = ", then ".join(f"pid {pid}" for pid in reload.pids)
        said += (
            f"{name} handed its listener on {len(reload.pids)} times, {when} s in: to {turns}, which serves since; "
            "none of them is counted among the threads (see the note)"
        )
    else:
        which = f"pid {pids}, which serves" if one else f"pids {pids}, which serve"
        # left: no longer holding the listener, exited or running on with its connections (see reload_note)
        which = f"pid {pids}, which served and closed its listener" if one and reload.left else which
        said += f"{name} reloaded {reload.after_s:.1f} s in, and {which} since, {'is' if one else 'are'} not counted"
    read = reload.handoff
    if read is None:
        return said
    doubts = "".join(f": {doubt}" if i == 0 else f"; {doubt}" for i, doubt in enumerate(read.doubts))
    unknown = "" if read.hands_on is not None else f" (so its hand-off is not known{doubts})"
    return f"{said}: {read.said}, read after the window{unknown}"
