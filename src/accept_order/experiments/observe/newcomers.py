"""Newcomers seen accepting during the window: processes of the server's program that are none of the workers observe
chose and accept on its listener (a reload's worker, HAProxy -sf's new process, the workers of Puma's refork, a
replaced gunicorn worker). The accept watch counts the threads of the program's names too (accept_watch.py's comms),
so the kernel credits each newcomer its own accepts; each process a reading names that is not a worker is read once,
as soon as it is named, while it runs: its start, its network namespace and whether it holds one of the server's
listeners (another server of the same name on another port is not this one's), or, holding none by then, whether it
takes over from the workers (reloaded.takes_over: a second reload soon after the first soft-stops the first newcomer,
which closes its listeners at once and may run on with the connections it holds). Read then, not only as the window
ends (reloaded.py's look): HAProxy reloaded twice in one window (-W, kill -USR2 twice) had its first new worker finish
and exit before the end, and only the second was found, the first's hand-off and its accepts said nowhere."""

from __future__ import annotations

import os

from ...probes.accept_filter import plain_comm
from ...probes.accept_watch import ThreadCounts
from ...servers.registry import recognise
from .reloaded import listening_ports, netns_of, started_s, takes_over
from .server import Watched

COMMS_MAX = 8  # names followed at most (one string compare each per accept)


def followed_comms(watched: Watched) -> tuple[str, ...]:
    """The thread names a newcomer's accepting thread has: the workers' program, and the threads its kind names as
    the ones that wait on the listener (Puma's 'puma srv'; its reforked workers' own name is 'puma wrkr fork')."""
    kind = recognise(watched.program, ())
    names = [watched.program, *(kind.listener_threads if kind is not None else ())]
    return tuple(dict.fromkeys(name for name in names if plain_comm(name)))[:COMMS_MAX]


class Newcomers:
    """The processes the accept watch names that are none of the workers, each read once while it runs (see the
    module doc): `found`, this server's, by when each started (seconds since boot); `unread`, gone before it could be
    read, so not known to be this server's (their accepts are said apart)."""

    def __init__(self, watched: Watched, netns: int | None, chosen_at: float) -> None:
        self.watched = watched
        self.netns = netns
        self.chosen_at = chosen_at  # boot clock: a process of the server's started before is none of its newcomers
        self.known = {*watched.workers, *(p for p in (watched.master, watched.acceptor) if p is not None)}
        self.found: dict[int, float] = {}
        # whether each found takes over from those known or an earlier newcomer that did (reloaded.takes_over), read
        # while it runs: a second -sf names the first newcomer, gone by the end, whose command line is then unread
        self.over: dict[int, bool | None] = {}
        self.unread: set[int] = set()
        self._others: set[int] = set()  # read: not this server's (another namespace, another port, started before)
        self._tick = os.sysconf("SC_CLK_TCK")

    def look(self, totals: ThreadCounts) -> None:
        """Read each process the totals name for the first time (a few small /proc reads each, once)."""
        named = {pid for pid, _ in (*totals.accepted, *totals.empty)}
        for pid in sorted(named - self.known - self.found.keys() - self.unread - self._others):
            self._read(pid)

    def unfollowed(self, pids: tuple[int, ...]) -> bool:
        """Whether one of `pids` the accept watch never named (found holding the listener as the window ends,
        reloaded.py) may accept in a thread whose name it does not follow, so that its accepts were not counted,
        not none: a server whose threads carry names of their own (a Java or Tokio pool's; an unknown program's).
        Where the kind names the threads that wait on the listener (Puma's 'puma srv'), one of those is enough;
        else every thread must be of a followed name (HAProxy's, nginx's, Caddy's all carry the program's)."""
        followed = set(followed_comms(self.watched))
        kind = recognise(self.watched.program, ())
        listening = set(kind.listener_threads) if kind is not None else set()
        for pid in pids:
            names = _thread_names(pid)
            counted = bool(names & listening) if listening else names <= followed
            if pid not in self.found and names and not counted:
                return True
        return False

    def _read(self, pid: int) -> None:
        started = started_s(pid, self._tick)
        if started is None:
            self.unread.add(pid)
            return
        here = started > self.chosen_at and netns_of(pid) == self.netns
        taking = takes_over(pid, self.known | {p for p, over in self.over.items() if over}) if here else None
        listening = listening_ports(pid) if here else set()
        # one that holds no listener at all now is still this server's where it takes over from it: HAProxy -sf'd
        # again within a reading (200 ms) of its first accept had closed its listeners when read, and was taken for
        # another server, its accepts dropped and the next newcomer, naming it, called no reload. One listening on
        # other ports only is another server, even one a worker started (an app's own helper server)
        if here and (listening & set(self.watched.ports) or (taking and not listening)):
            self.found[pid] = started
            self.over[pid] = taking
        elif started_s(pid, self._tick) is None:  # it ended while it was read: its fd table said nothing
            self.unread.add(pid)
        else:
            self._others.add(pid)


def _thread_names(pid: int) -> set[str]:
    """The names of `pid`'s threads now (/proc/PID/task/*/comm); none where it is gone."""
    names = set()
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/comm", encoding="utf-8", errors="replace") as f:
                names.add(f.read().rstrip("\n"))
    except OSError:
        pass
    return names
