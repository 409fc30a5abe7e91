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
uWSGI's threads, Apache's MPM) a worker of one thread is taken to serve one at a time; a worker of several is a pool."""

from __future__ import annotations

from ...probes.busy_waits import worker_threads
from .result import LatencyResult
from .serving_kind import serving_kind


def one_at_a_time(result: LatencyResult) -> str | None:
    """Why each worker of the server serves one connection at a time ("gunicorn's workers, one thread each"), for the
    model's note; None where they do not (an event loop), or it is not known (a program this tool does not name, a
    file from before the program was recorded, a worker's threads not read)."""
    kind = serving_kind(result)
    at_once = kind.connections_at_once if kind is not None else None
    if kind is None or at_once not in ("one", "one a thread"):
        return None
    if at_once == "one":
        return f"{kind.name}'s workers serve one connection at a time"
    threads = worker_threads(result.evidence)
    if not threads or any(n != 1 for n in threads):
        return None  # a pool of threads (gthread, uWSGI's threads, Apache's event MPM), or not read
    return f"{kind.name}'s workers, one thread each, serve one connection at a time"
