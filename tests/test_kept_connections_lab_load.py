"""Review of issue 28 §2 (long-lived load in the lab): what a run over kept connections says, and that a run
of one request per connection says and saves exactly what it did before kept connections existed.

Results are made by hand, shaped as the load saves them (a pool of connections kept for the whole run, or one
request per connection), so each assertion is about what the report or the file makes of known figures."""

from __future__ import annotations

import dataclasses
import io
import json

from conftest import assert_one_error_line, run_cli
from rich.console import Console, RenderableType

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.documents import file_kinds
from accept_order.experiments.latency.besides_queueing import seen_besides_queueing
from accept_order.experiments.latency.kept_report import kept_lines
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.loads.generator import merge as merge_reports
from accept_order.results.merge import merge

ENV = Environment("Linux", "6.18", "x86_64", 16, 65536, "3.11", "host", "2026-11-20T00:00:00+00:00")

# The fields a saved model held before kept connections (0.4): a one-request run's file must hold these only.
MODEL_BEFORE = {
    "discipline", "batch", "loop", "concurrency", "rate", "workers", "service_source", "service_count",
    "service_mean_ms", "simulated", "p50_ms", "p99_ms", "p999_ms", "dev_ms", "mean_ms", "min_ms",
}  # fmt: skip


def run(
    held: tuple[int, ...] = (),
    per: int = 1,
    pool: bool = False,
    requests: int = 2000,
    concurrency: int = 8,
    mode: str = "epoll",
    errors: dict[str, int] | None = None,
    rate: float | None = None,
    fast_us: int = 1500,
) -> LatencyResult:
    """A run of `requests` over 2 workers (or len(held)), each timing 1 ms per request; `held`: the
    connections each worker accepted and held to the end (a kept run), else one request per connection."""
    workers = len(held) or 2
    counters = tuple(
        WorkerCounters(i, 1000 + i, accepts=held[i] if held else requests // workers,
                       service_us=((1000, requests // workers),), service_sum_us=1000 * (requests // workers))
        for i in range(workers)
    )  # fmt: skip
    hist = LatencyHistogram()
    hist.add(fast_us, requests // 2)
    hist.add(fast_us + 2500, requests - requests // 2)
    failed = sum((errors or {}).values())
    return LatencyResult(
        server=ServerSpec(mode=mode, workers=workers).validated(),
        load=ConcurrentLoad(
            connections=requests + failed,
            concurrency=concurrency,
            requests_per_connection=per,
            pool=pool,
            rate=rate,
        ).validated(),
        environment=ENV,
        port=8080,
        histogram=hist,
        errors=dict(errors or {}),
        served=tuple(requests // workers for _ in range(workers)),
        counters=counters,
        drivers=(DriverStats(0, concurrency, requests + failed, 2.0, 0.5, 0.0),),
        wall_s=2.0,
        connections=held,
        held_at_end=held,
        pool=(sum(held), sum(held)) if pool else None,
    )


def saved(result: LatencyResult) -> dict:
    """The run with its model, as its file holds it."""
    return json.loads(json.dumps(dataclasses.replace(result, model=predict(result)).to_dict()))


def test_a_one_request_runs_model_is_saved_as_before_kept_connections() -> None:
    """The pinned model's fields (connections, shares, each worker's p50 and p99) are not written for a
    model of one request per connection: its file is what it was before them (they were saved as [])."""
    one = saved(run())
    assert one["model"]["discipline"] != "pinned"
    assert set(one["model"]) == MODEL_BEFORE
    pinned = saved(run(held=(6, 2), per=0, pool=True))
    assert pinned["model"]["discipline"] == "pinned" and pinned["model"]["connections"] == [6, 2]
    assert LatencyResult.from_dict(pinned).model == predict(run(held=(6, 2), per=0, pool=True))
    assert LatencyResult.from_dict(one).model == predict(run())


def _lines(result: LatencyResult) -> str:
    return "\n".join(str(t) for t in kept_lines(result))


def test_a_mode_that_serves_to_the_end_says_never_answered_only_beyond_its_workers() -> None:
    """blocking serves each connection to its end: envoy#33707's 2 connections over 3 workers were all
    answered, so nothing is said of connections 'beyond the 3 held ones' (it was, untrue); 4 over 3 were not."""
    two = run(held=(1, 1, 0), per=0, pool=True, concurrency=2, mode="blocking")
    assert "never answered" not in _lines(two)
    four = dataclasses.replace(run(held=(1, 1, 1), per=0, pool=True, concurrency=4, mode="blocking"), pool=(3, 4))
    said = "with 4 connections kept for the whole run over 3 workers, connections beyond the 3 held ones were never"
    assert said in _lines(four)
    # without a pool the 4th waited for a held one to end with the load: answered, unless its request timed out
    unpooled = run(held=(1, 1, 1), per=0, concurrency=4, mode="blocking")
    assert "never answered" not in _lines(unpooled)
    assert "held ones waited in the accept queue until a held one ended" in _lines(unpooled)
    late = run(held=(1, 1, 1), per=0, concurrency=4, mode="blocking", errors={"timeout": 1})
    assert "held ones were never answered (1 timed out)" in _lines(late)


def test_a_pool_of_one_request_connections_is_refused_in_one_line() -> None:
    """--pool with one request per connection (the default) closed each pooled connection after the reply
    that filled the pool, then ran a one-request load ('1 requests per connection, opened as a pool first',
    held at end 0): refused up front, by every command that takes --pool, before a server starts."""
    for command in (  # each run short, should the check be missing
        ["latency", "-n", "20", "-c", "2"],
        ["sweep", "-n", "20", "-c", "2"],
        ["ramp", "--concurrency-steps", "2", "--step", "0.1s"],
    ):
        result = run_cli([*command, "-w", "1", "--pool"])
        assert_one_error_line(result, 2, "--pool keeps its connections", "--requests-per-connection 0")
    result = run_cli(["latency", "--server", "nginx", "--pool", "--requests-per-connection", "1"])
    assert_one_error_line(result, 2, "--pool keeps its connections")


def text(renderable: RenderableType) -> str:
    console = Console(width=1000, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def test_a_kept_runs_report_counts_requests_where_it_counted_connections() -> None:
    """Over kept connections each sample, failure and timed service is a request: the model's service time
    ('the workers' CPU per connection (mean 37 µs, 3000 connections)' for 3,000 requests over 600 connections
    to nginx), its fixed path ('every connection took ... set-up': a kept request sets nothing up), the
    failures, the interrupted note and an open loop's late starts said connections. A run of one request per
    connection still says connections, as before."""
    # the fastest request 2.5 ms, the model's 2 ms (a worker of 2 connections: one waits for the other)
    kept = run(held=(6, 2), per=0, pool=True, errors={"timeout": 1}, fast_us=2500)
    kept = dataclasses.replace(kept, model=predict(kept), interrupted=True)
    said = text(latency_report(kept))
    assert "timed by the workers (mean 1 ms, 1 ms to 1 ms by worker, 2000 requests)" in said
    assert "that every request took besides queueing, the fastest request's time over the model's fastest: the " \
        "kernel, the client" in said  # fmt: skip
    assert "1 of 2001 requests failed" in said
    assert "(requests under way at the stop are neither served nor failed)" in said
    assert " connections)" not in said.split("service time:")[1].splitlines()[0]
    cpu = dataclasses.replace(
        kept, counters=tuple(dataclasses.replace(c, service_us=(), cpu_s=1.0) for c in kept.counters)
    )
    assert "the workers' CPU per request (mean 1 ms, 2000 requests)" in text(
        latency_report(dataclasses.replace(cpu, model=predict(cpu)))
    )
    one = run(errors={"timeout": 1}, fast_us=2500)
    one = dataclasses.replace(one, model=predict(one), interrupted=True)
    said = text(latency_report(one))
    assert "timed by the workers (mean 1 ms, 1 ms to 1 ms by worker, 2000 connections)" in said
    assert "that every connection took besides queueing, the fastest connection's time over the model's fastest: " \
        "set-up, the kernel, the client" in said  # fmt: skip
    assert "1 of 2001 connections failed" in said
    assert "(connections under way at the stop are neither served nor failed)" in said


def test_an_open_loop_over_kept_connections_says_they_are_kept_and_counts_requests() -> None:
    """latency --rate 2000 --duration 2s --pool --requests-per-connection 0: the headline said 'open loop at
    2000/s, 2 s, at most 4 in flight' (nothing of the pool), and its late starts '164 of 4004 connections'."""
    kept = run(held=(4, 0), per=0, pool=True, concurrency=4, rate=2000.0)
    kept = dataclasses.replace(
        kept,
        load=dataclasses.replace(kept.load, connections=None, duration_s=2.0),
        drivers=(DriverStats(0, 4, 2000, 2.0, 0.5, 0.0, None, 164),),
    )
    said = text(latency_report(dataclasses.replace(kept, model=predict(kept))))
    assert "open loop at 2000/s, 2 s, each connection kept for the whole run, opened as a pool first, at most 4" in said
    assert "164 of 2000 requests were due while all 4 in flight were busy" in said
    assert "its ρ the busiest worker's" in said
    one = run(concurrency=4, rate=2000.0)
    one = dataclasses.replace(
        one,
        load=dataclasses.replace(one.load, connections=None, duration_s=2.0),
        drivers=(DriverStats(0, 4, 2000, 2.0, 0.5, 0.0, None, 164),),
    )
    said = text(latency_report(dataclasses.replace(one, model=predict(one))))
    assert "open loop at 2000/s, 2 s, at most 4 in flight" in said and "its ρ" not in said
    assert "164 of 2000 connections were due" in said


def test_a_load_stopped_with_nothing_in_flight_lists_no_failure() -> None:
    """A SIGTERM that stopped a pool's drivers between requests: each reported 0 aborted, and the report
    printed '0 of 185702 connections failed:' with '0 × aborted' under it (the file: errors {'aborted': 0})."""
    stats = DriverStats(0, 4, 10, 1.0, 0.1).to_dict()
    report = {"counts": [(100, 10)], "errors": {"aborted": 0}, "served": {0: 10}, "start": 0.0, "end": 1.0}
    merged = merge_reports(
        [report | {"stats": stats}, report | {"stats": stats | {"index": 1}, "errors": {"aborted": 2}}]
    )
    assert dict(merged.errors) == {"aborted": 2} and merged.failed == 2
    assert dict(merge_reports([report | {"stats": stats}]).errors) == {}


def test_latency_help_says_rate_counts_requests_over_kept_connections() -> None:
    """An open loop over kept connections starts requests at --rate (2000/s for 2 s over a pool: 4004
    requests, here); ramp's help said so of --rates, latency's only of --connections."""
    said = " ".join(run_cli(["latency", "--help"], columns=2000).stdout.split())
    assert "Not 1: --connections and --rate count requests" in said
    said = " ".join(run_cli(["sweep", "--help"], columns=2000).stdout.split())  # sweep has no --rate
    assert "Not 1: --connections counts requests" in said and "--rate count" not in said


def test_a_pinned_model_of_k_requests_says_its_counts_are_the_end_scaled() -> None:
    """nginx, 5 requests per connection over 8 clients: the table said 'held at end 5 1' and the model's note
    'connections held per worker: 7/1' with nothing to tie them (the model scales the end's snapshot to -c)."""
    five = run(held=(5, 1), per=5)
    said = text(latency_report(dataclasses.replace(five, model=predict(five))))
    assert "(connections held per worker: 7/1; connections of K > 1 requests come and go: those held when the " \
        "load ended, scaled to its clients)" in said  # fmt: skip
    kept = run(held=(6, 2), per=0, pool=True)
    said = text(latency_report(dataclasses.replace(kept, model=predict(kept))))
    assert "(connections held per worker: 6/2)" in said


def test_merged_pools_hold_at_the_end_what_the_last_held_one_after_the_other() -> None:
    """Two pools of 4 over 2 workers merged: one after the other, the merged run held 6 2 at its end and at
    its peak with -c 4 (the two runs' added); held at the end is the later run's, the peak each worker's
    larger. Run at once (--concurrent, two client hosts), both are held: they add."""
    first, later = (
        saved(run(held=(2, 2), per=0, pool=True, concurrency=4)),
        saved(run(held=(4, 0), per=0, pool=True, concurrency=4)),
    )
    later["environment"]["started_at"] = "2026-11-20T00:01:00+00:00"  # another measurement
    for doc in (first, later):
        for c, n in zip(doc["counters"], doc["held_at_end"], strict=True):
            c["held_peak"] = n
    _, one_after = merge([("a", "latency", first), ("b", "latency", later)], file_kinds())
    assert one_after["held_at_end"] == [4, 0] and [c["held_peak"] for c in one_after["counters"]] == [4, 2]
    assert one_after["connections"] == [6, 2] and one_after["pool"] == {"opened": 8, "planned": 8}
    _, at_once = merge([("a", "latency", first), ("b", "latency", later)], file_kinds(), concurrent=True)
    assert at_once["held_at_end"] == [6, 2] and [c["held_peak"] for c in at_once["counters"]] == [6, 2]


def test_sleeps_between_a_kept_connections_requests_are_no_herd() -> None:
    """A worker holding kept connections sleeps between their requests: blocking over a pool stopped while it
    filled (4 requests, 6 sleeps) was said to have 'woke 1.5 workers per connection (a herd)'. The same
    sleeps over one-request connections are a herd."""
    kept = run(held=(2, 2), per=0, pool=True, concurrency=4, mode="blocking", requests=4)
    kept = dataclasses.replace(
        kept, counters=tuple(dataclasses.replace(c, voluntary_switches=3) for c in kept.counters)
    )
    assert not [s for s in seen_besides_queueing(kept) if "herd" in s]
    one = dataclasses.replace(run(mode="blocking", requests=4), counters=kept.counters)
    assert "blocking woke 1.5 workers per connection (a herd)" in seen_besides_queueing(one)
