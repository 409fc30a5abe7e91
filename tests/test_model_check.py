"""A model beside every latency measurement: each mode's discipline, the prediction from a run's own
figures, the sentence, and the Model table in `latency` and `show`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import run_cli

from accept_order.analysis.model_check import PINNED_ONLY, TOLERANCE, WHERE_READ, ModelCheck, discipline_of
from accept_order.analysis.queueing import DISCIPLINES
from accept_order.core.errors import ResultFileError
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.besides_queueing import seen_besides_queueing
from accept_order.experiments.latency.model_check import predict, service_of
from accept_order.experiments.latency.model_report import model_table_lines
from accept_order.experiments.latency.model_verdict import model_line
from accept_order.experiments.latency.result import LatencyCompareResult, LatencyResult
from accept_order.servers.registry import KINDS, known_mode

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")
GOLDEN = Path(__file__).parent / "data" / "golden"
SAMPLED = 5  # the 100 measurements of most runs below as 500: what a p99 needs to be judged (MIN_JUDGED)


def run_of(
    mode: str,
    measured_us: list[int],
    service: list[tuple[int, int]] = ((1000, 100),),  # type: ignore[assignment]
    switches: int | None = None,
    driver_cpu: float = 0.2,
    **server: object,
) -> LatencyResult:
    """A latency run of 2 workers, 4 clients, whose workers timed `service` and whose client saw `measured`, each
    measurement SAMPLED times (a run the model judges: MIN_JUDGED or more, the shape of `measured`)."""
    hist = LatencyHistogram()
    measured_us = [us for us in measured_us for _ in range(SAMPLED)]
    for us in measured_us:
        hist.add(us)
    total = sum(n for _, n in service)
    counters = tuple(
        WorkerCounters(
            i,
            100 + i,
            voluntary_switches=switches,
            service_us=tuple((v, n // 2) for v, n in service),
            service_sum_us=sum(v * (n // 2) for v, n in service),
        )
        for i in range(2)
    )
    return LatencyResult(
        server=ServerSpec(mode=mode, workers=2, **server).validated(),  # type: ignore[arg-type]
        load=ConcurrentLoad(connections=max(1, total), concurrency=4).validated(),
        environment=ENV,
        port=1234,
        histogram=hist,
        errors={},
        served=(len(measured_us) // 2, len(measured_us) - len(measured_us) // 2),
        counters=counters,
        drivers=(DriverStats(0, 4, len(measured_us), 1.0, driver_cpu, 0.0),),
        wall_s=1.0,
    )


def with_model(run: LatencyResult) -> LatencyResult:
    return dataclasses.replace(run, model=predict(run))


def test_every_mode_of_every_kind_has_a_discipline() -> None:
    for kind in KINDS.values():
        for info in kind.modes().values():
            how = discipline_of(info, ServerSpec(kind=kind.name, mode=info.name))
            assert how is not None and how[0] in DISCIPLINES, (kind.name, info.name)


@pytest.mark.parametrize(
    ("kind", "mode", "changes", "expected"),
    [
        ("builtin", "reuseport", {}, ("hash", 0)),
        ("builtin", "blocking", {}, ("shared", 1)),  # a blocking accept takes one per call
        ("builtin", "epoll", {"accept_batch": 4}, ("favoured", 4)),
        ("builtin", "accept-mutex", {}, ("holder", 0)),  # an accept lock: analysis/lock_holder.py
        ("nginx", "accept-mutex", {}, ("holder", 1)),  # multi_accept off, as the attached reading of it
        ("builtin", "fd-pass", {}, ("round-robin", 1)),
        ("builtin", "fd-pass", {"policy": "least-busy"}, ("shared", 1)),
        ("node", "sched-rr", {}, ("round-robin", 1)),
        # a spec made without a cap takes its server's own, as the command line's does (nginx: multi_accept off;
        # HAProxy: tune.maxaccept 4), and the model its
        ("nginx", "reuseport", {}, ("hash", 1)),
        ("haproxy", "threads", {}, ("shared", 4)),
        ("nginx", "reuseport", {"accept_batch": 0}, ("hash", 0)),
        ("haproxy", "threads", {"accept_batch": 0}, ("shared", 0)),
    ],
)
def test_a_modes_discipline_comes_from_its_metadata(kind: str, mode: str, changes: dict, expected: tuple) -> None:
    spec = ServerSpec(kind=kind, mode=mode, **changes)
    assert discipline_of(known_mode(kind, mode), spec) == expected


def test_service_time_sources_in_order() -> None:
    timed = run_of("blocking", [2000] * 100, service=[(1000, 40)])
    service, source, count = service_of(timed)  # type: ignore[misc]
    assert (source, count) == ("server", 40) and all(1000 <= s.mean < 1008 for s in service)  # one per worker
    one_timed = (timed.counters[0], dataclasses.replace(timed.counters[1], service_us=(), service_sum_us=None))
    service, source, count = service_of(dataclasses.replace(timed, counters=one_timed))  # type: ignore[misc]
    assert (source, count) == ("server", 20) and 1000 <= service.mean < 1008  # pooled: too few of its own
    counters = tuple(dataclasses.replace(c, service_us=(), service_sum_us=None, cpu_s=0.05) for c in timed.counters)
    cpu = dataclasses.replace(timed, counters=counters)
    service, source, count = service_of(cpu)  # type: ignore[misc]
    assert source == "cpu" and service.mean == pytest.approx(1e6 * 0.1 / (100 * SAMPLED))
    none = tuple(dataclasses.replace(c, cpu_s=None) for c in counters)
    configured = dataclasses.replace(cpu, counters=none, server=cpu.server.replace(work_us=700))
    service, source, count = service_of(configured)  # type: ignore[misc]
    assert (source, service.mean, count) == ("configured", 700, 0)
    assert service_of(dataclasses.replace(configured, server=cpu.server)) is None  # nothing to go on
    assert predict(dataclasses.replace(configured, server=cpu.server)) is None


def test_prediction_follows_the_runs_own_figures() -> None:
    """A closed loop of 4 clients on 2 workers, each request 1 ms: every request waits for one other
    (c·S/N = 2 ms), and a one-at-a-time shared queue makes that exact."""
    model = predict(run_of("blocking", [2000] * 100, service=[(1000, 1000)]))
    assert model is not None
    assert (model.discipline, model.batch, model.loop, model.concurrency) == ("shared", 1, "closed-loop", 4)
    assert model.service_source == "server"
    assert model.mean_ms == pytest.approx(2.0, rel=0.02)
    assert model.p99_ms < 2.1 and model.dev_ms < 0.05
    hashed = predict(run_of("reuseport", [2000] * 100, service=[(1000, 1000)]))
    assert hashed is not None and hashed.discipline == "hash" and hashed.p99_ms > 1.4 * model.p99_ms
    open_loop = run_of("blocking", [1000] * 100, service=[(1000, 1000)])
    open_loop = dataclasses.replace(open_loop, load=dataclasses.replace(open_loop.load, rate=500.0))
    light = predict(open_loop)
    assert light is not None and light.loop == "open-loop" and light.rate == 500.0
    assert light.p50_ms == pytest.approx(1.0, rel=0.02)  # a request every 2 ms, 2 workers: nobody waits


def test_one_run_within_or_beyond_the_tolerance() -> None:
    service = [(1000, 1000)]
    fits = with_model(run_of("blocking", [2000] * 100, service=service))
    assert "within a factor of 1.25 of what queueing alone predicts" in (model_line([fits]) or "")
    # every connection's fastest as the model's, 5 of 100 slower than it allows
    slow = with_model(run_of("blocking", [2000] * 95 + [round(2000 * TOLERANCE * 1.1)] * 5, service=service))
    line = model_line([slow]) or ""
    assert "something else is at work" in line and "no herd, lock or client delay" in line
    assert model_line([run_of("blocking", [2000] * 100)]) is None  # no model: nothing said


def test_several_modes_ratio_within_the_model() -> None:
    service = [(1000, 1000)]
    one = with_model(run_of("blocking", [2000] * 100, service=service))
    each = with_model(run_of("reuseport", [2000] * 100, service=service))
    assert each.model is not None and one.model is not None
    # measured exactly as predicted: the ratio of p99s agrees
    hist = LatencyHistogram()
    hist.add(round(each.model.p99_ms * 1000), 100 * SAMPLED)
    each = dataclasses.replace(each, histogram=hist)
    line = model_line([one, each]) or ""
    assert line.startswith("p99 measured/predicted: blocking 2.00/2.01 ms (0.99×), reuseport ")
    assert "each within a factor of 1.25 of what queueing alone predicts" in line


def test_several_modes_beyond_the_model_name_only_what_the_run_saw() -> None:
    service = [(1000, 1000)]
    one = with_model(run_of("blocking", [2000] * 100, service=service))
    herd = with_model(
        run_of("epoll-herd", [9000] * 100, service=service, switches=100 * SAMPLED)
    )  # 2 workers × 500 sleeps, 500 served: 2 each (3 each would be more than its 2 workers could wake)
    line = model_line([one, herd]) or ""
    assert (
        "epoll-herd above what queueing predicts by more than a factor of 1.25: something else is at work: "
        "epoll-herd woke 2.0 workers" in line
    )
    assert "behind a lock" not in line and "load generator" not in line
    lock = with_model(run_of("accept-mutex", [9000] * 100, service=service, driver_cpu=0.99))
    seen = seen_besides_queueing(lock)
    assert seen == [
        "accept-mutex takes connections behind a lock",
        "the load generator was short of CPU during accept-mutex",
    ]
    # a herd is only named when the wakeups are a herd's: one wakeup per connection is not
    assert seen_besides_queueing(run_of("epoll-herd", [9000] * 100, service=service, switches=50 * SAMPLED)) == []
    # nor are more sleeps than its workers could wake: 3 a connection of 2 workers slept for something else too
    assert seen_besides_queueing(run_of("epoll-herd", [9000] * 100, service=service, switches=150 * SAMPLED)) == []


def test_model_table_fits_80_columns() -> None:
    service = [(1000, 1000)]
    runs = [with_model(run_of(m, [123_456] * 100, service=service)) for m in ("epoll-shared", "reuseport-cpu")]
    lines = model_table_lines(runs, lambda r: r.server.label)
    assert len(lines) == 4 and all(len(line) <= 80 for line in lines)
    assert "favoured (all)" in lines[2] and "/123" in lines[2]


def test_model_is_saved_checked_and_optional_on_load() -> None:
    run = with_model(run_of("reuseport", [2000] * 100))
    doc = json.loads(json.dumps(run.to_dict()))
    assert LatencyResult.from_dict(doc) == run
    doc["model"]["discipline"] = "lifo"
    with pytest.raises(ResultFileError, match="discipline: expected one of"):
        LatencyResult.from_dict(doc)
    del doc["model"]
    assert LatencyResult.from_dict(doc).model is None  # files from 0.2 have none


def test_latency_prints_and_saves_the_model_and_show_prints_it(tmp_path: Path) -> None:
    out = tmp_path / "l.json"
    args = ["--modes", "blocking,reuseport", "-w", "2", "-n", "200", "-c", "8", "--work-us", "300"]
    result = run_cli(["latency", *args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "Model: queueing alone, 2 workers, 8 clients (closed loop): predicted/measured ms" in result.stdout
    doc = json.loads(out.read_text())
    assert [r["model"]["discipline"] for r in doc["runs"]] == ["shared", "hash"]
    assert all(r["model"]["service_source"] == "server" for r in doc["runs"])
    # The file's sentence is the model line of its own figures (whatever a loaded machine made of them).
    assert doc["model_verdict"] == model_line(LatencyCompareResult.from_dict(doc).runs)
    assert doc["model_verdict"].startswith("p99 measured/predicted: blocking ")
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and "Model: queueing alone" in shown.stdout
    assert doc["model_verdict"].split(":")[0] in shown.stdout.replace("\n", " ")
    csv = run_cli(["show", str(out), "--format", "csv", "--table", "model"])
    assert csv.exit_code == 0, csv.output
    header, *rows = csv.stdout.splitlines()
    assert header.startswith("run,discipline,batch") and len(rows) == 2
    doc["runs"][1]["model"]["p99_ms"] = -1.0
    out.write_text(json.dumps(doc))
    bad = run_cli(["show", str(out)])
    assert bad.exit_code == 1 and "runs[1].model.p99_ms" in bad.stderr and len(bad.stderr.splitlines()) == 1
    old = run_cli(["show", str(GOLDEN / "latency-compare.json")])  # saved before the model: none printed
    assert old.exit_code == 0 and "Model:" not in old.stdout


def test_a_model_check_has_a_shape_for_every_field() -> None:
    # a model of one request per connection leaves out the pinned model's own fields (test_kept_connections_lab_load.py)
    # and those filled only where something was read (cpu_share: test_model_cpu_waits.py)
    fields = {f.name for f in dataclasses.fields(ModelCheck)} - set(PINNED_ONLY) - set(WHERE_READ)
    assert fields <= set(with_model(run_of("blocking", [2000] * 100)).to_dict()["model"])


def test_a_client_on_the_workers_cpus_is_named_unless_it_has_its_own() -> None:
    """The model gives the client no share of the workers' CPUs: a driver that waited for a CPU 10% of its
    time on them is named; the same wait with --load-cpus (its own CPUs) is not the workers' doing."""
    service = [(1000, 1000)]
    run = run_of("blocking", [9000] * 100, service=service)
    waited = dataclasses.replace(run, drivers=(DriverStats(0, 4, 100, 1.0, 0.2, 0.10),))
    assert seen_besides_queueing(waited) == [
        "the load generator shared the workers' CPUs during blocking (it waited for one 10% of its time; "
        "--load-cpus gives it its own)"
    ]
    own = dataclasses.replace(waited, load=dataclasses.replace(waited.load, cpus=(1,)))
    assert seen_besides_queueing(own) == []
    assert seen_besides_queueing(run) == []  # a driver that never waited


def test_an_open_loop_says_its_utilisation_and_when_it_is_overloaded() -> None:
    from accept_order.experiments.latency.model_report import model_report

    service = [(1000, 1000)]  # 1 ms each, 2 workers: capacity 2000/s
    base = run_of("reuseport", [2000] * 100, service=service)
    calm = with_model(dataclasses.replace(base, load=dataclasses.replace(base.load, rate=1500.0)))
    assert calm.model is not None and calm.model.utilisation == pytest.approx(0.75, rel=0.02)
    assert "offered more" not in (model_line([calm]) or "")
    over = with_model(dataclasses.replace(base, load=dataclasses.replace(base.load, rate=2500.0)))
    assert over.model is not None and over.model.utilisation == pytest.approx(1.25, rel=0.02)
    line = model_line([calm, over]) or ""
    assert line.startswith("reuseport was offered more than its workers served (2,500/s offered, 500/s served; ρ 1.25)")
    assert "in the load generator" not in line  # no connection started late: the queue was the server's
    # every slot busy, 30 of 100 started late: the generator could not keep to the rate, whatever ρ says
    late = dataclasses.replace(calm, drivers=(dataclasses.replace(calm.drivers[0], late=30),),
                               wall_s=100 * SAMPLED / 1500,
                               histogram=_hist_of([2000] * 90 + [20_000] * 10))  # fmt: skip
    line = model_line([late]) or ""
    assert "offered more" not in line  # everything offered was served (1,500/s of 1,500/s): -c was the limit
    assert "30 of reuseport's connections waited in the load generator for one of its 4 slots" in line
    short = dataclasses.replace(late, wall_s=1.0 / 0.9 * 100 * SAMPLED / 1500)  # 90% of the rate served
    line = model_line([short]) or ""
    assert line.startswith("reuseport was offered more than its workers served (1,500/s offered, 1,350/s served;")
    assert "30 of 500 started late, all 4 in flight busy" in line and "in the load generator waiting" in line
    assert with_model(base).model is not None and with_model(base).model.utilisation is None  # type: ignore[union-attr]
    assert any("ρ 0.75" in getattr(part, "plain", "") for part in model_report([calm]))


def test_repeated_rounds_count_how_often_queueing_alone_explains_them() -> None:
    from accept_order.experiments.latency.model_verdict import model_agreement, queueing_explains

    service = [(1000, 1000)]
    fits = [with_model(run_of("blocking", [2000] * 100, service=service)),
            with_model(run_of("reuseport", [2000] * 100, service=service))]  # fmt: skip
    assert fits[0].model is not None and fits[1].model is not None
    # Measured p99 ratio set to what the model predicts (within) and to 4× that (beyond).
    predicted = fits[1].model.p99_ms / fits[0].model.p99_ms
    within = [fits[0], dataclasses.replace(fits[1], histogram=_hist(int(2000 * predicted)))]
    beyond = [fits[0], dataclasses.replace(fits[1], histogram=_hist(int(8000 * predicted)))]
    assert queueing_explains(within) is True and queueing_explains(beyond) is False
    assert queueing_explains(within[:1]) is None
    line = model_agreement([within, beyond, within])
    assert line is not None and line.endswith("in 2/3 runs")
    assert model_agreement([within[:1]]) is None


def _hist_of(values: list[int]) -> LatencyHistogram:
    h = LatencyHistogram()
    for us in values:
        h.add(us, SAMPLED)
    return h


def _hist(us: int) -> LatencyHistogram:
    h = LatencyHistogram()
    h.add(us, 100 * SAMPLED)
    return h


def test_a_saved_model_that_predicts_zero_is_said_not_a_traceback() -> None:
    """A file's model is checked for non-negative figures only: a p99 of 0 must not divide by zero."""
    run = with_model(run_of("blocking", [2000] * 100, service=[(1000, 1000)]))
    assert run.model is not None
    zero = dataclasses.replace(run, model=dataclasses.replace(run.model, p99_ms=0.0))
    line = model_line([zero]) or ""
    assert "is above the predicted 0.00 ms" in line and "something else is at work" in line


def test_an_overloaded_open_loop_is_simulated_at_the_runs_own_length() -> None:
    """Past the workers' capacity the queue grows with every arrival: 100 connections due at once on 2
    workers of 1 ms end by 50 ms, whatever ten times as many would have done."""
    run = run_of("blocking", [25_000] * (100 // SAMPLED), service=[(1000, 1000)])  # 100 measured
    run = dataclasses.replace(run, load=dataclasses.replace(run.load, connections=100, rate=1e6))
    model = predict(run)
    assert model is not None and model.simulated == 100
    assert model.p99_ms == pytest.approx(50.0, rel=0.05) and model.p50_ms == pytest.approx(25.0, rel=0.1)


def test_a_run_faster_than_the_model_names_no_mechanism_that_adds_latency() -> None:
    """A herd, a lock or a client short of CPU make latencies longer: a measured p99 well below the
    prediction is not theirs to explain."""
    fast = with_model(run_of("accept-mutex", [500] * 100, service=[(1000, 1000)], driver_cpu=0.99))
    assert seen_besides_queueing(fast)  # the lock and the client are there to be named, and are not
    line = model_line([fast]) or ""
    assert "below what queueing predicts" in line
    assert "something else" not in line and "behind a lock" not in line and "load generator" not in line


def test_a_fixed_path_is_added_to_each_prediction_and_said_when_it_is_most_of_the_latency() -> None:
    """2 µs of service under a 2 ms median: every connection's 2 ms is the path queueing leaves out (the
    fastest shows it). Each prediction carries it, and the sentence says it is most of the latency."""
    tiny = [(2, 1000)]
    runs = [with_model(run_of("blocking", [2000] * 100, service=tiny)),
            with_model(run_of("reuseport", [2100] * 100, service=tiny))]  # fmt: skip
    line = model_line(runs) or ""
    assert "predictions include 2.00 ms that every connection took besides queueing" in line, line
    assert "that is most of each run's median latency" in line and "each within" in line
    # a run whose median is 20 ms: 2 ms is not most of it, and it is not said
    slow = with_model(run_of("reuseport", [2000] * 10 + [20_000] * 90, service=tiny))
    assert "most of" not in (model_line([runs[0], slow]) or "")
    # the same with service near the median: the fixed path is none, and none is said
    real = [with_model(run_of("blocking", [2000] * 100, service=[(1000, 1000)]))]
    assert "predictions include" not in (model_line(real) or "")


def test_the_model_line_names_runs_as_their_table_does() -> None:
    """A sweep names its rows by cap: its model line must too, not 'epoll ... epoll's'."""
    service = [(1000, 1000)]
    runs = [with_model(run_of("epoll", [2000] * 100, service=service, accept_batch=1)),
            with_model(run_of("epoll", [6000] * 100, service=service, accept_batch=0))]  # fmt: skip
    line = model_line(runs, lambda r: f"{r.server.accept_batch or 'no'} limit") or ""
    assert line.startswith("p99 measured/predicted: 1 limit 2.00/2.01 ms (0.99×), no limit 6.00/3.01 ms"), line
    assert "; no limit above what queueing predicts" in line and "epoll" not in line
