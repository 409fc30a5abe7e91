"""Does queueing alone explain a latency run? The model's prediction for one run (analysis/model_check.py
simulates it) and the sentence that compares it with what was measured, with what the run itself saw
besides queueing (a herd, a lock, a saturated client)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...analysis.herd import HERD_THRESHOLD, woken_per_connection
from ...analysis.model_check import (
    FEWEST,
    MIN_JUDGED,
    MIN_TIMED,
    MOST,
    NOISE,
    SAMPLE,
    SEED,
    TOLERANCE,
    ModelCheck,
    ServiceSource,
    agrees,
    discipline_of,
    too_few,
)
from ...analysis.pinned import pinned
from ...analysis.queueing import WARMUP, Arrivals, Service, simulate
from ...analysis.syn_retrans import RTO_FLOOR_US, syn_stalls
from ...core import service_time
from ...core.models import Model
from ...core.run_warnings import WarningKind
from ...core.text import plural
from ...loads.client_warnings import driver_warnings
from ...servers.registry import known_mode
from .kept_report import accepted, by_kernel, finished_unit
from .model_servers import as_served
from .result import LatencyResult


def service_of(result: LatencyResult) -> tuple[Service | list[Service], ServiceSource, int] | None:
    """The run's service time: timed by the workers (each its own when each timed enough: workers that do
    not get the same CPU take different times), else their CPU per connection, else the configured one."""
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
        # a CPU-bound handler: its CPU per connection, the same for each (what the run cannot tell apart)
        return Service.deterministic(1e6 * sum(s or 0 for s in cpu) / result.ok), "cpu", result.ok
    configured = result.server.work_us + (result.work_estimate_us or 0 if result.server.work_iters else 0)
    if configured > 0:
        return Service.deterministic(configured), "configured", 0
    return None


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
        connections=held.per_worker,
        shares=got.shares,
        worker_p50_ms=tuple(None if w.p50 is None else w.p50 * ms for w in got.workers),
        worker_p99_ms=tuple(None if w.p99 is None else w.p99 * ms for w in got.workers),
    )


def predict(result: LatencyResult, seed: int = SEED, held: Held | None = None) -> ModelCheck | None:
    """The run's latency as queueing alone would make it; None when its mode or service time is unknown.
    Connections that carry several requests (`held`, else the run's own: held_connections) are pinned."""
    if (served := as_served(result)) is None:
        return None  # a process of threads whose number serving at once is not known (model_servers.py)
    server, load, result = served.server, served.load, served
    how = discipline_of(known_mode(server.kind, server.mode), server)
    service = service_of(result)
    held = held or held_connections(result)
    if service is not None and result.ok and held is not None:
        return _predict_pinned(result, held, service, seed)
    if how is None or service is None or not result.ok:
        return None
    discipline, batch = how
    sampler, source, count = service
    clients = min(load.concurrency, load.connections or load.concurrency)
    arrivals = Arrivals.closed(clients) if load.rate is None else Arrivals.fixed(load.rate / 1e6)  # per µs
    requests, warmup = max(FEWEST, min(MOST, 10 * result.ok)), WARMUP
    if load.rate is not None and load.rate / 1e6 * _mean(sampler, result) >= server.workers:
        # An open loop past what the workers can serve: the queue grows with every arrival, so the latencies
        # depend on how many there were. Simulate the run's own, from empty queues as it started, all measured.
        requests, warmup = max(2, result.driven), 0.0
    sim = simulate(server.workers, discipline, arrivals, sampler, requests, batch=batch, seed=seed, warmup=warmup)
    ms = 1 / 1000
    return ModelCheck(
        discipline=discipline,
        batch=batch,
        loop="closed-loop" if load.rate is None else "open-loop",
        concurrency=clients,
        rate=load.rate,
        workers=server.workers,
        service_source=source,
        service_count=count,
        service_mean_ms=_mean(sampler, result) * ms,
        simulated=requests,
        p50_ms=sim.percentile(50) * ms,
        p99_ms=sim.percentile(99) * ms,
        p999_ms=sim.percentile(99.9) * ms,
        dev_ms=sim.stdev * ms,
        mean_ms=sim.mean * ms,
        min_ms=sim.sojourn[0] * ms,
    )


OTHERS_SEEN = 0.10  # other processes' share of all CPUs worth naming (render/evidence.OTHERS_SHOWN's)
CLIENT_WAIT = 0.02  # a client that waited for a CPU longer than this share of its time delayed replies


def _label(result: LatencyResult) -> str:
    return result.server.label


def seen_besides_queueing(result: LatencyResult, name: Callable[[LatencyResult], str] = _label) -> list[str]:
    """What the run itself saw that queueing does not model: a herd, a lock, a saturated client."""
    seen = []
    info = known_mode(result.server.kind, result.server.mode)
    # over kept connections a worker also sleeps between the requests of those it holds: its sleeps per
    # request are no count of the workers a connection woke
    woken = None if result.load.keeps_connections else woken_per_connection(result.counters, result.ok)
    label = name(result)
    if info is not None and info.switches_are_wakeups and woken is not None and woken >= HERD_THRESHOLD:
        seen.append(f"{label} woke {woken:.1f} workers per connection (a herd)")
    if info is not None and info.model == Model.LOCK_HOLDER:
        seen.append(f"{label} takes connections behind a lock")
    client = {WarningKind.DRIVER_SATURATED, WarningKind.DRIVERS_STARVED}
    warnings = driver_warnings(list(result.drivers), result.server.workers, result.environment.cpu_count)
    if any(w.kind in client for w in warnings):
        seen.append(f"the load generator was short of CPU during {label}")
    else:
        # The model gives each worker a CPU of its own and the client none of theirs. A client that waits for a CPU
        # (the workers', without --load-cpus; or its client hosts') reads a reply late: that wait is timed.
        waited = max(((d.runqueue_s or 0) / d.wall_s for d in result.drivers if d.wall_s), default=0.0)
        if waited > CLIENT_WAIT and (result.hosts or not result.load.cpus):
            where = "ran on CPUs of its client hosts" if result.hosts else "shared the workers' CPUs"
            hint = "" if result.hosts else "; --load-cpus gives it its own"
            seen.append(f"the load generator {where} during {label} (it waited for one {waited:.0%} of its time{hint})")
    late = result.late  # an open loop's connections that waited for one of the generator's -c slots
    if late and overload(result, name) is None:  # an overloaded run says so in its own lead
        seen.append(
            f"{late:,} of {label}'s {finished_unit(result.load)}s waited in the load generator for one of its "
            f"{result.load.concurrency} slots (a larger -c lets them start on time)"
        )
    stalls = syn_stalls(result.histogram, result.evidence)
    if stalls is not None and result.histogram.percentile(99) >= RTO_FLOOR_US:
        slow = plural(stalls.slow, finished_unit(result.load))
        if stalls.private:
            # the p99 is at the retransmission floor and the run's own SYNs were sent again: a wait of the kernel's
            # timer, which no CPU share explains
            seen.append(
                f"{label}'s p99 is among its {slow} of 1 s or more while SYNs were sent again (the kernel's 1 s "
                "retransmission timer, not queueing)"
            )
            return seen
        # a host-wide count may be all others' traffic, and a server that stalls 1 s gives such a p99 without one:
        # the timer is a may, said beside the CPU others used, not instead of it
        seen.append(
            f"{label}'s p99 is among its {slow} of 1 s or more while SYNs were sent again host-wide (the kernel's "
            "1 s retransmission timer may be part of it)"
        )
    shares = result.others_cpu_share
    if shares is not None and shares[1] >= OTHERS_SEEN:
        seen.append(f"other processes used {100 * shares[1]:.0f}% of the CPUs during {label}")
    return seen


def _else(runs: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> str:
    seen = [s for r in runs for s in seen_besides_queueing(r, name)]
    if seen:
        return "something else is at work: " + "; ".join(seen)
    return "something else is at work (the run saw no herd, lock or client delay to name), or noise"


SHORT_SERVED = 0.97  # an open loop that served less than this share of its rate did not keep up with it


def overload(result: LatencyResult, name: Callable[[LatencyResult], str] = _label) -> str | None:
    """An open loop that offered more than its workers served: ρ ≥ 1 by the measured service time, or a
    rate it did not serve (under SHORT_SERVED of it) while its slots ran out (started late, or never)."""
    load, model = result.load, result.model
    if load.rate is None:
        return None
    rho = model.utilisation if model is not None else None
    short = result.throughput < SHORT_SERVED * load.rate and (result.late or result.unstarted)
    if not (rho is not None and rho >= 1) and not short:
        return None
    said = [f"ρ {rho:.2f}"] if rho is not None else []
    if result.late:
        said.append(f"{result.late:,} of {result.driven:,} started late, all {load.concurrency} in flight busy")
    if result.unstarted:
        said.append(f"{result.unstarted:,} due never started")
    return (
        f"{name(result)} was offered more than its workers served ({load.rate:,.0f}/s offered, "
        f"{result.throughput:,.0f}/s served; {', '.join(said)}): its latencies hold a queue that grew through "
        "the run, in the server"
        + (" and, past the connections in flight, in the load generator waiting for a free slot" if result.late else "")
    )


def fixed_path_ms(runs: Sequence[LatencyResult]) -> float:
    """The time every connection took that queueing leaves out (set-up, the kernel, the client), in ms: the
    fastest measured connection beyond the fastest the model predicts. The same kernel and client serve every
    mode of one comparison, so the smallest of the runs' (0 when a model predates its minimum)."""
    each = [
        max(0.0, (r.histogram.min_us or 0) / 1000 - r.model.min_ms)
        for r in runs
        if r.model is not None and r.model.min_ms is not None and r.histogram.count
    ]
    return min(each) if each and len(each) == len(runs) else 0.0


def judged(runs: Sequence[LatencyResult]) -> tuple[list[tuple[LatencyResult, float, float]], float]:
    """Each run with a model: (run, measured p99 ms, predicted p99 ms plus the fixed path); and that path (ms)."""
    modelled = [r for r in runs if r.model is not None and r.ok]
    fixed = fixed_path_ms(modelled)
    compared = [(r, r.histogram.percentile(99) / 1000, r.model.p99_ms + fixed) for r in modelled if r.model]
    return compared, fixed


def _times(measured: float, predicted: float) -> str:
    return f"{measured / predicted:.2f}×" if predicted > 0 else "above"  # a saved model's p99 may be 0


def _fixed_clause(runs: Sequence[LatencyResult], fixed: float) -> str:
    if fixed <= 0:
        return ""
    median = max(r.histogram.percentile(50) / 1000 for r in runs)  # most of every run's median, or not said
    most = "; that is most of each run's median latency, not the workers' queues" if fixed > median / 2 else ""
    # over kept connections each sample is a request, and the fastest one had no connection to set up
    unit = finished_unit(runs[0].load) if runs else "connection"
    path = "set-up, the kernel, the client" if unit == "connection" else "the kernel, the client"
    return (
        f" (predictions include {fixed:.2f} ms that every {unit} took besides queueing, the fastest {unit}'s "
        f"time over the model's fastest: {path}{most})"
    )


def _too_small(runs: Sequence[LatencyResult], several: bool, name: Callable[[LatencyResult], str]) -> str:
    """The runs with too few measurements for their p99 to carry a verdict: judged neither way, and what would."""
    unit = finished_unit(runs[0].load)
    counted = [f"{name(r)} {r.histogram.count:,}" for r in runs] if several else [f"{runs[0].histogram.count:,}"]
    more = "-n" if all(r.load.connections is not None for r in runs) else "a --duration long enough for"
    return (
        f"too few {unit}s to judge ({', '.join(counted)} measured): a p99 needs {MIN_JUDGED} or more "
        f"({too_few([r.histogram.count for r in runs])}), so {more} {MIN_JUDGED} or more would tell"
    )


def model_line(runs: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> str | None:
    """One sentence: an open loop that was overloaded, then whether each run's measured p99 is within what
    queueing alone predicts for it (its own discipline, service time and load, plus the fixed path every
    connection takes), and what the run saw besides queueing where it is not. None when no run has a model."""
    compared, fixed = judged(runs)
    if not compared:
        return None
    modelled = [r for r, _, _ in compared]
    over = [o for r in modelled if (o := overload(r, name)) is not None]
    lead = "; ".join(over) + ". " if over else ""
    band = f"a factor of {TOLERANCE:g}"
    small = [r for r, _, _ in compared if r.histogram.count < MIN_JUDGED]
    enough = [(r, m, p) for r, m, p in compared if r.histogram.count >= MIN_JUDGED]
    within = [r for r, m, p in enough if agrees(m, p)]
    below = [r for r, m, p in enough if not agrees(m, p) and m < p]
    beyond = [r for r, m, p in enough if not agrees(m, p) and m >= p]
    if len(compared) == 1:
        r, measured, predicted = compared[0]
        figures = f"measured p99 {measured:.2f} ms is {_times(measured, predicted)} the predicted {predicted:.2f} ms"
    else:
        figures = "p99 measured/predicted: " + ", ".join(
            f"{name(r)} {measured:.2f}/{predicted:.2f} ms ({_times(measured, predicted)})"
            for r, measured, predicted in compared
        )
    figures += _fixed_clause(modelled, fixed)
    several = len(compared) > 1
    clauses = [_too_small(small, several, name)] if small else []
    if within:
        who = ("each" if len(within) == len(compared) else ", ".join(name(r) for r in within)) if several else ""
        explains = (
            "so their queues account for the differences between them" if len(within) == len(compared) > 1 else ""
        )
        clauses.append(
            f"{who} within {band} of what queueing alone predicts".strip() + (f", {explains}" if explains else "")
        )
    if below:
        # a herd, a lock or a slow client adds latency: none of them can explain a run faster than predicted
        who = ", ".join(name(r) for r in below) + " " if several else ""
        clauses.append(
            f"{who}below what queueing predicts by more than {band}: a herd, a lock or the client would lengthen "
            "latencies, so the "
            f"model's inputs (service time, discipline) do not fit {'that run' if several else 'this run'}{NOISE}"
        )
    if beyond:
        who = ", ".join(name(r) for r in beyond) + " " if several else ""
        clauses.append(f"{who}above what queueing predicts by more than {band}: {_else(beyond, name)}{NOISE}")
    return lead + figures + ": " + "; ".join(clauses)


def queueing_explains(runs: Sequence[LatencyResult]) -> bool | None:
    """Whether every mode's measured p99 is within the model's tolerance of its own prediction (one round of
    a comparison); None when fewer than two runs have a model."""
    compared, _ = judged(runs)
    if len(compared) < 2 or any(r.histogram.count < MIN_JUDGED for r, _, _ in compared):
        return None  # a run too small to judge: the round says nothing either way
    return all(agrees(measured, predicted) for _, measured, predicted in compared)


def model_agreement(rounds: Sequence[Sequence[LatencyResult]]) -> str | None:
    """Over repeated rounds: in how many queueing alone explained every mode's p99 (noise said)."""
    said = [e for e in (queueing_explains(r) for r in rounds) if e is not None]
    if not said:
        return None
    within = sum(said)
    return (
        f"queueing alone explains every mode's p99 (within a factor of {TOLERANCE:g} of its prediction) in "
        f"{within}/{len(said)} runs"
    )
