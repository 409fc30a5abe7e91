"""Review RF of 58dc36e (a pool's pictures count requests): two pictures still said connections of a load that kept
its connections. ramp's open loop over kept connections offers requests per second (its report: 'rates in requests
per second'; --in-flight's help), and its picture's axis and the dashed 'offered' line read 'new connections per
second'; sweep's throughput axis read 'connections/s' for a pool's requests per second."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from matplotlib.figure import Figure

from accept_order.core.concurrent_load import ConcurrentLoad
from accept_order.experiments.latency.plot import sweep_figure
from accept_order.experiments.latency.result import LatencyResult, SweepResult
from accept_order.experiments.ramp.plot import ramp_figure, ramp_rounds_figure
from accept_order.experiments.ramp.result import RampResult
from accept_order.render.plots import PlotOptions

DATA = Path(__file__).parent / "data"
# ramp --rates 200,400 --in-flight 4 --pool --requests-per-connection 0 --step 0.5s -w 2 (a real run's file)
RAMP = DATA / "review_rf_ramp_pool_rates.json"
POOL = DATA / "first_hour_5_nginx_pool.json"  # latency --server nginx -w 2 --pool -c 4


def _labels(figure: Figure) -> list[str]:
    try:
        said = [label for ax in figure.axes for label in (ax.get_xlabel(), ax.get_ylabel()) if label]
        legends = [t.get_text() for ax in figure.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        return said + legends
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


def test_a_rate_ramp_over_kept_connections_offers_requests_per_second() -> None:
    result = RampResult.from_dict(json.loads(RAMP.read_text()))
    assert result.plan.get("pool") and result.steps[0].kind == "rate"
    for said in (_labels(ramp_figure(result, PlotOptions())), _labels(ramp_rounds_figure([[result]], PlotOptions()))):
        assert "offered load, requests per second" in said
        assert not any("new connections" in s for s in said)
    assert "offered (requests per second)" in _labels(ramp_figure(result, PlotOptions()))


def test_a_rate_ramp_of_new_connections_says_so() -> None:
    result = RampResult.from_dict(json.loads(RAMP.read_text()))
    plan = {k: v for k, v in result.plan.items() if k not in ("pool", "requests_per_connection")}
    fresh = dataclasses.replace(result, plan=plan)
    said = _labels(ramp_figure(fresh, PlotOptions()))
    assert "offered load, new connections per second" in said and "offered (new connections per second)" in said


def test_a_pool_sweep_s_throughput_is_requests_per_second() -> None:
    pool = LatencyResult.from_dict(json.loads(POOL.read_text()))
    assert pool.load.keeps_connections
    assert "throughput, requests/s" in _labels(sweep_figure(SweepResult((pool,)), PlotOptions()))
    assert isinstance(pool.load, ConcurrentLoad)
    fresh = dataclasses.replace(pool, load=dataclasses.replace(pool.load, requests_per_connection=1, pool=False))
    assert "throughput, connections/s" in _labels(sweep_figure(SweepResult((fresh,)), PlotOptions()))
