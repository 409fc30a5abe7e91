"""How many servers the queueing model counts for a run: its workers, or, for a server attached by pid that is one
process serving with its threads (evidence `threads`: servers/attached.py), those threads where each accepts and
serves (HAProxy's nbthread: its kind's threads_are_workers), the process alone where one of its threads runs every
request (Node's event loop: serves_on_one_thread), its event loops where each of those runs on a thread of its own
beside threads that serve none (h2o: loops_are_workers), or none where that cannot be known (a kind whose
threads are not its workers, or a program this tool does not know).

`latency --attach` of HAProxy with `nbthread 2` was modelled as one worker, its p99 25x the prediction: two
threads each take connections (the less loaded of two) and serve them at once, which a single queue with one
server does not. A process whose threads are not one worker each (Go's runtime, a Ruby pool behind its lock)
serves with as many at once as its runtime lets, which /proc does not say: the model is not judged then."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...core.kinds import ServerKind
from ...probes.busy_waits import worker_threads
from ...servers.registry import recognise
from .result import LatencyResult
from .serving_kind import serving_kind


@dataclass(frozen=True)
class Servers:
    """The servers the model counts (None: it cannot judge the run, for `why`), and whose threads they are."""

    count: int | None
    threads_of: str = ""  # `pid 3597 (haproxy)` where the count is a process's threads
    why: str = ""
    one_loop: bool = False  # a process of several threads, one of which runs every request (Node's event loop)
    loops: bool = False  # the count is the process's event loops, a thread each (h2o), not its every thread


def _threads(evidence: Mapping[str, Any]) -> Mapping[str, Any] | None:
    threads = evidence.get("threads")
    if not isinstance(threads, Mapping) or not isinstance(threads.get("count"), int) or threads["count"] < 2:
        return None
    return threads


def model_servers(result: LatencyResult) -> Servers:
    """The servers a queueing model of `result` has: its workers, an attached process's serving threads, or
    none (Servers.why says why not)."""
    threads = _threads(result.evidence)
    if threads is None:
        return Servers(result.server.workers)
    program, count = str(threads.get("program", "")), int(threads["count"])
    who = f"pid {threads.get('pid', '?')}" + (f" ({program})" if program else "")
    kind = recognise(program, [str(a) for a in threads.get("argv", [])])
    if kind is None:  # the registry takes an unknown process per thread for its notes, but a helper thread (a
        # logger, a JVM's collector) serves nothing: counted as a server, it halves a one-thread server's queue
        return Servers(
            None,
            who,
            f"{who} serves with {count} threads, and this tool does not know the program: how many of them accept "
            "and serve at once, which /proc does not say, is its own",
        )
    if kind.loops_are_workers:
        return _loops(result, threads, who, count)
    if kind.serves_on_one_thread:  # Node's 7 threads run JavaScript on one: one server, as it was before threads
        return Servers(result.server.workers, who, one_loop=True)
    if not kind.threads_are_workers:
        return Servers(
            None,
            who,
            f"{who} serves with {count} threads that are not one worker each (a pool, a runtime's threads): how "
            "many serve at once is the runtime's, which /proc does not say",
        )
    if result.load.keeps_connections:
        # each kept connection stays with the thread that took it, and no count says which thread that was
        return Servers(
            None,
            who,
            f"{who} serves with {count} threads, and which of them holds each kept connection is not known "
            "(threads share one fd table), so no thread's queue can be modelled",
        )
    return Servers(count, who)


def _loops(result: LatencyResult, threads: Mapping[str, Any], who: str, count: int) -> Servers:
    """A kind whose serving threads each run an event loop of their own (h2o): those loops, counted as the run
    started by the epolls watching the listener, not its every thread (h2o's timer thread serves none)."""
    loops, epolls = threads.get("loops"), threads.get("epolls")
    if not isinstance(loops, int):  # a file from before loops were counted
        return Servers(
            None,
            who,
            f"{who} serves with {count} threads, some of which run no event loop, and its loops were not counted",
        )
    if isinstance(epolls, int) and epolls > loops:  # h2o at its max-connections: loops that let go of the listener
        return Servers(
            None,
            who,
            f"{loops} of {who}'s {epolls} epolls watched the listener as the run started: an event loop lets go of "
            "it while the server is at its connection limit (h2o's max-connections) and still serves the "
            "connections it holds, so how many loops serve is not known",
        )
    if loops < 1:
        return Servers(
            None, who, f"{who} serves with {count} threads, none of which ran an event loop watching the listener"
        )
    if result.load.keeps_connections and loops > 1:
        return Servers(
            None,
            who,
            f"{who} serves with {loops} event loops, and which of them holds each kept connection is not known "
            "(threads share one fd table), so no loop's queue can be modelled",
        )
    return Servers(loops, who, loops=True)


def as_served(result: LatencyResult) -> LatencyResult | None:
    """`result` with as many workers as the model counts servers (an attached process's serving threads), or None
    where it cannot judge."""
    count = model_servers(result).count
    if count is None or count == result.server.workers:
        return None if count is None else result
    return replace(result, server=result.server.replace(workers=count))


def servers_text(result: LatencyResult) -> str | None:
    """What a report says beside the model of a threaded process: that its threads are the servers counted, or
    why it was not judged; beside workers that are processes of several threads, that each is counted one server
    (pooled_text); None for any other run."""
    servers = model_servers(result)
    if not servers.threads_of:
        return pooled_text(result)
    if servers.count is None:
        return f"Model: not judged: {servers.why}."
    if servers.loops:
        return (
            f"Model: {servers.threads_of}'s {servers.count} event loops are the servers counted (a thread each, "
            "accepting and serving; its other threads serve none)."
        )
    if servers.one_loop:
        return f"Model: {servers.threads_of} runs every request on one of its threads (its event loop): one server."
    return f"Model: {servers.threads_of}'s {servers.count} threads are the servers counted (each accepts and serves)."


def _attached_pool(counted: str, workers: int, whose: str, kind: ServerKind) -> str:
    """pooled_text for an attached server whose program has a pool of threads by a setting of its own: said by that
    setting, and whether its threads compute one at a time (an attached gunicorn gthread's 2 workers of 1-5 threads
    read "under one lock (Ruby's, CPython's) ... threads that compute at once (C's, Go's)", of a server that is
    neither Ruby nor Go)."""
    each = " each" if workers > 1 else ""
    if kind.one_lock:
        how = (
            f"right where its handler computes, as {kind.one_lock} lets one of them compute at a time; a handler that "
            "waits (a database, an upstream) overlaps its requests"
        )
    else:
        how = "its threads compute at once, and overlap its requests, as does a handler that waits (a database)"
    return (
        f"Model: {counted}, one request at a time{each}, though {whose} ({kind.pool_setting}): {how}, which this "
        "model does not: it then predicts a slower server than there is."
    )


def pooled_text(result: LatencyResult) -> str | None:
    """Beside a model of workers that are processes of several threads each (evidence busy_waits' `threads`: Puma's
    pool, gunicorn's gthread), that it counts each worker one server, one request at a time: true where one lock lets
    one thread compute at a time (Ruby's, CPython's) and the handler computes, not where it waits (a database), whose
    requests a pool overlaps. 'latency --server puma -w 3' was modelled as 3 servers and said nothing of its pools of
    up to 5 threads. A kind one of whose threads runs every request (Node's event loop: serves_on_one_thread) has
    no pool: 'latency --server node -w 3' read that its workers' 7 threads were a pool that overlaps a handler's
    waits, under one lock (Ruby's, CPython's). A kind whose workers are threads (HAProxy's, h2o's: the tool's workers
    are their tids, each read in a process of 2-3 threads) is counted by its threads already: 'latency --server
    haproxy' read that its 2 workers were each a process of 2 threads, a pool. Threads that compute at once (Apache
    event's C, Caddy's Go) are said to overlap requests too. None where the workers are one thread each or were not
    read."""
    threads = worker_threads(result.evidence)
    if len(threads) != result.server.workers or max(threads, default=1) < 2:
        return None
    low, high = min(threads), max(threads)
    each = f"{low}" if low == high else f"{low}-{high}"
    kind = serving_kind(result)
    if kind is not None and (kind.threads_are_workers or kind.loops_are_workers):
        return None
    workers = result.server.workers
    counted = (
        f"its {workers} workers are the servers counted" if workers > 1 else "its one worker is the server counted"
    )
    if kind is not None and kind.serves_on_one_thread:
        return (
            f"Model: {counted}, one each: {'each' if workers > 1 else 'it'} is a process of {each} threads, one of "
            "which runs every request (its event loop), the others none."
        )
    whose = f"{'each' if workers > 1 else 'it'} is a process of {each} threads"
    if result.server.attach and kind is not None and kind.pool_setting:  # in the attached server's own terms
        return _attached_pool(counted, workers, whose, kind)
    # the pool the tool's own config gave the server it launched (its kind says it; an attached one's is not read)
    launched = kind.launched_pool if kind is not None else None
    pool = f" ({launched})" if launched else ""
    return (
        f"Model: {counted}, one request at a time{' each' if workers > 1 else ''}, though {whose}{pool}: right "
        "where they compute one at a time under one lock (Ruby's, CPython's); threads "
        "that compute at once (C's, Go's), or a handler that waits (a database, an upstream), overlap its requests, "
        "which this model does not: it then predicts a slower server than there is."
    )
