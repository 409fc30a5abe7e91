"""latency --clients c1,c2,c3 --target server:8080 printed 'kernel counters: none of 8 drop/overflow counters
moved (host-wide ...)' under 'Kernel evidence': the coordinator's counters, a host none of the run's connections
crossed, read as the run's. They are labelled as the coordinating host's now, and --observe-on brings the
server's own listen counters (observe reads them in the server's network namespace) beside its accepts."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from accept_order.core.hosts import ClientHosts
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.session import _generator
from accept_order.render.evidence import counters_text
from accept_order.render.observed_on import observed_parts
from accept_order.servers.remote import RemoteServer

WATCHED = ["TcpExtListenOverflows", "TcpExtListenDrops"]


def _text(parts: list[Any]) -> str:
    console = Console(width=300, record=True, file=io.StringIO())
    for part in parts:
        console.print(part)
    return console.export_text()


def _remote() -> RemoteServer:
    return RemoteServer(ServerSpec(kind="remote", host="192.0.2.1", port=8080, workers=2))


def test_a_load_from_client_hosts_marks_this_host_s_counters_as_none_of_its_own() -> None:
    server = _remote()
    assert server.own_evidence() == {}
    _generator(server, ConcurrentLoad(connections=10, concurrency=2, clients=ClientHosts(("c1", "c2"))))
    assert server.own_evidence() == {"traffic_elsewhere": True}


def test_a_load_from_this_host_leaves_them_the_client_s() -> None:
    server = _remote()
    _generator(server, ConcurrentLoad(connections=10, concurrency=2, clients=ClientHosts((), observe_on="srv")))
    assert server.own_evidence() == {}


def test_the_coordinator_s_counters_say_whose_they_are() -> None:
    evidence = {"counters_available": True, "counters": {}, "counters_watched": WATCHED, "shared_namespace": True}
    assert "only coordinated" not in counters_text(evidence).plain
    said = counters_text(evidence | {"traffic_elsewhere": True}).plain
    assert "kernel counters of this host, which only coordinated" in said and "none of 2" in said


def test_observe_on_says_the_server_s_listen_counters() -> None:
    worker = {"pid": 7, "tid": None, "accepts": 5, "served_by_replies": 5, "cpu_s": 0.1}
    seen = {"host": "server", "program": "nginx", "traced": True, "workers": [worker], "agrees": True}
    moved = _text(observed_parts({"observed_on": [seen | {"counters": {"TcpExtListenOverflows": 12}}]}))
    assert "on server: ListenOverflows +12 (the server's network namespace)" in moved
    calm = _text(observed_parts({"observed_on": [seen | {"counters": dict.fromkeys(WATCHED, 0)}]}))
    assert "on server: none of its 2 listen drop/overflow counters moved" in calm
    assert "on server:" not in _text(observed_parts({"observed_on": [seen]}))  # a file from before: nothing said


def test_observe_on_carries_the_server_s_counters_home() -> None:
    import dataclasses
    import json
    from pathlib import Path

    from accept_order.experiments.observe.remote import joined
    from accept_order.experiments.observe.result import ObserveResult

    golden = json.loads((Path(__file__).parent / "data" / "golden" / "observe.json").read_text())
    observed = dataclasses.replace(ObserveResult.from_dict(golden), counters={"TcpExtListenOverflows": 3})
    seen = joined("server", observed, [w.pid for w in observed.workers], [0] * len(observed.workers))
    assert seen["counters"] == {"TcpExtListenOverflows": 3}


def test_replies_that_named_no_worker_are_not_called_a_difference() -> None:
    """--target at a lighttpd (replies 'hi') with --observe-on: every worker's 'by replies' was '-', and the
    report blamed 'connections from elsewhere too, or replies named other workers'."""
    workers = [{"pid": p, "tid": None, "accepts": 1000, "served_by_replies": None} for p in (7, 8)]
    seen = {"host": "server", "program": "lighttpd", "traced": True, "workers": workers, "agrees": False}
    said = _text(observed_parts({"observed_on": [seen]}))
    assert "no reply named one of these workers" in said and "came from elsewhere" not in said
    workers[0]["served_by_replies"] = 900
    assert "came from elsewhere" in _text(observed_parts({"observed_on": [seen]}))
