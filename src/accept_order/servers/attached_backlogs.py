"""The listen() backlogs of a running server's listeners, read from the kernel for its spec (ServerSpec.backlogs).

A server this tool did not start chose its own backlog: 'latency --attach' of Debian's HAProxy (bind ... backlog
4096 by default) or of nginx at 'listen ... backlog=64' saved the tool's default 511 as theirs. inet_diag's
idiag_wqueue of a listener (ss -ltn's Send-Q) is its backlog as listen() set it, capped by somaxconn."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.spec import ServerSpec


def listener_backlogs(host: str, port: int, pids: Sequence[int]) -> tuple[int, ...]:
    """The backlog of the listeners on `port` that connections to `host` go to, in the namespaces of `pids`: one
    where they agree, each (sorted) where they differ; () where one was read from /proc alone (which does not
    show it) or none was found: not known, and not guessed."""
    from ..probes.listeners import listening_sockets_of, serving_on

    rows = {row.inode: row for row in serving_on(listening_sockets_of(port, pids), host)}.values()
    backlogs = [row.backlog for row in rows]
    if not backlogs or None in backlogs:
        return ()
    known = sorted(b for b in backlogs if b is not None)
    return (known[0],) if len(set(known)) == 1 else tuple(known)


def read_into(spec: ServerSpec) -> ServerSpec:
    """An attached spec with the backlogs of its listeners read now (listener_backlogs), in the namespaces of the pids
    it names and of a master's children. The one place they are read: every run is planned (servers/registry.py
    `plan`: AttachedKind.as_found), the command line's and the Python API's alike (`accept_order.latency(ServerSpec(
    kind="attached", ...))` saved none before). Read whatever the spec holds: they are the kernel's as the run began,
    never given, and an earlier result's server run again kept its 64 after nginx was reloaded at 128."""
    from .attached_start import children_of

    children = children_of(spec.attach[0]) if len(spec.attach) == 1 else []
    return spec.replace(backlogs=listener_backlogs(spec.host, spec.port, [*spec.attach, *children]))
