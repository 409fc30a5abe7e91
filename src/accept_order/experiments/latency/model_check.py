"""Does queueing alone explain a latency run? The model's prediction for one run, from its own figures: its workers,
its mode's dispatch discipline (or each request pinned to the worker that holds its connection), its load and the
service time its workers took (analysis/model_check.py, analysis/queueing.py and analysis/pinned.py simulate it).
The sentence that compares it with what was measured is model_verdict.py's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...analysis.busy_choice import SourceChoice, choose
from ...analysis.lock_holder import HOLD_US
from ...analysis.model_check import (
    FEWEST,
    MIN_TIMED,
    MOST,
    SAMPLE,
    SEED,
    ModelCheck,
    ServiceSource,
    agrees,
    discipline_of,
)
from ...analysis.pinned import pinned
from ...analysis.queueing import WARMUP, Arrivals, Service, SimResult, simulate
from ...core import service_time
from ...core.models import Model
from ...core.uring import ACCEPT_COMPLETIONS
from ...probes.accept_counts import gap_sample
from ...probes.busy_waits import Busy, busy_reading
from ...probes.cpu_waits import cpu_share
from ...servers.registry import known_mode
from .kept_report import accepted, by_kernel
from .model_one_at_a_time import one_at_a_time
from .model_queues import attached_queues, one_per_wakeup
from .model_servers import as_served
from .result import LatencyResult


def service_of(result: LatencyResult) -> tuple[Service | list[Service], ServiceSource, int] | None:
    """The run's service time: timed by the workers (each its own when each timed enough: workers that do
    not get the same CPU take different times), else their busy time per connection where they slept while serving
    (slept_serving), else their CPU per connection, else the configured one."""
    histograms = [c.service_us for c in result.counters]
    pairs = service_time.merged(histograms)
    timed = sum(n for _, n in pairs)
    if timed >= MIN_TIMED:
        each = [list(h) for h in histograms]
        if len(each) == result.server.workers and all(sum(n for _, n in h) >= MIN_TIMED for h in each):
            return [Service.empirical(service_time.quantile_sample(h, SAMPLE)) for h in each], "server", timed
        return Service.empirical(service_time.quantile_sample(pairs, SAMPLE)), "server", timed
    cpu = [c.cpu_s for c in result.counters]
    if result.ok and cpu and all(s is not None for s in cpu) and sum(s or 0 for s in cpu) > 0:
        # a CPU-bound handler: its CPU per connection, the same for each (what the run cannot tell apart), stretched
        # by the server's waits for a CPU where they were read (a worker is given a CPU of its own otherwise)
        stretch = cpu_share(result.evidence) or 1.0
        if (busy := slept_serving(result)) is not None:
            if gaps := served_between_accepts(result):
                return Service.empirical(gaps), "busy", result.ok
            return Service.deterministic(1e6 * busy.busy_s / result.ok), "busy", result.ok
        return Service.deterministic(1e6 * sum(s or 0 for s in cpu) / result.ok / stretch), "cpu", result.ok
    configured = result.server.work_us + (result.work_estimate_us or 0 if result.server.work_iters else 0)
    if configured > 0:
        return Service.deterministic(configured), "configured", 0
    return None


def source_choice(result: LatencyResult) -> tuple[Busy, SourceChoice] | None:
    """The workers' busy time (probes/busy_waits.py) and the looks' choice of source on it (analysis/busy_choice.py);
    None where not read."""
    busy = busy_reading(result.evidence, result.server.workers)
    return None if busy is None else (busy, choose(busy.busy_looks, busy.slept_looks, busy.waited_share))


def slept_serving(result: LatencyResult) -> Busy | None:
    """The workers' busy time where enough looks found them asleep off the CPU while serving for a fifth of it or
    more (busy_choice.SLEPT_SERVING), which their CPU time leaves out; None otherwise (not read, too few busy looks,
    or a handler that mostly computes)."""
    read = source_choice(result)
    return read[0] if read is not None and read[1].busy else None


def served_between_accepts(result: LatencyResult) -> list[float]:
    """Each connection's time (µs, a bounded sample) where the kernel timed it: workers that serve one at a time
    (model_one_at_a_time.py; the busy looks found them asleep while serving, one_per_wakeup) each serve one connection
    between an accept that took it and their next accept call, and bpftrace counted those gaps for most of the run's
    connections; [] otherwise (the busy time's mean then stands for every connection). One mean leaves the spread out:
    PyPI's gunicorn (3 sync workers, an app sleeping 2 ms, 12 clients; load 5.7, Linux 6.18.44, 2 vCPUs) had gaps of
    mean 5.38 ms (the looks read 5.41), CV 1.28, p99 23.5 ms, and on its mean the model's p99 read 21.6 ms against 68.7.
    A gap holds the client's time too where the worker waits on it: gunicorn 27 lingers after its reply until the client
    closes (util.close_graceful), 1.06 ms of a 4.65-ms mean gap there (bpftrace, load 7.6), most of it after the
    client's clock stopped (at the EOF that begins it: loads/uring_loop.py), so not in the latency measured; the worker
    is held, the next connection waits, and so it is service. A gap's first part, from the accept to the request's first
    bytes read, was 85 µs on average at 12 clients (115 at 2): what the client took to send it, in the latency measured
    too, is that small."""
    if not one_at_a_time(result) or one_per_wakeup(result) is None or (busy := slept_serving(result)) is None:
        return []  # an event loop's gaps are its loop's turns, each connection served across many of them
    sample, count = gap_sample(result.evidence, SAMPLE)
    if count < max(MIN_TIMED, result.ok // 2):
        return []
    # Two readings of one time, the kernel's and the looks' (16 of those gunicorn runs: within 1% of each other):
    # gaps much longer hold waits besides serving, a lock taken before the next accept (Apache prefork's accept mutex,
    # uWSGI's thunder lock), or a poll for the listener before it; the busy time's mean stands then
    mean, looked = sum(sample) / len(sample), 1e6 * busy.busy_s / result.ok
    return sample if agrees(mean, looked) else []


def busy_fields(result: LatencyResult, source: ServiceSource, drawn: bool = False) -> dict[str, Any]:
    """What a model of the workers' busy time keeps beside it, for the report to say why: how much of it they slept
    while serving, in what, and their CPU per connection, which leaves those sleeps out. Their CPU as it was, not
    stretched by their share of a CPU as source "cpu" is: the report names it their CPU per connection, and
    stretched, a gunicorn's 0.38 ms read 'their CPU per connection (mean 1.71 ms)'. Beside either source the looks
    chose between (busy or cpu), their busy looks, those asleep and the asleep share, which say how sure the choice
    was; and where the busy service was `drawn` from a sample (served_between_accepts), the kernel's gaps counted."""
    read = source_choice(result) if source in ("busy", "cpu") else None
    if read is None:
        return {}
    busy, choice = read
    looked = {"busy_looks": choice.looks, "slept_looks": choice.slept, "slept_share": choice.share}
    if source != "busy":
        return looked
    cpu = sum(c.cpu_s or 0 for c in result.counters) / result.ok
    gaps = gap_sample(result.evidence, 0)[1] if drawn and served_between_accepts(result) else None
    return {
        "service_gaps": gaps,
        "busy_waited": busy.waited_share,
        "waited_in": ", ".join(busy.calls[:3]),
        "cpu_mean_ms": 1000 * cpu,
        **looked,
    }


def _mean(service: Service | list[Service], result: LatencyResult) -> float:
    """The mean service time (µs) over every connection, from the exact sums when the workers kept them."""
    total: int = sum(sum(n for _, n in c.service_us) for c in result.counters)
    sums = [c.service_sum_us for c in result.counters]
    if total and all(s is not None for s in sums):
        return sum(s or 0 for s in sums) / total
    return service.mean if isinstance(service, Service) else sum(s.mean for s in service) / len(service)


@dataclass(frozen=True)
class Held:
    """What the pinned model reads of a run whose connections carry several requests each."""

    requests_per_connection: int  # 0: each connection lived for the whole run
    per_worker: tuple[int, ...]  # connections each worker held


def held_connections(result: LatencyResult) -> Held | None:
    """The connections each worker held, for the pinned model. None: one request per connection (the mode's own
    discipline applies), or the run did not say which worker held them (a launched server that does not name
    itself in its replies).

    The load's client saw them (LatencyResult.connections: the connections whose first reply named each worker;
    held_at_end: those each held when the last request was issued). K = 0: every connection lived for the
    whole run, so the held set is the one at the end. K > 1: connections come and go and the hold changes
    through the run; the one at the end, split over the -c clients, stands for it (a snapshot, not an average:
    a closed loop that keeps every worker busy has each accept at the same rate whatever it holds, so the
    accepts do not show an uneven hold, and are used only when nothing was held at the end)."""
    k = result.load.requests_per_connection
    workers = result.server.workers
    held = list(result.held_at_end) if len(result.held_at_end) == workers else []
    if not sum(held) and len(result.connections) == workers:
        held = list(result.connections)
    took = accepted(result)
    if by_kernel(result) and k == 0 and took is not None and sum(took) == result.load.concurrency:
        held = list(took)  # replies that name no worker: the kernel's accepts, each connection accepted once
    if k == 1 or not sum(held):
        return None
    if k == 0:
        return Held(k, tuple(held))
    clients = result.load.concurrency
    exact = [clients * n / sum(held) for n in held]
    split = [int(x) for x in exact]
    for w in sorted(range(workers), key=lambda w: split[w] - exact[w])[: clients - sum(split)]:
        split[w] += 1  # largest remainders
    return Held(k, tuple(split))


def _predict_pinned(
    result: LatencyResult, held: Held, service: tuple[Service | list[Service], ServiceSource, int], seed: int
) -> ModelCheck | None:
    """Each request queued at the worker that holds its connection (analysis/pinned.py)."""
    load, sampler = result.load, service[0]
    clients = sum(held.per_worker)
    if not clients:
        return None
    arrivals = Arrivals.closed(clients) if load.rate is None else Arrivals.fixed(load.rate / 1e6)  # per µs
    requests = max(FEWEST, min(MOST, 10 * result.ok))
    got = pinned(held.per_worker, sampler, arrivals, requests, seed=seed, length=max(2, result.driven))
    ms = 1 / 1000
    return ModelCheck(
        discipline="pinned",
        batch=1,
        loop="closed-loop" if load.rate is None else "open-loop",
        concurrency=clients,
        rate=load.rate,
        workers=result.server.workers,
        service_source=service[1],
        service_count=service[2],
        service_mean_ms=_mean(sampler, result) * ms,
        simulated=got.simulated,
        p50_ms=got.p50 * ms,
        p99_ms=got.p99 * ms,
        p999_ms=got.p999 * ms,
        dev_ms=got.stdev * ms,
        mean_ms=got.mean * ms,
        min_ms=got.min * ms,
        cpu_share=cpu_share(result.evidence) if service[1] == "cpu" else None,
        **busy_fields(result, service[1], not isinstance(sampler, list) and sampler.kind == "empirical"),
        connections=held.per_worker,
        shares=got.shares,
        worker_p50_ms=tuple(None if w.p50 is None else w.p50 * ms for w in got.workers),
        worker_p99_ms=tuple(None if w.p99 is None else w.p99 * ms for w in got.workers),
    )


def reached(result: LatencyResult) -> int:
    """The workers a mode steered by the client's CPU can reach: listener i is CPU i's, so those of the CPUs the
    load generator ran on (its --load-cpus, else this machine's); on 2 CPUs a third worker gets none (latency -m
    incoming-cpu -w 3: 1996/1004/0, where a hash over 3 predicted p50 3.28 ms against 6.24). Every worker for any
    other mode. At most the workers that served: an unpinned load runs where the tool may, which the file does not
    keep and may be fewer CPUs than the machine's (taskset, a container's cpuset: 'taskset -c 1 latency -m
    incoming-cpu -w 2' served 0/2000, and a hash over 2 predicted p50 6.00 ms against 11.7)."""
    server, load = result.server, result.load
    info = known_mode(server.kind, server.mode)
    if info is None or info.model != Model.CLIENT_CPU:
        return server.workers
    cpus = load.cpus or tuple(range(result.environment.cpu_count))
    # a CPU past the last listener finds none of its own: the kernel picks by hash among them all then
    reach = server.workers if any(c >= server.workers for c in cpus) else max(1, len(set(cpus)))
    served = sum(1 for n in result.served if n)
    return max(1, min(reach, served)) if served else reach


# A closed loop of fewer connections than this many per client is simulated as run (predict): its start, every
# client's first connection at once, is then over a tenth of what it measured, the share a steady state leaves out.
SHORT_ROUNDS = 10


def _start_us(result: LatencyResult) -> float:
    """How long the load generator took to start every client's first connection (µs; 0: not known)."""
    spans = [(d.started_s or 0.0) + d.open_s for d in result.drivers if d.open_s is not None]
    return max(spans, default=0.0) * 1e6


def _replicated(times: int, sim: Callable[[int], SimResult]) -> SimResult:
    """`sim(seed offset)` run `times` times, the sojourns pooled (and each worker's starts summed)."""
    runs = [sim(k) for k in range(times)]
    if times == 1:
        return runs[0]
    served = tuple(sum(column) for column in zip(*(r.served for r in runs), strict=True))
    return SimResult(tuple(sorted(x for r in runs for x in r.sojourn)), served)


def working(result: LatencyResult) -> int | None:
    """Where no worker's served count is known (an attached server whose accepts no trace sees: io_uring's), the
    workers that used CPU during the run: one that used none served none. 'latency --attach' of a 2-worker io-uring
    serve (--work 1ms, -c 8) had worker 0 use 2.68 s of CPU and worker 1 none, and a model of both sharing one queue
    predicted p50 4.72 ms against 8.92 and blamed the load generator and the other processes. None: counts known,
    or some worker's CPU not read."""
    if sum(result.served) or len(result.counters) != result.server.workers:
        return None  # counts known, or the servers are not these processes (a process's threads: model_servers)
    cpu = [c.cpu_s for c in result.counters]
    if any(s is None for s in cpu) or not any(cpu):
        return None
    return sum(1 for s in cpu if s)


def predict(result: LatencyResult, seed: int = SEED, held: Held | None = None) -> ModelCheck | None:
    """The run's latency as queueing alone would make it; None when its mode or service time is unknown.
    Connections that carry several requests (`held`, else the run's own: held_connections) are pinned."""
    if (served := as_served(result)) is None:
        return None  # a process of threads whose number serving at once is not known (model_servers.py)
    server, load, result = served.server, served.load, served
    how = discipline_of(known_mode(server.kind, server.mode), server)
    if how is not None and (queues := attached_queues(result)) is not None:
        # the queues its listeners make, not the attached kind's one mode's; one a wakeup where the kernel saw so
        how = (queues.discipline, 1 if one_per_wakeup(result) else how[1])
    service = service_of(result)
    held = held or held_connections(result)
    if service is not None and result.ok and held is not None:
        return _predict_pinned(result, held, service, seed)
    if how is None or service is None or not result.ok:
        return None
    discipline, batch = how
    sampler, source, count = service
    workers = min(reached(result), working(result) or server.workers)
    if isinstance(sampler, list) and workers < server.workers:  # each worker's own times, pooled over those reached
        sampler = Service.empirical([x for s in sampler for x in s.sample])
    clients = min(load.concurrency, load.connections or load.concurrency)
    arrivals = Arrivals.closed(clients) if load.rate is None else Arrivals.fixed(load.rate / 1e6)  # per µs
    requests, warmup = max(FEWEST, min(MOST, 10 * result.ok)), WARMUP
    replications = 1
    if load.rate is not None and load.rate / 1e6 * _mean(sampler, result) >= workers:
        # An open loop past what the workers can serve: the queue grows with every arrival, so the latencies
        # depend on how many there were. Simulate the run's own, from empty queues as it started, all measured.
        requests, warmup = max(2, result.driven), 0.0
    elif load.rate is None and result.driven < SHORT_ROUNDS * clients:
        # A closed loop too short for a steady state: its start, every client's first connection within the load
        # generator's first milliseconds, is most of what it measured (-n 600 -c 600: one burst, each client one
        # connection). Its own connections from empty queues, all measured, the first ones spread as the drivers
        # started them, the simulation run again with other seeds for its noise.
        # Not io_uring's: its accept takes what the listener holds in one go when its worker's task_work runs, so a
        # burst reaches the ring as if at once ('-m io-uring -w 2 -c 300 -n 300 --work 1ms': 300/0 in 3 of 3 though
        # the drivers took 8-104 ms to start them; spread so, the model handed 128 on and read p50 87-98 ms against
        # 183-246; at once 163-216)
        arrivals = Arrivals.closed(clients, 0.0 if discipline == "first" else _start_us(result))
        requests, warmup = max(2, result.driven), 0.0
        replications = max(1, min(MOST // requests, -(-FEWEST // requests)))
    ring = ACCEPT_COMPLETIONS if discipline == "first" else 0  # the io-uring mode's ring: the one 'first' there is
    # holder's retry delay: the accept-mutex mode's, nginx's accept_mutex_delay (an attached server's is not read: the
    # spec's default, nginx's own 500 ms, as model_queues.py says)
    delay = server.mutex_delay_ms * 1000
    sim = _replicated(
        replications,
        lambda k: simulate(
            workers, discipline, arrivals, sampler, requests, batch, seed + k, warmup, ring, delay, HOLD_US
        ),
    )
    ms = 1 / 1000
    return ModelCheck(
        discipline=discipline,
        batch=batch,
        loop="closed-loop" if load.rate is None else "open-loop",
        concurrency=clients,
        rate=load.rate,
        workers=workers,
        service_source=source,
        service_count=count,
        service_mean_ms=_mean(sampler, result) * ms,
        simulated=requests * replications,
        p50_ms=sim.percentile(50) * ms,
        p99_ms=sim.percentile(99) * ms,
        p999_ms=sim.percentile(99.9) * ms,
        dev_ms=sim.stdev * ms,
        mean_ms=sim.mean * ms,
        min_ms=sim.sojourn[0] * ms,
        cpu_share=cpu_share(result.evidence) if source == "cpu" else None,
        **busy_fields(result, source, not isinstance(sampler, list) and sampler.kind == "empirical"),
        hold_us=HOLD_US if discipline == "holder" else None,
    )
