"""Review P: 'this run's own 0%' where the server's CPU cannot be read (a server of the remote kind on this host,
whose processes are not the tool's): no workers' figures, so the run's share of the busy CPUs is not known. The
busy share is said alone (render/evidence.machine_busy with own_cpus None), in latency's note and ramp's 'seen'.
Saved files edited here (tests/data/v2/latency-hosts.json)."""

from __future__ import annotations

import dataclasses
from typing import Any

from test_client_host_cpu_is_the_runs import _busy_hosts_run, _ramp_step, _result


def _remote_here() -> dict[str, Any]:
    """A run at a server of the remote kind on this host, driven from here: its workers' CPU not read."""
    document = _busy_hosts_run(("", ""))
    del document["hosts"]
    document["load"].pop("clients", None)
    document["server"] = document["server"] | {"mode": "remote", "server": "remote", "host": "127.0.0.1"}
    for counter in document["counters"]:
        counter["cpu_s"] = None
    return document


def test_a_server_whose_cpu_is_not_read_has_no_split_of_the_busy_cpus() -> None:
    from accept_order.experiments.latency.load_notes import host_notes

    result = _result(_remote_here())
    assert result.others_cpu_share is None
    assert result.host_busy_unsplit == (0.5, 0.2)  # the 4 drivers: 20 of 100 CPU-s
    (note,) = host_notes([result])
    assert "all CPUs 50% busy host-wide" in note.plain
    assert "this run's own" not in note.plain and "not known" in note.plain


def test_machine_busy_without_the_workers_cpu_says_no_share_of_this_run() -> None:
    from accept_order.render.evidence import machine_busy

    assert "this run's own" not in machine_busy(0.73, None, 2)
    assert "this run's own 10%" in machine_busy(0.73, 0.2, 2)


def test_a_ramp_step_without_the_workers_cpu_has_no_split_of_the_busy_cpus() -> None:
    from accept_order.experiments.ramp.step_verdict import signals

    step = dataclasses.replace(_ramp_step(("", "")), worker_cpu=())  # the remote kind: no worker CPU read
    seen = "; ".join(signals(step, workers=2, cpus=2))
    assert "all CPUs 98% busy host-wide" in seen and "this run's own" not in seen, seen
