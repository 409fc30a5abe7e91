"""Does queueing alone explain a latency run? The model's prediction for one run (analysis/model_check.py
simulates it) and the sentence that compares it with what was measured, with what the run itself saw
besides queueing (a herd, a lock, a saturated client)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ...analysis.herd import HERD_THRESHOLD, woken_per_connection
from ...analysis.model_check import (
    FEWEST,
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
)
from ...analysis.queueing import WARMUP, Arrivals, Service, simulate
from ...core import service_time
from ...core.models import Model
from ...core.run_warnings import WarningKind
from ...loads.generator import driver_warnings
from ...servers.registry import known_mode
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


def predict(result: LatencyResult, seed: int = SEED) -> ModelCheck | None:
    """The run's latency as queueing alone would make it; None when its mode or service time is unknown."""
    server, load = result.server, result.load
    how = discipline_of(known_mode(server.kind, server.mode), server)
    service = service_of(result)
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
    )


OTHERS_SEEN = 0.10  # other processes' share of all CPUs worth naming (render/evidence.OTHERS_SHOWN's)
CLIENT_WAIT = 0.02  # a client that waited for a CPU longer than this share of its time delayed replies


def _label(result: LatencyResult) -> str:
    return result.server.label


def seen_besides_queueing(result: LatencyResult, name: Callable[[LatencyResult], str] = _label) -> list[str]:
    """What the run itself saw that queueing does not model: a herd, a lock, a saturated client."""
    seen = []
    info = known_mode(result.server.kind, result.server.mode)
    woken = woken_per_connection(result.counters, result.ok)
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
        # The model gives each worker a CPU of its own and the client none of theirs. A client on the workers'
        # CPUs (no --load-cpus) reads a reply only when a busy-looping worker lets it run: that wait is timed.
        waited = max(((d.runqueue_s or 0) / d.wall_s for d in result.drivers if d.wall_s), default=0.0)
        if not result.load.cpus and waited > CLIENT_WAIT:
            seen.append(
                f"the load generator shared the workers' CPUs during {label} (it waited for one {100 * waited:.0f}% "
                "of its time; --load-cpus gives it its own)"
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


def _outside_the_model(run: LatencyResult) -> bool:
    """The run's service time is under a tenth of its measured median: what was measured is not queueing."""
    assert run.model is not None
    return run.model.service_mean_ms < 0.1 * run.histogram.percentile(50) / 1000


def model_line(runs: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> str | None:
    """One sentence: whether each measured p99 (one run), or each mode's p99 relative to the tightest's
    (several), is within what queueing alone predicts. None when no run has a model."""
    modelled = [r for r in runs if r.model is not None and r.ok]
    if not modelled:
        return None
    small = [r for r in modelled if _outside_the_model(r)]
    if small:
        # Service too short to queue behind: the latency is the kernel's and the client's, not the workers'
        # queues'; a ratio of two such predictions would say nothing.
        names = ", ".join(name(r) for r in small)
        return (
            f"the workers' service time ({names}) is under a tenth of the measured median: queueing at the "
            "workers cannot explain these latencies (they are the kernel's and the client's); give the "
            "workers --work to compare queues"
        )
    band = f"±{100 * (TOLERANCE - 1):.0f}%"
    if len(modelled) == 1:
        r = modelled[0]
        assert r.model is not None
        measured, predicted = r.histogram.percentile(99) / 1000, r.model.p99_ms
        # a saved model's p99 may be 0 (a file is checked for non-negative figures only): no ratio then
        times = f"{measured / predicted:.2f}×" if predicted > 0 else "above"
        ratio = f"measured p99 {measured:.2f} ms is {times} the predicted {predicted:.2f} ms"
        if agrees(measured, predicted):
            return f"{ratio}: within what queueing alone explains ({band})"
        if measured < predicted:  # a herd, a lock or a slow client adds latency: none of them can be named
            return (
                f"{ratio}: below what queueing predicts; a herd, a lock or the client would lengthen latencies, "
                f"so the model's inputs (service time, discipline) do not fit this run{NOISE}"
            )
        return f"{ratio}: {_else(modelled, name)}{NOISE}"
    best, compared = _compared(modelled)
    clauses = [
        f"{name(r)}'s p99 is {measured:.2f}× {name(best)}'s measured, {predicted:.2f}× predicted"
        for r, measured, predicted in compared
    ]
    odd = [r for r, measured, predicted in compared if not agrees(measured, predicted)]
    if not odd:
        return "; ".join(clauses) + f": within what queueing alone explains ({band})"
    return "; ".join(clauses) + f": beyond the model's {band}, " + _else([best, *odd], name) + NOISE


def _compared(modelled: Sequence[LatencyResult]) -> tuple[LatencyResult, list[tuple[LatencyResult, float, float]]]:
    """The run with the lowest p99, and for each other run its p99 relative to that one's: (run, measured
    ratio, predicted ratio)."""
    best = min(modelled, key=lambda r: r.histogram.percentile(99))
    assert best.model is not None
    compared = []
    for r in modelled:
        if r is best:
            continue
        assert r.model is not None
        measured = r.histogram.percentile(99) / max(best.histogram.percentile(99), 1)
        predicted = r.model.p99_ms / best.model.p99_ms if best.model.p99_ms > 0 else math.inf
        compared.append((r, measured, predicted))
    return best, compared


def queueing_explains(runs: Sequence[LatencyResult]) -> bool | None:
    """Whether every mode's p99 relative to the tightest's is within the model's tolerance (one round of a
    comparison); None when fewer than two runs have a model."""
    modelled = [r for r in runs if r.model is not None and r.ok]
    if len(modelled) < 2:
        return None
    return all(agrees(measured, predicted) for _, measured, predicted in _compared(modelled)[1])


def model_agreement(rounds: Sequence[Sequence[LatencyResult]]) -> str | None:
    """Over repeated rounds: in how many queueing alone explained the measured differences (noise said)."""
    said = [e for e in (queueing_explains(r) for r in rounds) if e is not None]
    if not said:
        return None
    within = sum(said)
    return (
        f"queueing alone explains the measured differences (p99 ratios within ±{100 * (TOLERANCE - 1):.0f}% of "
        f"the model's) in {within}/{len(said)} runs"
    )
