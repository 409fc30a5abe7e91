"""A ramp from client hosts at a server elsewhere (--clients with --target): this host only coordinated, so its
kernel counters and CPUs are none of a step's, and its 'seen' line (stored with the step, decisive for a knee's
'There: ...') must not read them. test_cluster_coordinator_readings.py covers the reports from saved files; this
real run covers what a file cannot: that the run itself tells signals() so. This host's readings are made to
move (an overflow count that grows, every CPU busy), as other traffic on a shared machine moves them."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import test_clients_faults
from cluster import Cluster, cluster_fixture
from test_clients_faults import own_config

from accept_order.core.hosts import ClientHosts
from accept_order.core.spec import ServerSpec

cluster = cluster_fixture(clients=1)
server = test_clients_faults.server  # the fixture: `accept-order serve -w 3` in srv


def test_a_ramp_that_only_coordinated_sees_nothing_of_this_host(
    cluster: Cluster, server: tuple[object, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accept_order.experiments.ramp import run as ramp_run

    reads = itertools.count()
    real = ramp_run.netstat.read_counters
    monkeypatch.setattr(
        ramp_run.netstat, "read_counters", lambda: {**real(), "TcpExtListenOverflows": 50 * next(reads)}
    )
    ticks = itertools.count(1)
    monkeypatch.setattr(ramp_run, "machine_cpu", lambda: (tick := 1000 * next(ticks), tick))  # every tick busy
    _, address, _ = server
    host, port = address.rsplit(":", 1)
    spec = ServerSpec(kind="remote", mode="remote", host=host, port=int(port), workers=3)
    hosts = ClientHosts(("c1",), ssh_config=own_config(cluster, tmp_path))
    result = ramp_run.run_ramp(spec, ramp_run.RampPlan(concurrencies=(2,), step_s=0.3, client_hosts=hosts))
    (step,) = result.steps
    assert sum(step.served) > 0 and step.hosts, step
    # measured and kept as this host's: the file holds what was read, the report says whose it is
    assert step.counters.get("TcpExtListenOverflows") == 50 and step.machine_cpu == 1.0, step
    assert not [s for s in step.seen if "overflowed" in s or "busy host-wide" in s], step.seen
