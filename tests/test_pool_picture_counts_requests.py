"""A keep-alive pool's latency picture (latency --pool -c 16) counts and times requests, each over its connection:
its axis read 'connections' for 745 requests over 16 connections, and a pool run cut short 'interrupted after
3841 connections' of 8. Both now say requests where the load kept its connections; other loads keep 'connections'."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from accept_order.experiments.latency.plot import latency_figure
from accept_order.experiments.latency.result import LatencyResult
from accept_order.render.plots import PlotOptions

DATA = Path(__file__).parent / "data"
POOL = DATA / "first_hour_5_nginx_pool.json"  # latency --server nginx -w 2 --pool -c 4: 381 requests
CLOSED = DATA / "golden" / "latency.json"  # 200 connections, one request each


def _said(result: LatencyResult, cdf: bool = False) -> list[str]:
    figure = latency_figure(result, PlotOptions(cdf=cdf))
    try:
        legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes if ax.get_legend() is not None)]
        return [ax.get_ylabel() for ax in figure.axes] + [t.get_text() for lg in legends for t in lg.get_texts()]
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


@pytest.mark.parametrize("cdf", [False, True], ids=["histogram", "cdf"])
def test_a_pool_s_picture_counts_requests(cdf: bool) -> None:
    said = _said(LatencyResult.from_dict(json.loads(POOL.read_text())), cdf)
    assert said[0] == ("share of requests this fast or faster" if cdf else "requests")


@pytest.mark.parametrize("cdf", [False, True], ids=["histogram", "cdf"])
def test_other_loads_keep_connections(cdf: bool) -> None:
    said = _said(LatencyResult.from_dict(json.loads(CLOSED.read_text())), cdf)
    assert said[0] == ("share of connections this fast or faster" if cdf else "connections")


def test_a_pool_cut_short_says_the_requests_it_finished() -> None:
    result = dataclasses.replace(LatencyResult.from_dict(json.loads(POOL.read_text())), interrupted=True)
    assert any(text.endswith(f"(interrupted after {result.driven} requests)") for text in _said(result))
