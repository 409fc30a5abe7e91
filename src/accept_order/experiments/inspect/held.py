"""The connections each of the server's processes holds now: one inet_diag dump of the open connections on
its ports (probes/tcp_info.py) against the socket inodes of each process's fd table, which `inspect`'s
sample has read already. Per process: a threaded server's threads share one fd table, so a thread's
connections cannot be told from its process's; a worker that is a process of its own gets its count."""

from __future__ import annotations

from dataclasses import replace

from ...probes.server_netns import entry_refused
from ...probes.serving import Server
from ...probes.tcp_info import server_sockets
from .result import ProcessRow, UnitView
from .sample import Sample


def connections_held(server: Server, sample: Sample) -> tuple[dict[int, int | None], str | None]:
    """Per pid: the open connections (not listening, not TIME_WAIT) on the server's ports in its fd table,
    None where its fd table could not be read; and why none could be counted, if so (a note)."""
    ports = sorted({row.port for row in server.listeners})
    if _none_to_count(server, sample):
        return {pid: None if pid in server.hidden else 0 for pid in sample.sockets}, None
    try:
        sockets = server_sockets(ports, server.pids[0])
    except PermissionError:
        return {}, f"connections held: {entry_refused()}"
    except OSError as exc:
        return {}, f"connections held: the kernel's socket tables could not be read over netlink ({exc})"
    open_ = {s.inode for s in sockets if s.inode}
    hidden = set(server.hidden)
    return {pid: None if pid in hidden else len(inodes & open_) for pid, inodes in sample.sockets.items()}, None


def _none_to_count(server: Server, sample: Sample) -> bool:
    """Every socket of every process is a listener or a connected Unix socket (an idle nginx's channels): none
    can be a connection, and the dump, which walks every TCP socket of the namespace (50,000 in TIME_WAIT here
    made it 48 ms), is not asked. Only where netlink answered in the server's namespace (its listeners' rows
    and the Unix peers came from it), so that a dump that would fail still says so."""
    if not server.peers or not all(row.source == "netlink" for row in server.listeners):
        return False
    known = {row.inode for row in server.listeners} | server.peers.keys()
    return all(inodes <= known for inodes in sample.sockets.values())


def with_held(
    processes: tuple[ProcessRow, ...], units: tuple[UnitView, ...], held: dict[int, int | None]
) -> tuple[tuple[ProcessRow, ...], tuple[UnitView, ...]]:
    """The rows with the connections each holds: every process; a worker only where it is its process's
    one unit (threads of one process share its fd table: their count is the process's)."""
    per_pid = {u.pid: sum(1 for v in units if v.pid == u.pid) for u in units}
    return (
        tuple(replace(p, connections_held=held.get(p.pid)) for p in processes),
        tuple(replace(u, connections_held=held.get(u.pid)) if per_pid[u.pid] == 1 else u for u in units),
    )
