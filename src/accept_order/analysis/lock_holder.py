"""The `holder` discipline of analysis/queueing.py: an accept lock's holder takes the connections, the other workers
the lock only when their retry delay is up (nginx's accept_mutex, and this tool's accept-mutex mode, which rebuilds it).

nginx 1.22 (ngx_process_events_and_timers, ngx_trylock_accept_mutex): a worker tries the lock before each epoll_wait;
the holder keeps the listener in its epoll and holds the lock through its wait and its accepts, releasing it only to
serve what it accepted; a worker that finds the lock taken takes the listener out of its epoll and sleeps at most
accept_mutex_delay (500 ms) before trying again. So a connection that arrives while the holder serves waits for it,
whoever else is idle, until an idle worker's delay is up or a busy one comes back while the holder serves.

Per-worker accepts counted in the kernel (bpftrace, sys_exit_accept4) of nginx 1.22 with accept_mutex on,
multi_accept off, 2 workers, 1 ms of CPU a request, closed loops (load 3-5): at 2 clients 2,000 accepts came in 11
runs of one worker (164-427 each), the holder changing every 499 ms (median), one worker serving while the other
idled, where `favoured` (the lowest idle worker first) has both serve at once; at 4 and 8 clients, once both held
connections, they took turns (runs of 1-2); with accept_mutex off (EPOLLEXCLUSIVE), at 2 clients, 1,139 runs of at
most 19.

So here: an arrival goes to the holder if it is idle, else waits in the one queue. A worker that finishes takes the
queue's head if connections wait (the lock is free while the holder serves) and becomes the holder; one that finds
none waiting and is not the holder lets the lock be and sleeps for `delay`: the model's clients come back at once,
nginx's after a connection's set-up, by when the holder is back in its wait holding the lock (at 2 clients the other
worker dropped out again after 1-2 accepts). A sleeping worker wakes every `delay` and takes the head if connections
wait. `batch`: as queueing.py's (multi_accept on: the holder accepts the whole queue, which stays its own)."""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

ARRIVE, DONE, WAKE = 0, 1, 2  # the events, in this order where they coincide


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
) -> tuple[list[float], list[int]]:
    """The `holder` discipline's run (queueing.simulate's arguments, each worker's service a draw; `delay`: the retry
    delay, in the service's unit): the measured sojourns, sorted, and the requests each worker started."""
    more = batch - 1 if batch > 0 else requests  # queued connections the holder takes beside the one it serves
    events: list[tuple[float, int, int, float]] = []  # (time, event, worker, arrival time)
    busy, served = [False] * workers, [0] * workers
    own: list[deque[float]] = [deque() for _ in range(workers)]
    shared: deque[float] = deque()
    holder = 0
    wake_at = [
        rng.uniform(0, delay) if w else -1.0 for w in range(workers)
    ]  # the others' delays, as the run found them
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

    def start(w: int, now: float, req: float) -> None:
        busy[w], wake_at[w] = True, -1.0
        served[w] += 1
        heapq.heappush(events, (now + draws[w](), DONE, w, req))

    def take(w: int, now: float) -> None:
        nonlocal holder
        holder = w
        first = shared.popleft()
        while shared and len(own[w]) < more:
            own[w].append(shared.popleft())
        start(w, now, first)

    if closed:
        spread = arrivals.start / max(1, arrivals.concurrency - 1) if arrivals.concurrency > 1 else 0.0
        for k in range(min(arrivals.concurrency, requests)):
            arrive(k * spread)
    else:
        arrive(rng.expovariate(arrivals.rate) if arrivals.loop == "poisson" else 0.0)
    while events:
        now, kind, w, req = heapq.heappop(events)
        if kind == ARRIVE:
            if not busy[holder]:
                start(holder, now, req)
            else:
                shared.append(req)
            if not closed:
                arrive(now + (rng.expovariate(arrivals.rate) if arrivals.loop == "poisson" else 1 / arrivals.rate))
        elif kind == DONE:
            if req >= 0:
                out.append(now - req)
            if own[w]:
                start(w, now, own[w].popleft())
            elif shared:
                take(w, now)
            else:
                busy[w] = False
                if w != holder:  # the lock is the holder's again by the time a connection comes
                    wake_at[w] = now + delay
                    heapq.heappush(events, (wake_at[w], WAKE, w, 0.0))
            if closed:
                arrive(now)
        elif not busy[w] and wake_at[w] == now:  # a sleeper's delay is up (not one it left since)
            if shared:
                take(w, now)
            elif issued < requests:
                wake_at[w] = now + delay
                heapq.heappush(events, (wake_at[w], WAKE, w, 0.0))
    out.sort()
    return out, served
