"""The queue discipline the latency model takes for a server attached by pid: the one its listeners make, read from
which listeners each worker's epolls watched as the run started (evidence `listeners_watched`: servers/
attached_epolls.py), not the attached kind's one mode, whose metadata knows no mechanism.

`latency --attach` of nginx 1.22 with `listen ... reuseport` (4 workers, each epoll watching a socket of its own)
was modelled as one queue shared by all ('shared (all)'), while the same run's evidence read '4 accept queues (one
per socket)': a connection waits at the worker the kernel's hash picks, idle or not, which one queue does not
model. Where the reading cannot say (not read, a worker watching none, workers watching different sets), one shared
queue is taken, and the note says so and why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...analysis.queueing import Discipline
from ...core.spec import ATTACHED_KIND
from .model_one_at_a_time import not_one_at_a_time, one_at_a_time
from .model_servers import as_served
from .result import LatencyResult

SHARED_TAKEN = "taken as one shared queue, the model's default"
# what the listeners' reading cannot say of a hash: `accept-order serve -m reuseport-cpu -w 2` attached served
# 1500/1500, each connection at the listener of the CPU it came from, a classic BPF program's choice
STEERED = (
    "taken so: a BPF program on the group or SO_INCOMING_CPU marks would steer it instead, and /proc shows neither"
)


@dataclass(frozen=True)
class Queues:
    """The discipline read of an attached server's listeners, and the sentence that says how it was read."""

    discipline: Discipline
    said: str
    assumed: bool = False  # the reading did not settle it: `said` says why


def _indices(value: object, listeners: int) -> list[list[int]] | None:
    """Each worker's listeners, indices below `listeners`; None where the file holds anything else."""
    if not isinstance(value, list) or not all(isinstance(w, list) for w in value):
        return None
    if not all(type(i) is int and 0 <= i < listeners for w in value for i in w):
        return None
    return value


def _reading(evidence: Mapping[str, Any], workers: int) -> tuple[int, list[list[int]], list[list[int]], str] | None:
    """(listeners, each server's watched, each one's held: [] each where not read, what the servers are)."""
    read = evidence.get("listeners_watched")
    if not isinstance(read, Mapping) or type(listeners := read.get("listeners")) is not int or listeners < 1:
        return None
    each, held = _indices(read.get("workers"), listeners), _indices(read.get("held"), listeners)
    if each is None:
        return None
    if len(each) == workers:
        return listeners, each, held if held is not None and len(held) == workers else [[] for _ in each], "workers"
    # a process's threads counted as its servers (model_servers.py) share one fd table: each thread's event loop is
    # an epoll of its own (HAProxy's nbthread, h2o's loops), read one by one where they pair with the threads
    loops = read.get("loops")
    if len(each) == 1 and isinstance(loops, list) and len(loops) == 1:
        own = _indices(loops[0], listeners)
        if own is not None and len(own) == workers:
            return listeners, own, [[] for _ in own], "threads"
    return None


def _unread(evidence: Mapping[str, Any], workers: int) -> Queues:
    """No reading of the workers' epolls to take (a file from before it, another user's process, a process whose
    epolls do not pair with its threads): one listener is one queue whoever waits on it; several are not known to
    be anyone's own."""
    start = evidence.get("listeners", {}).get("start") if isinstance(evidence.get("listeners"), Mapping) else None
    count = len(start) if isinstance(start, Sequence) else 0
    if count == 1:
        return Queues("shared", "one listener takes its connections: one accept queue, shared by whoever waits on it")
    which = f"{count} listeners" if count else "listeners"
    read = evidence.get("listeners_watched")
    if isinstance(read, Mapping) and "loops" in read and isinstance(evidence.get("threads"), Mapping):
        why = (
            f"which of its {which} each of its {workers} threads waits on is not known: threads share one fd table, "
            "and the epolls watching them as the run started were not as many as its threads"
        )
    else:
        why = f"which of its {which} each worker waits on was not read (its workers' epolls, as the run started)"
    return Queues("shared", f"{why}: {SHARED_TAKEN}", assumed=True)


def _young(evidence: Mapping[str, Any], workers: int) -> int:
    """How many workers that watched none were younger than 5 s, asleep in an epoll wait, as the reading was taken
    (servers/attached_epolls.watched: `young`); 0 where none (or a file from before it)."""
    young = evidence.get("listeners_watched", {}).get("young")
    if not isinstance(young, list) or not all(type(i) is int and 0 <= i < workers for i in young):
        return 0
    return len(set(young))


def _at_end(evidence: Mapping[str, Any], workers: int, listeners: int) -> list[list[int]] | None:
    """Each worker's watched listeners read again as the run ended (attached_epolls.read_again: where some were
    young); None where not read (none young, a file from before it) or not one a worker."""
    again = evidence.get("listeners_watched", {}).get("at_end")
    each = _indices(again, listeners)
    return each if each is not None and len(each) == workers else None


def _disjoint(each: Sequence[Sequence[int]], listeners: int) -> bool:
    """Each worker waits on listeners of its own, as many each, and every listener has its worker."""
    flat = [i for w in each for i in w]
    return len(set(flat)) == len(flat) == listeners and len({len(w) for w in each}) == 1


def attached_queues(result: LatencyResult) -> Queues | None:
    """The discipline of an attached server's accept queues; None for any other server (its mode says it)."""
    server = result.server
    if server.kind != ATTACHED_KIND:
        return None
    reading = _reading(result.evidence, server.workers)
    if reading is None:
        return _unread(result.evidence, server.workers)
    listeners, each, held, who = reading
    workers = len(each)
    young, again = _young(result.evidence, workers), _at_end(result.evidence, workers, listeners)
    late = ""
    if listeners == 1 and young and again is not None and all(again) and not all(each):
        # the young ones watched the listener by the end: event loops that had yet to add it, not a lock's losers
        late = f" (read again as the run ended: the {young} that watched none as it started, under 5 s old, did then)"
        each, young = again, 0
    watching = sum(1 for w in each if w)
    if listeners == 1 and 0 < watching < workers and all(held):  # an accept mutex, as inspect reads it
        # nginx's accept_mutex on served 2000/0/0/0 (-c 8) and 0/3000/0/0 (-c 32) here, the holder's, which
        # `shared` spread over its 4 workers; modelled as the tool's own accept-mutex modes are (LOCK_HOLDER)
        settled = young and again is not None  # read again at the end, some still watching none: the lock's
        return Queues(
            "holder",
            f"{watching} of its {workers} {who}' epolls watched its one listener as the run started, the others "
            "holding it: an accept mutex's sign (nginx's accept_mutex on), whose holder takes the connections, the "
            "others the lock when they try it while the holder serves (as they finish serving, or every "
            "accept_mutex_delay, taken as nginx's default 500 ms: its config is not read), as this tool models its "
            "own accept-mutex modes"
            + (
                f"; {young} of those others {'was' if young == 1 else 'were'} under 5 s old, waiting in epoll, and "
                f"{(losers := sum(1 for w in again or [] if not w))} of its {workers} still watched none as the run "
                f"ended: {'a lock loser' if losers == 1 else 'lock losers'}, not event loops yet to add the listener"
                if settled
                else f"; {young} of those others {'was' if young == 1 else 'were'} under 5 s old, waiting in epoll: "
                "so would be workers whose event loops had yet to add the listener (an asyncio server starting its "
                "app), which /proc does not tell"
                if young
                else ""
            ),
            assumed=bool(young) and not settled,
        )
    if listeners == 1 and not any(each) and not any(held) and _held_read(result.evidence, workers):
        return _master_hands_on(result, workers, who)
    if listeners == 1 or workers == 1:  # one queue, or one server: whoever waits where, the model is one queue
        if workers == 1:
            return Queues("shared", "its one worker takes every connection: one queue, one server")
        return Queues("shared", f"its {workers} {who} take from its one listener: one accept queue, shared{late}")
    idle = sum(1 for w in each if not w)
    # a worker whose epolls watch none waits on what it holds where it holds listeners of its own (a blocking
    # accept on its SO_REUSEPORT socket); nginx's workers hold every socket, so holding alone says nothing there
    own = [w or h for w, h in zip(each, held, strict=True)]
    if all(own) and _disjoint(own, listeners):
        mine = "a listener of its own" if listeners == workers else "listeners of its own"
        how = f" ({idle} in no epoll: holding only {'it' if listeners == workers else 'them'})" if idle else ""
        return Queues(
            "hash",
            f"each of its {workers} {who} waits on {mine}{how} ({listeners} accept queues, SO_REUSEPORT): the "
            f"kernel puts a connection in one by its hash, its {who[:-1]} idle or not ({STEERED})",
        )
    if idle:
        return Queues(
            "shared",
            f"{idle} of its {workers} {who}' epolls watched none of its {listeners} listeners as the run started "
            "(they wait in accept, poll or io_uring, or let go of the listeners, as nginx's accept mutex has them): "
            f"which queue each takes from is not known, {SHARED_TAKEN}",
            assumed=True,
        )
    if all(w == each[0] for w in each) and len(each[0]) == listeners:
        return Queues(
            "shared", f"its {workers} {who} all wait on each of its {listeners} listeners: as one shared queue"
        )
    if all(w == each[0] for w in each):  # the others' connections wait for no attached worker (another program's)
        return Queues(
            "shared",
            f"its {workers} {who} all wait on the same {len(each[0])} of its {listeners} listeners, and none on the "
            f"other {listeners - len(each[0])}, whose connections they do not take: {SHARED_TAKEN}",
            assumed=True,
        )
    sizes = "/".join(str(len(w)) for w in each)
    return Queues(
        "shared",
        f"its {who} wait on different sets of its {listeners} listeners ({sizes} each), which no discipline of "
        f"the model's is: {SHARED_TAKEN}",
        assumed=True,
    )


def _held_read(evidence: Mapping[str, Any], workers: int) -> bool:
    """Whether the listeners each worker holds were read (evidence listeners_watched `held`, one list a worker)."""
    held = evidence.get("listeners_watched", {}).get("held")
    return isinstance(held, list) and len(held) == workers


def _master_hands_on(result: LatencyResult, workers: int, who: str) -> Queues:
    """None of the workers holds the one listener: the attached master does, accepts every connection and hands each
    to a worker over a Unix socket (Node's cluster under SCHED_RR, its default off Windows: lib/internal/cluster/
    round_robin_handle.js gives the next to the first worker whose last handoff it acknowledged, which under load is
    each in turn, idle or not). A Node cluster of 3 attached read 'its 3 workers take from its one listener: one
    accept queue, shared' and was modelled so, where the kernel counted 2,000 accepts by its primary and none by
    them."""
    master = result.server.attach[0] if result.server.attach else None
    kernel = result.evidence.get("accept_counts")
    took = kernel.get("master_accepted") if isinstance(kernel, Mapping) and kernel.get("available") is True else None
    # the workers' own, which a worker that took the listener after the run's start could have made: counted, not
    # taken to be none (the sentence said 'none by them' whatever the counts held)
    counts = kernel.get("counts") if isinstance(kernel, Mapping) else None
    theirs = sum(n for n in counts.values() if type(n) is int) if isinstance(counts, Mapping) else 0
    counted = (
        f"the kernel counted {took:,} accepts by it and {f'{theirs:,}' if theirs else 'none'} by them"
        if type(took) is int and took > 0
        else "its own accepts were not counted (the kernel's, with bpftrace)"
    )
    one = who[:-1]
    return Queues(
        "round-robin",
        f"none of its {workers} {who} holds its one listener: its master{f' (pid {master})' if master else ''} does, "
        f"accepts {'connections' if theirs else 'every connection'} ({counted}) and hands each to a {one} over a Unix "
        f"socket, as Node's cluster does under SCHED_RR, its default (and this tool's fd-pass): modelled so, "
        f"connection k to {one} k mod {workers}, idle or not (Node hands the next to the first {one} whose last "
        "handoff came back: under load, each in turn)",
        assumed=not (type(took) is int and took > 0) or theirs > 0,
    )


MIN_ACCEPTS = 20  # accepts the kernel must have counted for one a wakeup to be read


def one_per_wakeup(result: LatencyResult) -> int | None:
    """How many accepts the kernel counted of an attached server's workers where they take one connection a wakeup
    (the model's batch 1, not 'all'), at least MIN_ACCEPTS (evidence accept_counts: probes/accept_program.py): none
    came back empty (EAGAIN), or, where each worker serves one connection at a time (model_one_at_a_time.py), fewer
    than accepting until EAGAIN would have made (taking_all_floor). nginx 1.22
    attached, 2 workers, accept_mutex on: multi_accept off 0 empty of 2,000 accepts at 2 and at 8 clients, on 1,204
    and 510 of 2,000; accept_mutex off, multi_accept off: 38 of 2,000 at 2 clients, 0 at 8. None where not known: not
    counted, too few, some empty at an event loop or a server not known to serve one at a time, or as many empty as
    a server accepting until EAGAIN would make (a herd's losers make some too: not told apart)."""
    accepted = kernel_accepted(result)
    came_back = empty_accepts(result)
    if accepted is None or not came_back:
        return accepted
    # a few empty: one a wakeup only where a worker serves one connection at a time; an event loop taking one a turn
    # serves them all interleaved, and was modelled better as taking all (model_one_at_a_time.py)
    floor = taking_all_floor(result, accepted) if one_at_a_time(result) else None
    return accepted if floor is not None and came_back < floor else None


def kernel_accepted(result: LatencyResult) -> int | None:
    """The accepts the kernel counted of an attached server's workers where it counted the empty ones too, at least
    MIN_ACCEPTS; None otherwise."""
    kernel = result.evidence.get("accept_counts")
    if result.server.kind != ATTACHED_KIND or not isinstance(kernel, Mapping) or kernel.get("available") is not True:
        return None
    counts, empty = kernel.get("counts"), kernel.get("empty")
    if not isinstance(counts, Mapping) or not isinstance(empty, Mapping):
        return None
    accepted = sum(n for n in counts.values() if type(n) is int)
    return accepted if accepted >= MIN_ACCEPTS else None


def empty_accepts(result: LatencyResult) -> int:
    """The accepts the kernel counted come back empty (EAGAIN), all workers together (0: none, or not counted)."""
    kernel = result.evidence.get("accept_counts")
    empty = kernel.get("empty") if isinstance(kernel, Mapping) else None
    return sum(n for n in empty.values() if type(n) is int) if isinstance(empty, Mapping) else 0


def taking_all_floor(result: LatencyResult, accepted: int) -> int | None:
    """The fewest empty accepts a server that accepts until EAGAIN at each wakeup makes of `accepted` under a closed
    loop: each wakeup ends with one, and takes at most the run's clients (no more connections exist at once), so at
    least accepted / clients wakeups. None for an open loop (any number may wait). PyPI's gunicorn 27, 3 sync
    workers, attached at 12 clients (latency -n 2000): 3 empty of 2,000 accepts where taking all would have made 167
    or more; a sync worker accepts one, serves it, and accepts again while one waits (gunicorn/workers/sync.py), and
    was modelled 'shared (all)', its p99 1.3-2.2 times the measured one. Ten runs of it (an app sleeping 2 ms, -n 300
    and -n 2000, five each; load 2.7-3.6, Linux 6.18.44, 2 vCPUs), medians of predicted/measured, 'all' then one a
    wakeup: p50 1.07 and 1.04, p99 1.70 and 0.72 (|ln| 0.53 and 0.32). The p99 left under is the service time's
    spread, which the model's one busy-time mean leaves out (the kernel's gaps between a worker's accepts: CV 1.28 at
    load 5.7)."""
    if result.load.rate is not None or result.load.concurrency < 1:
        return None
    return -(-accepted // result.load.concurrency)


ALL_TAKEN = " (a wakeup taking all that wait: how many it takes is the server's own setting, which /proc does not show)"


def _few_empty_at_many(result: LatencyResult, came_back: int) -> str | None:
    """Where the kernel counted fewer empty accepts than taking all makes but the workers were not read as serving
    one connection at a time, so the model took all: what was counted, and why (e775dfce's nginx said only that
    /proc does not show how many a wakeup takes, beside 3-31 empty of 2,000 that said one a turn of its loop)."""
    accepted = kernel_accepted(result)
    floor = taking_all_floor(result, accepted) if accepted and came_back else None
    if accepted is None or floor is None or came_back >= floor:
        return None
    return (
        f" (a wakeup taking all that wait: {came_back:,} of the {accepted:,} accepts the kernel counted came back "
        f"empty, fewer than the {floor:,} that accepting until none is left makes, but {not_one_at_a_time(result)})"
    )


def queues_text(result: LatencyResult) -> str | None:
    """'Model: queue hash: each of its 4 workers waits on ...' beside an attached server's model of one request a
    connection (a kept one is pinned to its worker: model_check.held_connections); None otherwise."""
    queues = attached_queues(as_served(result) or result)  # a process's serving threads, as the model counted them
    if queues is None or result.model is None or result.model.discipline == "pinned":
        return None
    model = result.model
    one = one_per_wakeup(result) if model.batch == 1 else None
    came_back = empty_accepts(result)
    taken = (
        _few_empty_at_many(result, came_back) or ALL_TAKEN
        if model.discipline in ("shared", "favoured", "holder") and model.batch == 0
        else f" (one connection a wakeup: none of the {one:,} accepts the kernel counted came back empty)"
        if one and not came_back
        else f" (one connection a wakeup, or a few: {one_at_a_time(result)}, and {came_back:,} of the {one:,} accepts "
        f"the kernel counted came back empty, where accepting until none is left would end every wakeup with one, "
        f"{taking_all_floor(result, one) or 0:,} or more with at most {result.load.concurrency} waiting)"
        if one
        else ""
    )
    return f"Model: queue {model.queue}{' assumed' if queues.assumed else ''}: {queues.said}{taken}."
