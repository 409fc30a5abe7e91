"""The `holder` discipline of analysis/queueing.py: an accept lock's holder takes the connections, the others the lock
only when they try it while it is free (nginx's accept_mutex, and this tool's accept-mutex mode, which rebuilds it).

nginx 1.22, ngx_process_events_and_timers (ngx_event.c): each turn of a worker's loop tries the lock first
(ngx_trylock_accept_mutex). The worker that gets it keeps the listener in its epoll and holds the lock through its
epoll_wait and its accepts, then unlocks (ngx_shmtx_unlock) and only then serves what the wait returned (the posted
events). A worker that finds the lock taken takes the listener out of its epoll and waits at most accept_mutex_delay
(500 ms) before its next turn, or less where an event of its own connections wakes it. So the lock is free exactly
while its holder serves: a worker that tries then takes it, whether or not a connection waits, and the old holder,
back from serving, finds it taken (the new holder waits in epoll, holding it) and sleeps for the delay.

Here, so: a worker's turn comes when it finishes serving and, for one without the lock, when its delay is up. It takes
the lock if it holds it already or the holder is serving; else it sleeps `delay`. The holder, idle, takes an arrival at
once; one that comes while it serves waits in the one queue. A connection taken is held for the first part of its
service, the lock with it: the holder's accept and its turn of the loop to read the request the client sends after the
handshake. That part is in the service time the model is given (nginx's, its workers' CPU per connection, counts the
accept; the built-in workers time theirs from after it, so their model's connections run a mean hold short: left so),
so the hold is counted in it, not added to it: a connection's service less the mean hold, then the hold drawn at
random, mean `hold` (at most the service): the same mean, each different, so two workers' turns drift against each
other; one that comes back inside the other's hold drops out until its delay is up. (Added to it, 5d66529, every
connection took 50 µs more than its workers' CPU, and with no work, 80-100 µs a connection, the p50s read 1.5-3
times the measured; drawn as a part of a service of fixed length, one client's connections keep the phase a sleeping
worker wakes at for the whole run, so whether it ever takes the lock hangs on the delay's remainder over the service.)
With no hold two busy workers always find the lock free, and take turns for ever.

Debian's nginx 1.22 (accept-order's own, --mode accept-mutex: accept_mutex on, multi_accept off), 2 workers, 3,000
connections, 3 runs of each (load 2.6-3.4, Linux 6.18, 2 vCPUs): the most one worker served (its replies name it)
and the p50/p99 (ms), medians of the 3 runs; then the model's of each run's own figures (median of 5 seeds): before
5d66529 (the lock handed on only for a waiting connection), 5d66529's (a 50 µs hold added to the service), now (a
50 µs hold within it):
                        measured           before         hold added        hold within
  1 ms, 1 client:    1,698 1.22  6.12   3,000 1.65 1.65   1,516 1.69 1.88   1,517 1.64 1.83
        2 clients:   1,818 2.08  6.95   1,506 2.37 2.37   1,581 2.44 2.69   1,616 2.34 2.59
        4 clients:   1,890 4.16  11.9   1,508 2.53 2.53   1,619 5.21 5.55   1,537 5.02 5.35
        8 clients:   1,753 7.45  25.3   1,505 7.91 7.91   1,555 8.47 16.5   1,596 9.68 16.2
  no work, 1 client: 3,000 0.09  0.36   3,000 0.07 0.07   1,760 0.11 0.30   2,246 0.06 0.25
        2 clients:   3,000 0.18  1.11   1,572 0.19 0.19   1,951 0.27 0.52   1,925 0.17 0.42
        4 clients:   3,000 0.26  2.60   1,637 0.15 0.15   1,876 0.47 0.79   2,018 0.27 0.59
        8 clients:   3,000 0.32  5.65   1,622 0.33 0.34   2,043 1.04 1.46   2,810 0.64 1.06
Over the 24 runs, the mean |ln(predicted/measured)| of the p50s and of the p99s, and the mean distance of the most
one worker served: before 0.29, 1.70, 811; the hold added 0.40, 0.85, 638; within 0.24, 0.97, 476 (100 µs within:
0.28, 0.83, 156, but 8 clients with 1 ms of work then read 15.7 ms, one worker serving, against 7.45). HOLD_US is
fitted, not measured. The p99s measured are the machine's more than the queue's (other processes used 18-77% of its
CPUs; the model's service is each run's mean CPU per connection). With no work each run took 0.2-0.9 s, about the
delay, so the other worker tried the lock once or twice, and nginx kept all 3,000 with one worker in 12 of 12.

ngx_accept_disabled (a worker with more than 7/8 of worker_connections open skips its turns at the lock) is left
out: it takes hundreds of connections open in one worker (672 of Debian's 768), beyond a closed loop's clients. Tried
where it could act: Debian's nginx attached, 2 workers, accept_mutex on, 1,000 clients of one request each (-n 6000,
backlog 4096; load 3-4), worker_connections 1,050-1,100 (a worker holding 919-963 skips) against 8,192 (never), six
runs each: the busier worker served 4,564-5,875 (median 5,103) against 4,548-6,000 (median 5,728, three runs all
6,000). The lean (fewer to one worker where it may skip) is as large in 23% of the runs' random relabellings
(Mann-Whitney's U, 10 of 36, exact permutation test): not shown at six runs each, so not modelled.
`batch`: as queueing.py's (multi_accept on: the holder accepts the whole queue, which stays its own)."""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

ARRIVE, SERVE, DONE, WAKE = 0, 1, 2, 3  # the events, in this order where they coincide

# The holder's mean hold on each connection it takes (µs, the latency model's unit), out of its service: its accept
# and one more turn of its loop, the lock held, to read the request. Fitted, not measured (5d66529: of 20, 50, 100
# and 200 µs, added to the service, the one whose p50s with work were nearest; within it, the nearest of 50, 100 and
# 200 over the 24 runs above). The model report says so beside every holder model (model_report.HOLDER_NOTE)
HOLD_US = 50.0


class Arriving(Protocol):
    """queueing.Arrivals, as read here (queueing.py imports this module: not the other way round)."""

    @property
    def loop(self) -> str: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def rate(self) -> float: ...
    @property
    def start(self) -> float: ...


def simulate_holder(
    workers: int,
    arrivals: Arriving,
    draws: Sequence[Callable[[], float]],
    requests: int,
    batch: int,
    rng: random.Random,
    warmup: float,
    delay: float,
    hold: float = 0.0,
) -> tuple[list[float], list[int]]:
    """The `holder` discipline's run (queueing.simulate's arguments, each worker's service a draw; `delay`: the retry
    delay, `hold`: the lock held on each connection taken, both in the service's unit): the measured sojourns, sorted,
    and the requests each worker started."""
    more = batch - 1 if batch > 0 else requests  # queued connections the holder takes beside the one it serves
    events: list[tuple[float, int, int, float]] = []  # (time, event, worker, arrival time)
    busy, holding, served = [False] * workers, [False] * workers, [0] * workers
    own: list[deque[float]] = [deque() for _ in range(workers)]
    shared: deque[float] = deque()
    rest = [0.0] * workers  # what is left of the service of the connection each worker holds the lock on
    holder = 0
    wake_at = [rng.uniform(0, delay) if w else -1.0 for w in range(workers)]  # the others' delays, as found
    for w in range(1, workers):
        heapq.heappush(events, (wake_at[w], WAKE, w, 0.0))
    warm_at = max(1, int(requests * warmup)) if warmup > 0 else 0
    issued, out = 0, list[float]()
    closed = arrivals.loop == "closed"

    def arrive(now: float) -> None:
        nonlocal issued
        if issued < requests:
            heapq.heappush(events, (now, ARRIVE, -1, now if issued >= warm_at else -1.0 - now))
            issued += 1

    def start(w: int, now: float, req: float, accepted: bool) -> None:
        """w starts on a request: one it accepted now is held first (the lock with it), one of its own is served."""
        busy[w], holding[w], wake_at[w] = True, accepted and hold > 0, -1.0
        served[w] += 1
        if holding[w]:  # the hold is the first part of the connection's service (its accept), not more of it
            whole = draws[w]()
            mean = min(hold, whole)  # the service less its mean hold, then the hold drawn: the same mean, at random
            rest[w] = whole - mean
            heapq.heappush(events, (now + (rng.expovariate(1 / mean) if mean > 0 else 0.0), SERVE, w, req))
        else:
            heapq.heappush(events, (now + draws[w](), DONE, w, req))

    def turn(w: int, now: float) -> None:
        """w at the top of its loop, serving nothing: its try at the lock, free while the holder serves."""
        nonlocal holder
        if w != holder and busy[holder] and not holding[holder]:
            holder = w  # it adds the listener to its epoll; the old holder finds the lock taken when it is back
        busy[w] = False
        if w == holder:
            if shared:
                first = shared.popleft()
                while shared and len(own[w]) < more:
                    own[w].append(shared.popleft())
                start(w, now, first, True)
        elif issued < requests or shared:  # the lock taken: sleep for the delay, then try again
            wake_at[w] = now + delay
            heapq.heappush(events, (wake_at[w], WAKE, w, 0.0))

    if closed:
        spread = arrivals.start / max(1, arrivals.concurrency - 1) if arrivals.concurrency > 1 else 0.0
        for k in range(min(arrivals.concurrency, requests)):
            arrive(k * spread)
    else:
        arrive(rng.expovariate(arrivals.rate) if arrivals.loop == "poisson" else 0.0)
    while events:
        now, kind, w, req = heapq.heappop(events)
        if kind == ARRIVE:
            if not busy[holder]:  # it waits in epoll holding the lock: it accepts at once
                start(holder, now, req, True)
            else:
                shared.append(req)
            if not closed:
                arrive(now + (rng.expovariate(arrivals.rate) if arrivals.loop == "poisson" else 1 / arrivals.rate))
        elif kind == SERVE:  # the lock let go: the rest of the request is served
            holding[w] = False
            heapq.heappush(events, (now + rest[w], DONE, w, req))
        elif kind == DONE:
            if req >= 0:
                out.append(now - req)
            if own[w]:
                start(w, now, own[w].popleft(), False)
            else:
                turn(w, now)
            if closed:
                arrive(now)
        elif not busy[w] and wake_at[w] == now:  # a sleeper's delay is up (not one it left since)
            turn(w, now)
    out.sort()
    return out, served
