"""What an attached server's workers' epolls watch of its listeners, read from their fd tables as the run starts:
the event loops of one process of threads (h2o's: `loops`), and which listeners each worker waits on (`watched`),
the accept queues the latency model must take (experiments/latency/model_queues.py).

A worker's fd table is not enough for the second: nginx 1.22 with `listen ... reuseport` and 4 workers has every
worker hold all 4 listening sockets (ss -ltnp: 5 holders of each), and each worker's epoll watch its own one."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import Any


def loops(pid: int, listeners: Collection[int]) -> tuple[int, int]:
    """(loops, epolls): the epoll instances in the process's fd table that watch one of `listeners`, an event loop
    each whatever its thread is doing now (h2o's num-threads, whose timer thread has none:
    ServerKind.loops_are_workers), and all its epoll instances. They differ where a loop has let go of the
    listener: h2o takes it out of every loop's epoll at its max-connections (2 of 4 loops watched it under 6
    connections at max-connections 6), and those loops still serve the connections they hold."""
    from ..probes.fd_table import FdTables

    try:
        files = FdTables().files(pid)
    except OSError:
        return 0, 0
    epolls = [f for f in files.values() if f.kind == "eventpoll"]
    return sum(1 for f in epolls if f.watching(listeners)), len(epolls)


def watched(pids: Sequence[int], listeners: Collection[int]) -> dict[str, Any]:
    """Evidence `listeners_watched` (read_watched), read again while a worker younger than STARTING_S watches none
    of the listeners another worker watches and its event loop has not started (looping): nginx's workers hold the
    listener from the fork and add it to their epoll as their event loop starts, and read at once (a worker
    watching none, 4 workers, nginx just started, load 7: 2 of 6 tries) they looked like an accept mutex's.
    A worker already asleep in an epoll wait is read as it is: nginx's accept_mutex on leaves the listener out of
    every epoll but the lock holder's, and waiting for the others made 'latency --attach' of one started 1 s before
    wait until its workers were 5 s old. Such young workers are named (`young`: their indices): an event loop may
    also wait in epoll before it adds a listener (an asyncio server's, starting its app), which /proc cannot tell
    from a lock's loser, and the model says so. Bounded by the workers' age; the event is a worker's epoll_ctl or
    its first epoll wait, which nothing signals, so /proc is read every POLL_S."""
    from .attached_start import POLL_S, STARTING_S, age_s

    while True:
        read = read_watched(pids, listeners)
        each = read.get("listeners_watched", {}).get("workers", [])
        if not any(each):
            return read  # none in an epoll (blocking accept, io_uring): nothing to wait for
        young = [i for i, w in enumerate(each) if not w and (age_s(pids[i]) or STARTING_S) < STARTING_S]
        if not [i for i in young if not looping(pids[i])]:
            if young:
                read["listeners_watched"]["young"] = young
            return read
        time.sleep(POLL_S)


def read_again(read: dict[str, Any], pids: Sequence[int], listeners: Collection[int]) -> dict[str, Any]:
    """`read` (watched's) with `at_end`, each worker's watched listeners read again, where it named young workers:
    a lock's loser still watches none as the run ends (or watches it, holding the lock then, while another does
    not), where an event loop that had yet to add the listener (an asyncio server starting its app) watches it by
    then. Read once, after the load: a few fd tables, where watched would have had to wait up to 5 s."""
    each = read.get("listeners_watched", {})
    if not each.get("young"):
        return read
    again = read_watched(pids, listeners).get("listeners_watched", {})
    if again.get("listeners") != each.get("listeners"):
        return read  # a table not read, or the listeners changed: the start's reading stands
    return {**read, "listeners_watched": {**each, "at_end": again["workers"]}}


def looping(pid: int) -> bool:
    """Whether the process's main thread sleeps in an epoll wait: its event loop has started, so its epolls that
    watch none of the listeners leave them out by choice (nginx's accept_mutex: ngx_event_process_init adds the
    listener to no epoll, ngx_trylock_accept_mutex to the lock holder's only), not for want of time. A worker still
    starting runs, or sleeps elsewhere (a read, a lock), and is waited for."""
    from ..probes.proc_waits import EPOLL_WAITS, thread_wait

    return thread_wait(pid, pid).call in EPOLL_WAITS


def read_watched(pids: Sequence[int], listeners: Collection[int]) -> dict[str, Any]:
    """Evidence `listeners_watched`: how many listeners take connections to the run's address, and for each worker
    the indices (into those, by inode) of the ones its epolls watch (`workers`; [] for a worker whose epolls watch
    none: it waits in accept, io_uring or poll, or has let go of the listener, as nginx's accept mutex has it) and
    of the ones it holds (`held`: a blocking accept waits on what it holds), and each worker's epolls one by one
    (`loops`: the ones of each epoll watching any): a process of threads has one fd table for them all, and
    HAProxy's `bind ... shards by-thread` (nbthread 2) has 2 listeners, each thread's epoll watching one. Nothing
    where a table could not be read (another user's process, not root; one gone)."""
    from ..probes.fd_table import FdTables

    order = {inode: index for index, inode in enumerate(sorted(listeners))}
    tables = FdTables()
    each: list[list[int]] = []
    held: list[list[int]] = []
    loops: list[list[list[int]]] = []
    for pid in pids:
        try:
            files = tables.files(pid)
        except OSError:
            return {}
        epolls = [{order[w.inode] for w in f.watching(listeners)} for f in files.values() if f.kind == "eventpoll"]
        each.append(sorted(set[int]().union(*epolls)))
        loops.append([sorted(epoll) for epoll in epolls if epoll])
        held.append(sorted({order[f.inode] for f in files.values() if f.inode in order and f.kind == "socket"}))
    return (
        {"listeners_watched": {"listeners": len(order), "workers": each, "held": held, "loops": loops}} if order else {}
    )
