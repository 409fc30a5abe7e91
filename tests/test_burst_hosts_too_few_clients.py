"""burst --clients smaller than its --client-hosts names burst's own option: 'burst --client-hosts c1,c2,c3
--clients 2' read '--concurrency 2 over 3 client hosts: give at least one connection at a time per host', an option
burst has not (its --clients is the burst's size), from loads/hosts/split.py's check for latency, sweep and ramp."""

from __future__ import annotations

import pytest

from accept_order.core.errors import PlanError
from accept_order.core.hosts import ClientHosts
from accept_order.experiments.burst.run import BurstPlan

HOSTS = ClientHosts(("c1", "c2", "c3"))


def test_a_burst_smaller_than_its_hosts_names_clients() -> None:
    with pytest.raises(PlanError) as refused:
        BurstPlan(clients=(10, 2), client_hosts=HOSTS).validated()
    assert str(refused.value) == "--clients 2 over 3 --client-hosts: give each burst at least one client per host"


def test_bursts_of_a_client_per_host_or_more_and_bursts_from_here_pass() -> None:
    BurstPlan(clients=(3, 10), client_hosts=HOSTS).validated()
    BurstPlan(clients=(1,)).validated()
