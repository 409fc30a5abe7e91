"""A client host lost while a later load reads its clock is lost to that load alone, as one it cannot reach again.

'ramp --clients c1,c2,c3 --target NGINX --rates 1000,2000,3000 --step 4s' with c2's ssh session SIGKILLed 9 s in
(namespace cluster, load 5) stopped the ramp after its first step: 'Stopped early: client host c2: its connection
closed waiting for its clock (Connection to 10.177.254.12 closed by remote host.)', exit 1, where a host that cannot
be reached again at a later step is lost to that step (Gateways.unreached) and the others drive its share, as they do
for one lost mid-step. The kill fell between the steps, while the second step read the kept hosts' clocks. That is now
the same: the step runs on the others and names c2 'not reached for this load: ...'; the run's first load still stops
on it. Here the clock of c2 fails at the second step (its channel gone, as the kill leaves it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_clients_faults
from cluster import Cluster, cluster_fixture
from test_clients_faults import own_config

from accept_order.core.errors import LoadError
from accept_order.core.hosts import ClientHosts
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.ramp import run as ramp_run
from accept_order.loads.hosts import driven

cluster = cluster_fixture(clients=2)
server = test_clients_faults.server  # the fixture: `accept-order serve -w 3` in srv
WHY = "client host c2: its connection closed waiting for its clock"


def clock_lost_at(monkeypatch: pytest.MonkeyPatch, later: bool) -> None:
    """c2's clock fails in the run's first load (later False) or in a later one."""
    real = driven.HostsLoad._clock

    def clock(self: driven.HostsLoad, p: driven._Progress) -> None:
        if p.host.destination == "c2" and self.gateways.later == later:
            p.host.channel.close()  # gone, as a killed session leaves it: the run must not wait for it
            raise LoadError(WHY)
        real(self, p)

    monkeypatch.setattr(driven.HostsLoad, "_clock", clock)


def ramp(cluster: Cluster, server: tuple[object, str, Path], tmp_path: Path) -> ramp_run.RampResult:
    host, port = server[1].rsplit(":", 1)
    spec = ServerSpec(kind="remote", mode="remote", host=host, port=int(port), workers=3)
    hosts = ClientHosts(("c1", "c2"), ssh_config=own_config(cluster, tmp_path))
    # keep_going: the second step runs however a busy machine judges the first (one failed connection ends a ramp)
    return ramp_run.run_ramp(
        spec, ramp_run.RampPlan(concurrencies=(2, 4), step_s=0.3, keep_going=True, client_hosts=hosts)
    )


def test_a_host_lost_while_a_later_steps_clocks_are_read_is_lost_to_that_step(
    cluster: Cluster, server: tuple[object, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock_lost_at(monkeypatch, later=True)
    result = ramp(cluster, server, tmp_path)
    first, second = result.steps
    assert [h.lost for h in first.hosts] == [None, None] and all(h.ok for h in first.hosts), first.hosts
    c1, c2 = second.hosts
    assert c1.lost is None and c1.ok > 0 and sum(second.served) == c1.ok, second
    assert c2.lost == f"not reached for this load: {WHY}" and c2.ok == 0, c2


def test_a_host_lost_while_the_first_loads_clocks_are_read_stops_the_run(
    cluster: Cluster, server: tuple[object, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock_lost_at(monkeypatch, later=False)
    with pytest.raises(LoadError, match=WHY):
        ramp(cluster, server, tmp_path)


def test_a_host_lost_to_a_later_rate_step_leaves_its_share_of_the_rate_to_the_others(
    cluster: Cluster, server: tuple[object, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """c1 alone drives the second step's whole rate, and the step is judged on the whole: c2 drove none of it."""
    clock_lost_at(monkeypatch, later=True)
    given: list[list[float | None]] = []  # the rates per host of each split, in order
    real = driven.shares

    def shares(load: ConcurrentLoad, hosts: int) -> list[ConcurrentLoad]:
        parts = real(load, hosts)
        given.append([part.rate for part in parts])
        return parts

    monkeypatch.setattr(driven, "shares", shares)
    host, port = server[1].rsplit(":", 1)
    spec = ServerSpec(kind="remote", mode="remote", host=host, port=int(port), workers=3)
    hosts = ClientHosts(("c1", "c2"), ssh_config=own_config(cluster, tmp_path))
    plan = ramp_run.RampPlan(rates=(20.0, 40.0), step_s=1.0, keep_going=True, client_hosts=hosts)  # as ramp()'s
    second = ramp_run.run_ramp(spec, plan).steps[1]
    c1, c2 = second.hosts
    assert not c2.had_share and c2.lost == f"not reached for this load: {WHY}", c2
    assert given[-1] == [40.0], given  # the second step split again over c1 alone: the whole rate was c1's
    assert second.offered_reported == second.offered == 40.0
