"""Names from before 0.3 keep working for callers of the Python API (issue 15: nothing lost)."""

from __future__ import annotations

import dataclasses

import pytest

import accept_order
from accept_order.core.spec import ConcurrentLoad, ServerSpec


def test_server_is_kind_s_old_name_everywhere_a_spec_is_made_or_changed() -> None:
    assert ServerSpec(server="nginx").kind == "nginx"
    assert ServerSpec(server="nginx").server == "nginx"
    assert ServerSpec().replace(server="haproxy").kind == "haproxy"
    assert ServerSpec.from_dict({"server": "node", "mode": "sched-rr"}).kind == "node"
    with pytest.raises(TypeError, match="both server= and kind="):
        ServerSpec(server="nginx", kind="builtin")
    with pytest.raises(TypeError, match="both server= and kind="):
        dataclasses.replace(ServerSpec(), server="nginx")  # replace passes kind= too: refused, not dropped


def test_files_keep_storing_the_kind_as_server() -> None:
    data = ServerSpec(kind="gunicorn", mode="reuseport").to_dict()
    assert data["server"] == "gunicorn" and "kind" not in data
    assert ServerSpec.from_dict(data) == ServerSpec(kind="gunicorn", mode="reuseport")


def test_run_takes_server_as_before() -> None:
    with pytest.raises(accept_order.PlanError, match="haproxy has no mode 'nope'"):
        accept_order.run(mode="nope", server="haproxy")  # haproxy's own check ran: server= was understood


def test_the_load_s_old_names() -> None:
    from accept_order.experiments.session import run_closed_loop, run_latency
    from accept_order.loads.closed_loop import LoadGenerator, RequestTotals, run_load
    from accept_order.loads.generator import LoadGenerator as New

    assert accept_order.ClosedLoopLoad is ConcurrentLoad
    assert LoadGenerator is New and callable(run_load) and RequestTotals is not None
    assert run_closed_loop is run_latency
    assert ConcurrentLoad(rate=10.0).to_dict()["kind"] == "open-loop"
    assert ConcurrentLoad().to_dict()["kind"] == "closed-loop"


def test_a_kind_this_version_does_not_know_still_has_a_label() -> None:
    """A file from a newer version may name one (export reads labels before any check)."""
    assert ServerSpec(kind="lighttpd", mode="default").label == "lighttpd default"
    assert ServerSpec(kind="nginx", mode="epoll").label == "nginx epoll"
    assert ServerSpec(mode="epoll").label == "epoll"
