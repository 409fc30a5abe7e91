"""The `pinned` discipline: long-lived connections, each request queued at the worker that holds its connection.

Once accepted, a connection stays with its worker; so with connections that live for the whole run the load
per worker is fixed by how many connections each worker accepted (`connections`, e.g. (2, 0, 0) or (9, 8, 8,
7)), whatever order each request would have been accepted in. Each worker is a single FIFO server of its own
connections' requests; workers do not share anything. Time is in the service time's unit.

Closed loop (every connection has one request outstanding at a time, think time 0). A worker holding n ≥ 1
connections is a closed queue of n customers on one server:

- It is never idle: a reply is the next request's arrival, so n requests are always at the worker. Its
  throughput is X = 1/E[S] whatever n is.
- A request arrives the instant its previous one ends, which is the instant the next request in line starts;
  FIFO puts it behind the other n-1 (one just started, fresh, n-2 waiting). Its sojourn is the sum of n
  independent service times: exactly n·S for a fixed service, Erlang(n, 1/E[S]) for an exponential one; mean
  R = n·E[S] (Little's law: n = X·R gives the same).
- The split of requests over workers follows from X, not from n: worker w serves X_w = 1/E[S_w] requests per
  unit time when it holds any connection, 0 otherwise, so its share is X_w / Σ X_v. With identical service
  every worker that holds a connection serves the same number of requests, (9, 8, 8, 7) a quarter each, not
  9/32 to 7/32: each of its n connections gets X/n = 1/R, so a connection on a worker holding more
  connections waits longer and makes fewer requests (the 7-worker's connections 9/7 as many as the 9-worker's).
  (2, 0, 0) (envoy#33707: one worker took both) sends every request to worker 0, each waiting for the other.

Open loop at `rate` requests per unit time, split evenly over the C connections: each request goes to a
connection chosen evenly, so worker w is fed n_w/C of the rate and, with Poisson arrivals, is an M/G/1 queue
(random splitting keeps a Poisson stream Poisson); with a fixed interval, a fixed interval of C/(n_w·rate).
Its share of requests is n_w/C. Exponential service at Poisson arrivals has the M/M/1 closed form
(exponential sojourn, rate 1/E[S] - λ_w); a fixed service at fixed intervals, below capacity, never waits.
A worker offered more than it serves (ρ_w = λ_w·E[S] ≥ 1) has a queue that grows with every arrival: it is
simulated from empty over the run's own length (`length`), every request measured (every request due is
served in the end). This leaves out that a client has one request in flight per connection (a request due on
a busy connection waits in the client instead of at the worker, the same work in the same FIFO per
connection).

Everything else is a seeded simulation of the worker's own queue (analysis/queueing.py with one worker), its
sojourn times sampled; the overall figures are the mixture of the workers' distributions weighted by their
share of the requests.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .queueing import Arrivals, Service, simulate

FEWEST = 2_000  # requests simulated for a worker however small its share (its own p99 must mean something)


class _Dist:
    """A worker's sojourn-time distribution: exact, or sampled by simulation."""

    exact = True
    mean = 0.0
    var = 0.0
    low = 0.0  # the smallest sojourn it gives

    def cdf(self, t: float) -> float:
        raise NotImplementedError

    def top(self) -> float:
        """A time no sojourn exceeds, or past the 1 - 1e-12 quantile."""
        raise NotImplementedError

    def quantile(self, q: float) -> float:
        return _inverse([(1.0, self)], q)


@dataclass(frozen=True)
class _Point(_Dist):
    """Every request takes exactly `value`."""

    value: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", self.value)
        object.__setattr__(self, "low", self.value)

    def cdf(self, t: float) -> float:
        return 1.0 if t >= self.value else 0.0

    def top(self) -> float:
        return self.value


@dataclass(frozen=True)
class _Erlang(_Dist):
    """The sum of `stages` exponential times of `rate` each (1 stage: an exponential)."""

    stages: int
    rate: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", self.stages / self.rate)
        object.__setattr__(self, "var", self.stages / self.rate**2)

    def cdf(self, t: float) -> float:
        """1 - Σ_{k<n} e^-x x^k / k!, x = rate·t; each term in logs (e^-x underflows for thousands of stages)."""
        x = self.rate * t
        if x <= 0:
            return 0.0
        log_x = math.log(x)
        # Poisson(x) terms more than 12 deviations (and 40) from x are below 1e-30 of the whole: left out, so
        # thousands of stages cost a few hundred terms
        reach = 12 * math.sqrt(x) + 40
        first, last = max(0, math.floor(x - reach)), min(self.stages, math.ceil(x + reach))
        tail = math.fsum(math.exp(-x + k * log_x - math.lgamma(k + 1)) for k in range(first, last))
        return min(1.0, max(0.0, 1.0 - tail))

    def top(self) -> float:
        # the mean plus 40 standard deviations is past any quantile asked of it (Chernoff: e^-40·... ≪ 1e-12)
        return (self.stages + 40 * math.sqrt(self.stages) + 40) / self.rate


@dataclass(frozen=True)
class _Sample(_Dist):
    """Sojourn times a simulation gave, sorted: nearest rank, as SimResult.percentile."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        n = len(self.values)
        mean = math.fsum(self.values) / n
        object.__setattr__(self, "exact", False)
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "var", math.fsum((v - mean) ** 2 for v in self.values) / n)
        object.__setattr__(self, "low", self.values[0])

    def cdf(self, t: float) -> float:
        return bisect.bisect_right(self.values, t) / len(self.values)

    def top(self) -> float:
        return self.values[-1]


def _inverse(parts: Sequence[tuple[float, _Dist]], q: float) -> float:
    """The q-th percentile of the mixture Σ weight·dist: the smallest t whose CDF reaches q/100 (bisection;
    for step CDFs, points and samples, it closes on the step itself)."""
    target = q / 100 - 1e-12  # nearest rank: a count reaching q% of n counts, float rounding aside
    lo, hi = 0.0, max(d.top() for _, d in parts)

    def reached(t: float) -> bool:
        return math.fsum(w * d.cdf(t) for w, d in parts) >= target

    if reached(lo):
        return lo
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if reached(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class PinnedWorker:
    """One worker's prediction: the connections it holds, its share of the requests, its sojourn times (None:
    it holds no connection and serves nothing)."""

    connections: int
    share: float
    p50: float | None
    p99: float | None
    mean: float | None
    utilisation: float  # its busy share of the time: 1 in a closed loop, ρ_w = λ_w·E[S] in an open one


@dataclass(frozen=True)
class PinnedPrediction:
    """Per worker, and over every request (the workers' distributions weighted by their shares)."""

    workers: tuple[PinnedWorker, ...]
    p50: float
    p99: float
    p999: float
    mean: float
    stdev: float
    min: float  # the fastest request it predicts
    exact: bool  # closed forms throughout; False: some worker was simulated
    simulated: int  # requests simulated, over every worker (0: none)

    @property
    def shares(self) -> tuple[float, ...]:
        return tuple(w.share for w in self.workers)


def request_shares(connections: Sequence[int], means: Sequence[float], arrivals: Arrivals) -> tuple[float, ...]:
    """Each worker's share of the requests (the module's docstring derives it): a closed loop keeps every
    worker that holds a connection busy, so X_w = 1/E[S_w] decides; an open loop feeds it n_w/C of the rate."""
    if arrivals.loop == "closed":
        rates = [1 / m if n > 0 else 0.0 for n, m in zip(connections, means, strict=True)]
    else:
        rates = [float(n) for n in connections]
    total = math.fsum(rates)
    return tuple(r / total for r in rates)


def _worker(
    n: int, service: Service, arrivals: Arrivals, total: int, requests: int, length: int, seed: int
) -> tuple[_Dist, float, int]:
    """(the sojourn distribution, the utilisation, requests simulated) of a worker holding n of `total`."""
    if arrivals.loop == "closed":
        if service.kind == "deterministic":
            return _Point(float(n * service.mean)), 1.0, 0
        if service.kind == "exponential":
            return _Erlang(n, 1 / service.mean), 1.0, 0
        # The n first requests all arrive at once, an empty cycle's: from the n-th on, every request waits for
        # exactly the n-1 before it. At least 20·n, so the warm-up tenth leaves out 2·n.
        count = max(requests, 20 * n)
        sim = simulate(1, "shared", Arrivals.closed(n), service, count, seed=seed)
        return _Sample(sim.sojourn), 1.0, count
    rate = arrivals.rate * n / total
    rho = rate * service.mean
    fed = Arrivals.poisson(rate) if arrivals.loop == "poisson" else Arrivals.fixed(rate)
    if rho >= 1:  # a queue that grows through the run: its own length, from empty, all measured
        count = max(2, round(length * n / total))
        sim = simulate(1, "shared", fed, service, count, seed=seed, warmup=0.0)
        return _Sample(sim.sojourn), rho, count
    if arrivals.loop == "poisson" and service.kind == "exponential":
        return _Erlang(1, 1 / service.mean - rate), rho, 0
    if arrivals.loop == "fixed" and service.kind == "deterministic":
        return _Point(float(service.mean)), rho, 0
    sim = simulate(1, "shared", fed, service, requests, seed=seed)
    return _Sample(sim.sojourn), rho, requests


def pinned(
    connections: Sequence[int],
    service: Service | Sequence[Service],
    arrivals: Arrivals,
    requests: int = 100_000,
    seed: int = 1,
    length: int | None = None,
) -> PinnedPrediction:
    """Each worker's and the overall latency and request split when worker w holds connections[w] of the
    connections for the whole run. `service`: one for every worker or one each; `arrivals`: a closed loop
    (its concurrency must be the connections' total) or an open loop at a total rate. `requests`: what the
    simulated workers are run for, spread by share (at least FEWEST each); `length`: the run's own requests,
    for a worker offered more than it serves (default `requests`)."""
    counts = list(connections)
    total = sum(counts)
    if not counts or min(counts) < 0 or total < 1 or requests < 2:
        raise ValueError("need a non-negative count of connections per worker, at least one in all, requests >= 2")
    if arrivals.loop == "closed" and arrivals.concurrency != total:
        raise ValueError(f"a closed loop over {total} held connections needs concurrency {total}")
    if arrivals.loop != "closed" and arrivals.rate <= 0:
        raise ValueError("an open loop needs a rate > 0")
    services = [service] * len(counts) if isinstance(service, Service) else list(service)
    if len(services) != len(counts):
        raise ValueError("need one service time, or one per worker")
    shares = request_shares(counts, [s.mean for s in services], arrivals)
    dists: list[_Dist | None] = []
    utilisations: list[float] = []
    simulated = 0
    for w, (n, s) in enumerate(zip(counts, services, strict=True)):
        if n == 0:
            dists.append(None)
            utilisations.append(0.0)
            continue
        own = max(FEWEST, round(requests * shares[w]))
        dist, rho, ran = _worker(n, s, arrivals, total, own, length or requests, seed + w)
        dists.append(dist)
        utilisations.append(rho)
        simulated += ran
    parts = [(shares[w], d) for w, d in enumerate(dists) if d is not None and shares[w] > 0]
    mean = math.fsum(w * d.mean for w, d in parts)
    second = math.fsum(w * (d.var + d.mean**2) for w, d in parts)
    workers = tuple(
        PinnedWorker(n, shares[w], d.quantile(50), d.quantile(99), d.mean, utilisations[w])
        if d is not None
        else PinnedWorker(0, 0.0, None, None, None, 0.0)
        for w, (n, d) in enumerate(zip(counts, dists, strict=True))
    )
    return PinnedPrediction(
        workers=workers,
        p50=_inverse(parts, 50),
        p99=_inverse(parts, 99),
        p999=_inverse(parts, 99.9),
        mean=mean,
        stdev=math.sqrt(max(0.0, second - mean**2)),
        min=min(d.low for _, d in parts),
        exact=all(d.exact for _, d in parts),
        simulated=simulated,
    )
