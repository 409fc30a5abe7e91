"""A discrete-event simulation of N identical workers under the dispatch disciplines the accept modes have.

Pure and deterministic: the same arguments and seed give the same figures. Pure Python (heapq, deque), so
no numpy: 100k requests take a few tenths of a second.

Disciplines (what happens to a connection between its arrival and the worker that serves it):

- `shared`: one FIFO queue; the next free worker takes its head, idle workers wake in the order they went
  idle (a blocking accept's FIFO of waiters). Blocking accept, the epoll variants and accept-mutex differ
  in which idle worker wakes, not in queueing.
- `favoured`: the same shared queue, but an arrival goes to the lowest-index idle worker (first-registered,
  LIFO-like idle orders). Identical workers give it the same latencies as `shared`; its per-worker counts
  differ (worker 0 serves most at light load).
- both take `batch`: a worker that comes back to the shared queue takes up to `batch` queued connections
  at once into its own queue and serves them one after the other (1: one at a time; 0: all of them,
  accept until EAGAIN, nginx's multi_accept). The others cannot take those any more.
- `holder`: the same shared queue, taken by an accept lock's holder; the others take the lock when they try it
  (their retry `delay` up, or back from serving) while the holder serves, the lock free (nginx's accept_mutex:
  analysis/lock_holder.py, where it is measured).
- `hash`: a queue per worker; each arrival goes to a uniformly random worker, idle or not (SO_REUSEPORT).
- `round-robin`: arrival k goes to worker k mod N's own queue, idle or not (fd-pass, Node's SCHED_RR).
- `first`: every arrival goes to the first worker in an armed order (0, 1, ...), idle or not (io_uring's
  multishot accept: the first ring armed keeps its place in the wait queue and the kernel accepts for it
  while it is busy). With a `ring` of C completions: once C connections wait in that worker's ring unreaped
  (it reaps them all when it next waits, having served the ones it reaped before), the next one ends its
  accept, so it leaves the order and the next worker is first; it joins again at the end when it reaps.
  Only a connection that arrives later wakes the next worker, whose accept then takes the listener's queue
  too: those that arrived at the same instant (queued when the full ring's accept ran) wait in the
  listener's queue, as all do with none armed, until such an arrival or until a worker arms again (its
  accept takes the queue at once). So a burst that arrives all at once stays with worker 0 (500/0), and
  one whose connections keep arriving after its ring filled is handed on.

Arrivals: a closed loop (c clients, each issuing its next request the moment its previous one ends) or an
open loop (Poisson at a rate, or a fixed interval). Service times: drawn from a sample (empirical),
exponential, or deterministic, with a mean.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from .lock_holder import simulate_holder

Discipline = Literal["shared", "favoured", "holder", "hash", "round-robin", "first"]
DISCIPLINES: tuple[Discipline, ...] = ("shared", "favoured", "holder", "hash", "round-robin", "first")
Loop = Literal["closed", "poisson", "fixed"]

WARMUP = 0.1  # the first tenth of the arrivals fill the queues from empty: not the steady state


@dataclass(frozen=True)
class Service:
    """How long a request keeps its worker busy once started."""

    kind: Literal["empirical", "exponential", "deterministic"]
    mean: float
    sample: tuple[float, ...] = ()  # empirical: the values to draw from, uniformly

    @classmethod
    def empirical(cls, values: Sequence[float]) -> Service:
        if not values or min(values) < 0:
            raise ValueError("an empirical service time needs non-negative values")
        return cls("empirical", math.fsum(values) / len(values), tuple(values))

    @classmethod
    def exponential(cls, mean: float) -> Service:
        return cls("exponential", mean)

    @classmethod
    def deterministic(cls, mean: float) -> Service:
        return cls("deterministic", mean)

    def sampler(self, rng: random.Random) -> Callable[[], float]:
        if self.kind == "empirical":
            values, n, draw = self.sample, len(self.sample), rng.random
            return lambda: values[int(draw() * n)]
        if self.kind == "exponential":
            rate, expo = 1 / self.mean, rng.expovariate
            return lambda: expo(rate)
        mean = self.mean
        return lambda: mean


@dataclass(frozen=True)
class Arrivals:
    """Where requests come from: `closed` (concurrency clients) or an open loop at `rate` per unit time. A closed
    loop's clients make their first requests at once, or one after another evenly over `start` (a load generator
    takes that long to start them all: what a run too short for a steady state measures most of)."""

    loop: Loop
    concurrency: int = 0
    rate: float = 0.0
    start: float = 0.0

    @classmethod
    def closed(cls, concurrency: int, start: float = 0.0) -> Arrivals:
        return cls("closed", concurrency=concurrency, start=start)

    @classmethod
    def poisson(cls, rate: float) -> Arrivals:
        return cls("poisson", rate=rate)

    @classmethod
    def fixed(cls, rate: float) -> Arrivals:
        return cls("fixed", rate=rate)


@dataclass(frozen=True)
class SimResult:
    """The sojourn times (arrival to end of service) of the requests after the warm-up, sorted."""

    sojourn: tuple[float, ...]
    served: tuple[int, ...]  # requests each worker started, warm-up included

    def percentile(self, q: float) -> float:
        """Nearest rank, as histogram.py's: the smallest value with at least q% at or below it."""
        n = len(self.sojourn)
        return self.sojourn[max(1, math.ceil(round(q * n, 9) / 100)) - 1]

    @property
    def mean(self) -> float:
        return math.fsum(self.sojourn) / len(self.sojourn)

    @property
    def stdev(self) -> float:
        """Population deviation, like the histogram's dev."""
        mean = self.mean
        return math.sqrt(math.fsum((x - mean) ** 2 for x in self.sojourn) / len(self.sojourn))


def simulate(
    workers: int,
    discipline: Discipline,
    arrivals: Arrivals,
    service: Service | Sequence[Service],
    requests: int,
    batch: int = 1,
    seed: int = 1,
    warmup: float = WARMUP,
    ring: int = 0,
    delay: float = 500_000.0,
    hold: float = 0.0,
) -> SimResult:
    """Run `requests` requests through `workers` workers; the first `warmup` share of them are not measured
    (0: every one, from empty queues). `service`: one for every worker, or one each (workers that do not get
    the same CPU are not identical). `ring`: `first`'s completions a worker's ring holds (0: no limit). `delay`:
    `holder`'s retry delay, in the service's unit (µs: nginx's accept_mutex_delay 500 ms); `hold`: the mean while its
    holder keeps the lock on each connection it takes, out of that connection's service (lock_holder.HOLD_US)."""
    if workers < 1 or requests < 2 or batch < 0 or ring < 0 or delay <= 0 or hold < 0 or discipline not in DISCIPLINES:
        raise ValueError(
            "need workers >= 1, requests >= 2, batch >= 0, ring >= 0, delay > 0, hold >= 0 and a known discipline"
        )
    if arrivals.loop == "closed" and arrivals.concurrency < 1 or arrivals.loop != "closed" and arrivals.rate <= 0:
        raise ValueError("a closed loop needs concurrency >= 1, an open loop a rate > 0")
    rng = random.Random(seed)
    services = [service] * workers if isinstance(service, Service) else list(service)
    if len(services) != workers:
        raise ValueError("need one service time, or one per worker")
    draws = [s.sampler(rng) for s in services]
    if discipline == "holder":
        sojourns, counts = simulate_holder(workers, arrivals, draws, requests, batch, rng, warmup, delay, hold)
        return SimResult(tuple(sojourns), tuple(counts))
    # Drawn in line where every worker's service is a sample (the latency model's case): the same draw as
    # Service.sampler's, without a call per request. The loop below is the whole simulation written out in one
    # function, as the helpers it replaced did it (arrive, start, next for a worker): the same draws in the
    # same order, so the same figures; a call per step was half of its time.
    sampled = all(s.kind == "empirical" for s in services)
    samples = [s.sample for s in services]
    sizes = [len(s.sample) for s in services]
    uniform = rng.random
    n = workers
    # A request is its arrival time; a warm-up one's is stored as -1 - time (times are never negative).
    own: list[deque[float]] = [deque() for _ in range(n)]  # requests waiting at each worker
    busy = [False] * n
    served = [0] * n
    shared: deque[float] = deque()
    idle_fifo: deque[int] = deque(range(n))  # shared: who went idle first wakes first
    idle_low = list(range(n))  # favoured: a heap, the lowest index wakes
    per_worker = discipline in ("hash", "round-robin")
    hashed, fifo, favoured = discipline == "hash", discipline == "shared", discipline == "favoured"
    first = _First(n, ring) if discipline == "first" else None
    more = batch - 1 if batch > 0 else requests  # queued connections a worker takes beside the one it serves
    # (end time, worker): the completions to come, and what each worker serves (its arrival time). A worker
    # serves one at a time, so two completions never share a worker: ordered as (end, worker, arrival) were.
    done: list[tuple[float, int]] = []
    serving = [0.0] * n
    push, pop = heapq.heappush, heapq.heappop
    out: list[float] = []
    keep = out.append
    warm_at = max(1, int(requests * warmup)) if warmup > 0 else 0
    issued = 0

    closed = arrivals.loop == "closed"
    poisson = arrivals.loop == "poisson"
    rate = arrivals.rate
    gap = 1 / rate if not closed else math.inf
    now = 0.0
    next_start, start_gap = 0.0, 0.0  # when the next client's first request comes, and the time between them
    if closed:
        starting = min(arrivals.concurrency, requests)  # every client's first request, at time 0 or over `start`
        start_gap = arrivals.start / starting if starting > 1 else 0.0
        next_arrival = math.inf
    else:
        starting = 0
        next_arrival = rng.expovariate(rate) if poisson else 0.0
    while True:
        if starting and issued < requests and (not start_gap or not done or next_start <= done[0][0]):
            starting -= 1
            now, next_start = next_start, next_start + start_gap
        elif not closed and issued < requests and (not done or next_arrival <= done[0][0]):
            now = next_arrival
        elif done:
            now, w = pop(done)
            arrived = serving[w]
            if arrived >= 0:
                keep(now - arrived)
            # worker w is free: its own queue first, then the shared one (a batch of it), else idle
            queue = own[w]
            nxt: float | None = None
            if first is not None:
                nxt = first.next_for(w, queue, shared, now)
                busy[w] = nxt is not None
            elif queue:
                nxt = queue.popleft()
            elif shared:
                nxt = shared.popleft()
                if more >= len(shared):
                    queue.extend(shared)
                    shared.clear()
                else:
                    for _ in range(more):
                        queue.append(shared.popleft())
            else:
                busy[w] = False
                if fifo:
                    idle_fifo.append(w)
                elif favoured:
                    push(idle_low, w)
            if nxt is not None:
                served[w] += 1
                serving[w] = nxt
                push(done, (now + (samples[w][int(uniform() * sizes[w])] if sampled else draws[w]()), w))
            if not closed or issued >= requests:
                continue
        else:
            break
        # a request arrives at `now`
        k = issued
        issued += 1
        req = now if k >= warm_at else -1.0 - now
        w = -1
        if first is not None:
            w, req = first.arrive(req, now, own, busy, shared)
        elif per_worker:
            w = int(uniform() * n) if hashed else k % n
            if busy[w]:
                own[w].append(req)
                w = -1
        elif fifo:
            if idle_fifo:
                w = idle_fifo.popleft()
            else:
                shared.append(req)
        elif idle_low:
            w = pop(idle_low)
        else:
            shared.append(req)
        if w >= 0:
            busy[w] = True
            served[w] += 1
            serving[w] = req
            push(done, (now + (samples[w][int(uniform() * sizes[w])] if sampled else draws[w]()), w))
        if not closed:
            next_arrival = now + (rng.expovariate(rate) if poisson else gap)
    out.sort()
    return SimResult(tuple(out), tuple(served))


class _First:
    """`first`'s state: which workers have an accept armed (in the wait queue's order), per worker the connections in
    its ring since it last reaped and those it reaped and has not started, and when a ring last filled."""

    def __init__(self, workers: int, ring: int) -> None:
        self.ring = ring
        self.armed: deque[int] = deque(range(workers))
        self.unreaped = [0] * workers
        self.reaped = [0] * workers
        self.filled_at = -math.inf

    def arrive(
        self, req: float, now: float, own: list[deque[float]], busy: list[bool], shared: deque[float]
    ) -> tuple[int, float]:
        """A connection arrives: its wakeup goes to the first armed worker, whose accept takes what the listener's
        queue holds, oldest first, then this one (an idle one starts the oldest itself). One that arrives with the
        connection that filled a ring (at the same instant: already queued when that accept ran) waits in the
        listener's queue, as the ones with none armed do: no wakeup reaches another worker for it, so a full ring
        hands on only to connections that arrive after it filled. Returns the worker that starts one now and the one
        it starts (-1: none)."""
        shared.append(req)
        if not self.armed or now <= self.filled_at:
            return -1, req
        w = self.armed[0]
        started = shared.popleft() if not busy[w] else None
        while shared and self.armed and self.armed[0] == w:
            self.post(w, own[w], shared.popleft(), now)
        return (w, started) if started is not None else (-1, req)

    def post(self, w: int, queue: deque[float], req: float, now: float) -> None:
        """The kernel accepts `req` for armed worker w into its ring (`queue`); the one past a full ring ends its
        accept (it rides on the last completion), and the worker leaves the order."""
        queue.append(req)
        self.unreaped[w] += 1
        if self.ring and self.unreaped[w] > self.ring:
            self.armed.remove(w)
            self.filled_at = now

    def next_for(self, w: int, queue: deque[float], shared: deque[float], now: float) -> float | None:
        """What free worker w starts next: the next it reaped; else it waits, which reaps its ring at once, and arms
        again at the end of the order if its accept had ended: that accept takes what the listener's queue holds at
        once, wherever it stands in the order (it tries before it waits). None: nothing there, it sleeps armed."""
        if not self.reaped[w]:
            self.reaped[w], self.unreaped[w] = len(queue), 0
            if w not in self.armed:
                self.armed.append(w)
                while shared and w in self.armed:
                    self.post(w, queue, shared.popleft(), now)
                if not self.reaped[w]:  # its wait returns with what that accept took
                    self.reaped[w], self.unreaped[w] = len(queue), 0
            if not queue:
                return None
        self.reaped[w] -= 1
        return queue.popleft()
