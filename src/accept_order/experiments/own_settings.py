"""The work and backlog a report gives for its server: this tool's settings, true only of a server it started.

A server elsewhere (--target) runs its own configuration, which this tool neither set nor can read: 'target
127.0.0.1:8080, 2 workers, work 0 s, backlog 511' (ramp) stated the tool's defaults as that server's."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.models import Mechanism
from ..core.spec import ServerSpec
from ..core.text import plural
from ..servers.registry import known_by_replies, known_mode


def own_settings(server: ServerSpec, work: str, backlog: bool = True) -> str:
    """', work W, backlog B' (`work` as the report spells it) for a server this tool started; '' for one
    elsewhere."""
    if known_by_replies(server):
        return ""
    return f", work {work}" + (backlog_said(server) if backlog else "")


def backlog_said(server: ServerSpec) -> str:
    """', backlog B' where the server's listen() backlog is known (this tool's; an attached server's as read,
    ', backlogs 64/128' where its listeners differ); '' where it is not (a --target's): never the tool's default."""
    known = server.known_backlogs
    return f", backlog{'s' if len(known) > 1 else ''} {'/'.join(map(str, known))}" if known else ""


def servers_said(servers: Sequence[ServerSpec], work: str) -> str:
    """'2 workers, work 0 ms, backlog 511' of the servers of one report (a burst's columns): each one's workers and
    backlog by its label where they differ. 'burst --server caddy,nginx -w 2' said '1 worker, work 0 ms, backlog 511'
    (Caddy's workers, and a backlog Caddy's listener never had) of both; now '1 worker (caddy netpoller), 2 workers
    (nginx epoll), work 0 ms, backlog 511 (nginx epoll)'."""
    first = servers[0]
    workers = {server.label: server.workers for server in servers}
    if len(set(workers.values())) == 1:
        said = plural(first.workers, "worker")
    else:
        said = ", ".join(f"{plural(count, 'worker')} ({label})" for label, count in workers.items())
    backlogs = {server.label: server.known_backlogs for server in servers if not known_by_replies(server)}
    if len(set(backlogs.values())) <= 1:
        return said + own_settings(first, work)
    known = ", ".join(f"{'/'.join(map(str, backlog))} ({label})" for label, backlog in backlogs.items() if backlog)
    return f"{said}, work {work}" + (f", backlog {known}" if known else "")


def caps_said(servers: Sequence[ServerSpec]) -> str:
    """', accept-batch 4' for the cap on accepts per wakeup the servers this tool started ran with, where their mode
    reads one (0, none, is not said, as latency's headline has it); per server where they differ or only some read
    it (', accept-batch 4 (epoll)'). 'burst --accept-batch 4', 'ramp' and 'latency --modes epoll,blocking' said
    '2 workers, work 0 ms, backlog 511' of a run capped at 4, as of one that was not."""
    capped = [
        (s.label, s.accept_batch)
        for s in servers
        if s.accept_batch and not known_by_replies(s) and ((m := known_mode(s.kind, s.mode)) is None or m.batches)
    ]
    if not capped:
        return ""
    if len(capped) == len(servers) and len({cap for _, cap in capped}) == 1:
        return f", accept-batch {capped[0][1]}"
    once = dict.fromkeys(capped)  # a server run several ways (reload's leave and kill) named once
    return ", accept-batch " + ", ".join(f"{cap} ({label})" for label, cap in once)


def acceptors(server: ServerSpec) -> int:
    """The server's processes besides its workers that take each connection first (fd-pass's acceptor, Node's
    primary under SCHED_RR): one, which needs a CPU as a worker does; 0 for the rest, and for a mode not known."""
    mode = known_mode(server.kind, server.mode)
    return int(mode is not None and mode.mechanism == Mechanism.FD_PASS)
