"""--observe-on says that a client host lost mid-load, or a stop's connections under way, is why the kernel counted
more accepts than the replies named.

'latency --clients c1,c2,c3 --target NGINX --observe-on srv' with c2's interpreter SIGKILLed mid-run (namespace
cluster, nginx 1.22 with 4 workers, load 9) read 'Lost: c2: its connection closed after at least 7121 connections'
and, under the observe table (accepts 25,402/24,017/25,382/25,917, by replies 23,524/22,216/23,545/24,142), 'the
counts differ: connections came from elsewhere too, or replies named other workers'. No connection came from
elsewhere: nginx's access log had 48,987, 7,263 and 44,440 by the three hosts' addresses, and the accepts exceed the
replies' counts by 7,291, c2's connections (its 7,263 answered and those it left mid-request), whose replies the
coordinator never got. The observation now keeps the load's lost hosts (lost_hosts) and the line names them. A
Ctrl-C mid-load read the same line with the accepts 198 above the replies' counts and '198 connections under way at
the stop' beside it: the observation keeps those too (under_way), which the line names where they suffice.
"""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.host_outcome import NOT_REACHED, HostOutcome
from accept_order.experiments.observed_on import Watch
from accept_order.render.observed_on import observed_parts
from accept_order.results.evidence_shapes import OBSERVED_ON
from accept_order.results.schema import SchemaError

WORKERS = [(22975, 25402, 23524), (22976, 24017, 22216), (22977, 25382, 23545), (22978, 25917, 24142)]


def observation(
    lost: list[str] | None, workers: list[tuple[int, int, int]] = WORKERS, under_way: int = 0
) -> dict[str, Any]:
    seen: dict[str, Any] = {
        "host": "srv",
        "program": "nginx",
        "traced": True,
        "source": "counted by the kernel",
        "wall_s": 12.9,
        "mechanism": "epoll",
        "workers": [
            {"pid": pid, "tid": None, "accepts": accepts, "served_by_replies": served, "cpu_s": 1.0}
            for pid, accepts, served in workers
        ],
        "agrees": False,
        "notes": [],
        "counters": {},
    }
    return seen | ({"lost_hosts": lost} if lost is not None else {}) | ({"under_way": under_way} if under_way else {})


def said(seen: dict[str, Any]) -> str:
    console = Console(width=1000, record=True, file=io.StringIO())
    for part in observed_parts({"observed_on": [seen]}):
        console.print(part)
    return console.export_text()


def test_a_lost_host_is_named_as_why_the_accepts_exceed_the_replies() -> None:
    text = said(observation(["c2"]))
    assert (
        "the counts differ: the kernel counted 7,291 more accepts than the replies named; client host c2 was lost "
        "mid-load: what it drove was accepted here and left out of the replies' counts (the Lost line); connections "
        "from elsewhere would add to the accepts too"
    ) in text, text
    assert "replies named other workers" not in text


def test_without_a_lost_host_or_with_fewer_accepts_the_line_is_as_before() -> None:
    before = "the counts differ: connections came from elsewhere too, or replies named other workers"
    assert before in said(observation(None))  # a file from before lost_hosts
    assert before in said(observation([]))
    fewer = [(pid, served, accepts) for pid, accepts, served in WORKERS]  # a lost host cannot explain fewer accepts
    assert before in said(observation(["c2"], fewer))


# Ctrl-C of 'latency --clients c1,c2,c3 --target NGINX --observe-on srv' 6 s in: '198 connections under way at the
# stop', and the accepts exceeded the replies' counts by 198 (workers 0 and 1 here, from its file).
STOPPED = [(22975, 6100, 6000), (22976, 6098, 6000)]


def test_a_stops_connections_under_way_are_named_as_why_the_accepts_exceed_the_replies() -> None:
    text = said(observation(None, STOPPED, under_way=198))
    assert (
        "the counts differ: the kernel counted 198 more accepts than the replies named; the load stopped with 198 "
        "under way, which the server may have accepted unanswered\n"
    ) in text, text
    text = said(observation(None, STOPPED, under_way=150))  # at most 150 of them: the other 48 are not its
    assert "may have accepted unanswered; the other 48 came from elsewhere, or replies named other workers" in text


def test_the_saved_observation_with_lost_hosts_fits_its_shape_and_a_malformed_one_does_not() -> None:
    OBSERVED_ON.check(observation(["c2", "c3"]), "observed_on[0]")
    with pytest.raises(SchemaError, match=r"lost_hosts"):
        OBSERVED_ON.check(observation([3]), "observed_on[0]")  # type: ignore[list-item]
    with pytest.raises(SchemaError, match=r"under_way"):
        OBSERVED_ON.check(observation(None) | {"under_way": "198"}, "observed_on[0]")


def test_the_watch_keeps_the_loads_lost_hosts() -> None:
    observed = SimpleNamespace(
        workers=[
            SimpleNamespace(
                pid=pid, tid=None, accepts=accepts, cpu_s=1.0, connections_observed=None, bytes_in=None, bytes_out=None
            )
            for pid, accepts, _ in WORKERS
        ],
        traced=True,
        program="nginx",
        source="counted by the kernel",
        wall_s=12.9,
        mechanism=None,
        notes=(),
        counters={},
    )
    watch = Watch(SimpleNamespace(destination="srv", finish=lambda: observed))  # type: ignore[arg-type]
    hosts = (host("c1"), host("c2", "its connection closed after at least 7121 connections"))
    summary = SimpleNamespace(connections=None, served=tuple(s for _, _, s in WORKERS), hosts=hosts, errors={})
    target = SimpleNamespace(pids=tuple(pid for pid, _, _ in WORKERS))
    seen = watch.joined(target, summary)  # type: ignore[arg-type]
    assert seen["agrees"] is False and seen["lost_hosts"] == ["c2"] and "under_way" not in seen
    assert "lost_hosts" not in watch.joined(target, SimpleNamespace(**{**vars(summary), "hosts": hosts[:1]}))  # type: ignore[arg-type]
    stopped = SimpleNamespace(**{**vars(summary), "hosts": (), "errors": {"aborted": 198, "ECONNRESET": 2}})
    assert watch.joined(target, stopped)["under_way"] == 198  # type: ignore[arg-type]
    # a host a ramp's later step could not reach drove none of it (the others drove its share): not named as one
    # whose connections were accepted there unanswered
    unreached = (host("c1"), host("c2", f"{NOT_REACHED}: client host c2: could not be reached over ssh"))
    assert "lost_hosts" not in watch.joined(target, SimpleNamespace(**{**vars(summary), "hosts": unreached}))  # type: ignore[arg-type]


def host(name: str, lost: str | None = None) -> HostOutcome:
    return HostOutcome(name, LatencyHistogram(), {}, (), 0.0, lost=lost)
