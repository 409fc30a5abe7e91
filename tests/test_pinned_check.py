"""The model check of a run whose connections carry several requests each: predicted under `pinned` (each
request queued at the worker that holds its connection), saved and read back, and judged. Result files are
made by hand, shaped as a pool run saves them: what each "measured" is the pinned model's own run (another
seed) plus a fixed path every connection takes, so queueing explains it and the sentence must say so; with a
stall the model cannot make, it must say that instead (as test_model_at_scale.py does for the accept modes).

The run's held connections reach the model through `held_connections` (what the load's client saw: the
connections each worker held when the last request was issued, or those it accepted)."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from accept_order.analysis.queueing import Arrivals, simulate
from accept_order.core import service_time
from accept_order.core.errors import ResultFileError
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.model_check import Held, held_connections, predict, service_of
from accept_order.experiments.latency.model_report import model_report
from accept_order.experiments.latency.model_verdict import model_line, queueing_explains
from accept_order.experiments.latency.result import LatencyResult

ENV = Environment("Linux", "6.18", "x86_64", 16, 65536, "3.11", "host", "2026-11-20T00:00:00+00:00")


def _service_pairs(mean_us: int, requests: int, seed: int) -> tuple[tuple[int, int], ...]:
    """A worker's service-time histogram: the handler's loop, ±15% (bucketed as the workers bucket it)."""
    rng = random.Random(seed)
    counts: dict[int, int] = {}
    for _ in range(requests):
        b = service_time.bucket(round(mean_us * rng.uniform(0.85, 1.15)))
        counts[b] = counts.get(b, 0) + 1
    return tuple(sorted(counts.items()))


def pool_run(held: tuple[int, ...], requests: int = 20_000, mean_us: int = 1000, mode: str = "epoll") -> LatencyResult:
    """A closed loop over a pool of sum(held) connections that lived for the whole run (--pool
    --requests-per-connection 0), worker w holding held[w] of them, each worker timing its requests; the
    histogram a placeholder."""
    workers = len(held)
    counters = tuple(
        WorkerCounters(i, 1000 + i, accepts=n, service_us=(pairs := _service_pairs(mean_us, requests // workers, i)),
                       service_sum_us=sum(v * k for v, k in pairs))
        for i, n in enumerate(held)
    )  # fmt: skip
    hist = LatencyHistogram()
    hist.add(1000, requests)
    return LatencyResult(
        server=ServerSpec(mode=mode, workers=workers).validated(),
        load=ConcurrentLoad(connections=requests, concurrency=sum(held), requests_per_connection=0, pool=True),
        environment=ENV,
        port=8080,
        histogram=hist,
        errors={},
        served=tuple(requests // workers for _ in held),
        counters=counters,
        drivers=(DriverStats(0, sum(held), requests, 10.0, 2.0, 0.0),),
        wall_s=10.0,
        connections=held,
        held_at_end=held,
        pool=(sum(held), sum(held)),
    )


def measured(run: LatencyResult, held: tuple[int, ...], fixed_us: int, stall_us: int = 0) -> LatencyResult:
    """The run with what it "measured": each worker's own closed queue of its connections, simulated with
    another seed than the model's, its requests in the model's shares, plus the fixed path (and a 20 ms stall
    on 2% of the requests), read back from the JSON it saves."""
    model = predict(run)
    assert model is not None and model.discipline == "pinned" and model.connections == held
    sampler, _, _ = service_of(run)  # type: ignore[misc]
    assert isinstance(sampler, list)
    hist, served, rng = LatencyHistogram(), [], random.Random(5)
    for w, n in enumerate(held):
        count = round(run.ok * model.shares[w])
        served.append(count)
        if not n or count < 2:
            continue
        sim = simulate(1, "shared", Arrivals.closed(n), sampler[w], count, seed=99 + w, warmup=0.0)
        for us in sim.sojourn:
            hist.add(round(us) + fixed_us + (stall_us if rng.random() < 0.02 else 0))
    run = dataclasses.replace(run, histogram=hist, served=tuple(served))
    saved = dataclasses.replace(run, model=predict(run)).to_dict()
    return LatencyResult.from_dict(json.loads(json.dumps(saved)))


def test_a_pool_of_32_over_4_is_judged_within_and_a_stall_above() -> None:
    """32 connections held (9, 8, 8, 7): each request waits for about 8 others' services. The model's own
    run with another seed is within; 2% of requests 20 ms later is above."""
    held = (9, 8, 8, 7)
    fits = measured(pool_run(held), held, fixed_us=300)
    assert fits.model is not None and fits.model.queue == "pinned" and fits.model.connections == held
    assert fits.model.shares == pytest.approx((0.25,) * 4, abs=0.01)  # timed ±15% each: nearly identical
    assert fits.model.p50_ms == pytest.approx(8.0, rel=0.05)
    line = model_line([fits]) or ""
    assert "within a factor of 1.25 of what queueing alone predicts" in line, line
    stalled = measured(pool_run(held), held, fixed_us=300, stall_us=20_000)
    line = model_line([stalled]) or ""
    assert "above what queueing predicts by more than a factor of 1.25: something else is at work" in line, line
    assert queueing_explains([fits, stalled]) is False
    notes = [getattr(part, "plain", "") for part in model_report([fits])]
    assert any(n.endswith("pinned = each request queued at the worker that holds its connection (connections "
                          "held per worker: 9/8/8/7)") for n in notes), notes  # fmt: skip
    one_each = dataclasses.replace(fits.load, requests_per_connection=1, pool=False)
    plain = dataclasses.replace(fits, model=predict(dataclasses.replace(fits, load=one_each)))
    assert not any("pinned" in getattr(part, "plain", "") for part in model_report([plain]))


def test_all_on_one_worker_is_four_times_the_wait_and_only_pinned_explains_it() -> None:
    """(32, 0, 0, 0): one worker serves every request, each waiting for 31 others. Judged as one request per
    connection (a shared queue of 4) the same measurement is far above; pinned, it is within."""
    held = (32, 0, 0, 0)
    run = measured(pool_run(held), held, fixed_us=300)
    assert run.model is not None and run.model.shares == (1.0, 0.0, 0.0, 0.0)
    assert run.model.p50_ms == pytest.approx(32.0, rel=0.05)
    assert run.model.worker_p99_ms[1:] == (None, None, None)
    assert "within a factor of 1.25" in (model_line([run]) or "")
    one_each = dataclasses.replace(run, load=dataclasses.replace(run.load, requests_per_connection=1, pool=False))
    as_shared = dataclasses.replace(run, model=predict(one_each))  # one request per connection: the accept mode's
    assert as_shared.model is not None and as_shared.model.discipline == "favoured"
    assert as_shared.model.mean_ms == pytest.approx(8.0, rel=0.05)  # C·S/N (Little)
    assert "above what queueing predicts" in (model_line([as_shared]) or "")


def test_envoy_two_connections_on_three_workers() -> None:
    """envoy#33707's 2 long-lived connections on 3 workers: one worker holding both has each request wait for
    the other (p50 2 services); one each, 1 service. Each is within its own prediction, not the other's."""
    both = measured(pool_run((2, 0, 0), requests=6_000), (2, 0, 0), fixed_us=100)
    apart = measured(pool_run((1, 1, 0), requests=6_000), (1, 1, 0), fixed_us=100)
    assert both.model is not None and apart.model is not None
    assert both.model.p50_ms == pytest.approx(2.0, rel=0.05) and apart.model.p50_ms == pytest.approx(1.0, rel=0.05)
    assert both.model.shares == (1.0, 0.0, 0.0) and apart.model.shares == pytest.approx((0.5, 0.5, 0.0), abs=0.01)
    assert both.histogram.percentile(50) / 1000 == pytest.approx(2.1, rel=0.05)  # 2 services and the fixed path
    assert "within" in (model_line([both]) or "") and "within" in (model_line([apart]) or "")
    swapped = dataclasses.replace(both, model=apart.model)
    assert "above what queueing predicts" in (model_line([swapped]) or "")


def test_the_adapter_reads_the_runs_own_held_connections() -> None:
    run = pool_run((9, 8, 8, 7))
    assert held_connections(run) == Held(0, (9, 8, 8, 7))
    one_each = dataclasses.replace(run.load, requests_per_connection=1, pool=False)
    assert held_connections(dataclasses.replace(run, load=one_each)) is None  # the accept disciplines apply
    # K = 0: what was held is what loads the workers, not the -c planned (one connection failed early)
    assert held_connections(dataclasses.replace(run, held_at_end=(9, 8, 8, 6))) == Held(0, (9, 8, 8, 6))
    # K > 1: connections come and go; the hold at the end stands for it, split over the 32 clients by largest
    # remainders (a connection between one close and the next open was held by nobody at that moment)
    churn = dataclasses.replace(run, load=dataclasses.replace(run.load, requests_per_connection=4, pool=False),
                                held_at_end=(15, 9, 4, 2), connections=(400, 400, 400, 400))  # fmt: skip
    assert held_connections(churn) == Held(4, (16, 10, 4, 2))
    # nothing held at the end: the accepts instead; nothing known: no pinned model
    assert held_connections(dataclasses.replace(churn, held_at_end=(0, 0, 0, 0))) == Held(4, (8, 8, 8, 8))
    assert held_connections(dataclasses.replace(run, held_at_end=(), connections=())) is None
    model = predict(dataclasses.replace(churn, held_at_end=(32, 0, 0, 0)))
    assert model is not None and model.discipline == "pinned" and model.p50_ms == pytest.approx(32.0, rel=0.05)


def test_a_pinned_model_is_saved_and_older_models_still_load() -> None:
    held = (9, 8, 8, 7)
    run = measured(pool_run(held), held, fixed_us=300)
    doc = run.to_dict()
    assert doc["model"]["discipline"] == "pinned" and tuple(doc["model"]["connections"]) == held
    assert LatencyResult.from_dict(doc).model == run.model
    older = dict(doc["model"], discipline="favoured")
    for key in ("connections", "shares", "worker_p50_ms", "worker_p99_ms"):
        del older[key]
    back = LatencyResult.from_dict(doc | {"model": older}).model
    assert back is not None and back.connections == () and back.shares == ()
    with pytest.raises(ResultFileError, match="discipline"):
        LatencyResult.from_dict(doc | {"model": dict(doc["model"], discipline="stuck")})
    with pytest.raises(ResultFileError, match="connections"):
        LatencyResult.from_dict(doc | {"model": dict(doc["model"], connections=[9, -1])})


def test_an_open_loop_pool_names_its_busiest_workers_load() -> None:
    """At 3,000 requests/s over (3, 1) with 1 ms each: ρ 0.75 over both workers, but the worker holding 3 of
    the 4 connections is fed 2,250/s, ρ 2.25: its queue grows, and the utilisation said is that one's."""
    run = pool_run((3, 1), requests=4_000)
    run = dataclasses.replace(run, load=dataclasses.replace(run.load, rate=3000.0))
    model = predict(run, held=Held(0, (3, 1)))
    assert model is not None and model.loop == "open-loop" and model.shares == (0.75, 0.25)
    assert model.utilisation == pytest.approx(2.25, rel=0.02)
    assert model.worker_p99_ms[0] is not None and model.worker_p99_ms[1] is not None
    assert model.worker_p99_ms[0] > 100 * model.worker_p99_ms[1]
    # the run's own 3,000 requests at that worker (from empty, all measured), each arriving 1/2,250 s after the
    # one before and served in S: the 99th percentile's waited 0.99 × 3,000 × (S - 0.44 ms)
    grows = model.service_mean_ms - 1000 / 2250
    assert model.worker_p99_ms[0] == pytest.approx(0.99 * 3000 * grows, rel=0.03)
