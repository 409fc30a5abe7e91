"""Whether each worker of an attached server serves one connection at a time: it accepts one, serves it to its end and
only then accepts again (gunicorn's sync worker, Unicorn, uWSGI without threads or async, Apache prefork), so the
latency model may read the kernel's few empty accepts as one connection a wakeup (model_queues.one_per_wakeup) and
time each connection by the gap between a worker's accepts (model_check.served_between_accepts).

An event loop also takes one connection a turn of its loop with multi_accept off, and comes back to an empty accept
rarely, but it serves every connection it holds interleaved: Debian's nginx 1.22 by default (accept_mutex off,
multi_accept off; 2 workers attached, -n 2,000) had 3-31 empty accepts at 50 clients, under the 40 that taking all that
wait would make, and modelled one a wakeup its p99 was predicted 0.22 of the measured one (median of 5 runs), against
0.42 as 'all'; at 200 clients 0.29 against 0.41 (4 runs; load 7-15, Linux 6.18.44, 2 vCPUs). What each worker serves at
once is the serving kind's (ServerKind.connections_at_once), and where its config decides (gunicorn's worker class,
uWSGI's threads, Apache's MPM) a worker of one thread is taken to serve one at a time; a worker of several is a pool.

One thread is not enough where the config picks an event loop for it (gunicorn -k uvicorn.workers.UvicornWorker or
gevent, uWSGI's async modes): the connections the server held open at once, counted during the run (evidence
busy_waits' held, probes/held_connections.py), tell. PyPI's gunicorn 27 of UvicornWorker (uvloop; 3 workers, an app
awaiting 2 ms, -n 2,000 -c 12) came back empty from 8 accepts of 2,000 and read as one-thread workers was modelled one
connection a wakeup; it held 9 to 11 at the median of the reads that found any held, its sync workers 2 to 3 (the
reads overcount: held_connections.py). Beside three CPU hogs (load 8-11) its reads spread from 1 to 15, medians 4 to
7 (fewer held: likely more of the load's connections waiting in the accept queue, where they have no file; not
measured), its sync workers' 1 to 6, under 4 in nine reads of ten. So a quarter of the reads finding over twice the
workers held is an event loop (the upper quartile: UvicornWorker 11-12 calm, 8-10 loaded; sync 3). Re-predicted,
4 runs each, medians of p99 predicted/measured: UvicornWorker 0.32 one a wakeup, 0.72 'all'; sync 0.80 either way,
on its gaps; p50 unchanged (load 2-5, Linux 6.18.44, 2 vCPUs)."""

from __future__ import annotations

from collections.abc import Mapping

from ...probes.busy_waits import worker_threads
from .result import LatencyResult
from .serving_kind import serving_kind

MIN_HELD_READS = 5  # reads that found connections held, for their upper quartile to say more than the kind does
HELD_SLACK = 2  # an upper quartile over this many times the workers: each holds several (the reads overcount)


def one_at_a_time(result: LatencyResult) -> str | None:
    """Why each worker of the server serves one connection at a time ("gunicorn's workers, one thread each"), for the
    model's note; None where they do not (an event loop, or a server found holding many more connections at once
    than it has workers), or it is not known (a program this tool does not name, a file from before the program was
    recorded, a worker's threads not read)."""
    one, why = _reading(result)
    return why if one else None


def not_one_at_a_time(result: LatencyResult) -> str:
    """Why the workers are not read as serving one connection at a time ("nginx's workers are event loops, ..."),
    for the model's note where one_at_a_time is None."""
    return _reading(result)[1]


def _reading(result: LatencyResult) -> tuple[bool, str]:
    """Whether each worker serves one connection at a time, and why (or why not)."""
    kind = serving_kind(result)
    at_once = kind.connections_at_once if kind is not None else None
    if kind is None or at_once is None:
        return (
            False,
            "what each worker serves at once is not known (a program this tool does not name, or none recorded)",
        )
    if at_once == "many":
        return False, f"{kind.name}'s workers are event loops, each serving all it holds interleaved"
    threads = worker_threads(result.evidence)
    held = held_at_once(result.evidence)
    workers = len(threads) or result.server.workers
    if held is not None and held > HELD_SLACK * workers:
        # each worker holding several: an event loop, whatever its kind's default
        return False, (
            f"a quarter of the run's reads that found connections open found {held} or more at once, over twice its "
            f"{workers} workers: event loops, each serving all it holds interleaved"
        )
    seen = (
        ""
        if held is None
        else f"; three quarters of the run's reads that found connections open found {held} or fewer at once"
    )
    if at_once == "one":
        return True, f"{kind.name}'s workers serve one connection at a time{seen}"
    if not threads:
        return False, f"how many threads {kind.name}'s workers have was not read"
    if any(n != 1 for n in threads):
        return False, f"{kind.name}'s workers are pools of threads, serving several connections at once"
    return True, f"{kind.name}'s workers, one thread each, serve one connection at a time{seen}"


def held_at_once(evidence: Mapping[str, object]) -> int | None:
    """The upper quartile of the connections the server held accepted and open at once, over the reads that found
    any (those that found none were before or after the load, or between its connections), where MIN_HELD_READS or
    more did; None otherwise (a file from before it, a server in another network namespace, a run too short)."""
    read = evidence.get("busy_waits")
    held = read.get("held") if isinstance(read, Mapping) else None
    if not isinstance(held, Mapping):
        return None
    found = sorted(
        (int(n), reads)
        for n, reads in held.items()
        if isinstance(n, str) and n.isdigit() and int(n) > 0 and type(reads) is int
    )
    total = sum(reads for _, reads in found)
    if total < MIN_HELD_READS:
        return None
    upto = 0
    for n, reads in found:
        upto += reads
        if 4 * upto >= 3 * total:
            return n
    return None
