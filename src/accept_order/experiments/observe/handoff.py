"""Whether a threaded server hands the connections its threads accept on to other threads (HAProxy's multi-queue),
as its own config says it: read while the server runs (the kind's handoff_read, found through the registry), saved
with the result, and said by the verdict from the saved reading, so `show` of the file says the same."""

from __future__ import annotations

from ...core.handoff import HandOffRead
from ...probes.serving import process_info
from ...servers.registry import recognise
from .reloaded import reload_clause
from .result import ObserveResult
from .server import Watched
from .thread_split import split_known

# HAProxy 2.6, 4 threads, wrk -c8: one thread accepted all 8, and each thread read from 2 of them (bpftrace: recvfrom
# by thread and fd); with 'tune.listener.multi-queue off' in its config the thread that accepted 8 of 9 read from
# those 8. So where the config is not read the hand-off is the default, not a fact this run saw
UNREAD = "unless its config turns tune.listener.multi-queue off (not visible in /proc)"


def read_handoff(watched: Watched) -> HandOffRead | None:
    """What the server's config says of the hand-off, where its kind may hand on (threads sharing a listener): read
    from the topmost process's command line and root, as inspect reads it; None where there is nothing to read."""
    top = process_info(watched.master if watched.master is not None else watched.workers[0])
    kind = recognise(top.name, top.argv) if top is not None else None
    if (
        top is None
        or kind is None
        or kind.handed_on(watched.threaded, len(watched.listeners), len(watched.units)) is None
    ):
        return None
    return kind.handoff_read(top.argv, top.pid)


def handed_on(result: ObserveResult) -> bool:
    """Its threads may hand each connection they accept to another thread's queue (HAProxy's multi-queue, over one
    listener shared by its threads, unless the config read while it ran turns it off): a thread's accepts are then
    not the connections it serves."""
    kind = recognise(result.program, ())
    threads = (result.threaded, result.listeners, len(result.workers))
    return kind is not None and kind.handed_on(*threads, result.handoff) is not None


def handoff_line(result: ObserveResult) -> str | None:
    """The verdict's line on who serves what the threads accepted: handed on, as far as the config read says (or
    unless it turns it off, where it could not be read or was changed since the server started), or served by the
    thread that accepts, with the file."""
    read = result.handoff
    if not any(result.counts or ()):
        return None
    doubts = "".join(f"; {doubt}" for doubt in read.doubts) if read is not None else ""
    if handed_on(result):
        if read is None:
            config = UNREAD
        elif read.hands_on is None:  # its doubts beside what was read: a file changed since is why it is not known
            config, doubts = f"{UNREAD[:-1]}; {read.said}{doubts})", ""
        else:
            config = f"as {read.said}"
        return (
            "these are the threads' accepts, not necessarily the connections each serves: HAProxy hands each "
            f"accepted connection to the less loaded of two threads {config}, and {_served_by(result)}{doubts}"
            f"{reload_clause(result.reloaded, result.name)}"
        )
    if read is not None and read.hands_on is False and result.threaded:
        said = f"the thread that accepts a connection serves it: {read.said}, so none is handed on{doubts}"
        return said + reload_clause(result.reloaded, result.name)
    return None


def _served_by(result: ObserveResult) -> str:
    """Where the line says which thread serves each connection: the threads' epolls where they were looked at
    (thread_split.py, the next line), else not counted (the load read from the fd table is the process's)."""
    if split_known(result):
        return "which thread serves it is read from the threads' own epolls (the next line)"
    return "which thread serves it is not counted here (the load is per process: see the note)"
