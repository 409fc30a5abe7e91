"""A burst driven from client hosts is not held to this host's limits for the clients' side: one client
address's local ports and this host's drivers are each host's own (each makes room for its share); this host
still raises its open-file limit for its workers, which may hold the whole burst."""

from __future__ import annotations

import resource

import pytest

from accept_order.core.errors import PlanError
from accept_order.core.hosts import ClientHosts
from accept_order.experiments.burst import run as burst


class FakeLimits:
    RLIMIT_NOFILE, RLIM_INFINITY = resource.RLIMIT_NOFILE, resource.RLIM_INFINITY

    def __init__(self, soft: int, hard: int) -> None:
        self.limits = (soft, hard)

    def getrlimit(self, which: int) -> tuple[int, int]:
        return self.limits

    def setrlimit(self, which: int, limits: tuple[int, int]) -> None:
        assert limits[1] <= self.limits[1], "not root here"
        self.limits = limits


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> FakeLimits:
    fake = FakeLimits(1024, 100_000)
    monkeypatch.setattr(burst, "resource", fake)
    monkeypatch.setattr(burst, "_raise_hard_limit", lambda need, soft, hard: hard)
    monkeypatch.setattr(burst, "local_ports", lambda: 28_000)
    return fake


def test_driven_here_the_local_ports_limit_the_burst(limits: FakeLimits) -> None:
    with pytest.raises(PlanError, match="28000 local ports"):
        burst.make_room(40_000, 2)


def test_driven_from_hosts_only_the_workers_need_room_here(limits: FakeLimits) -> None:
    note = burst.make_room(40_000, 2, on_hosts=True)
    assert limits.limits == (40_032, 100_000)  # the workers here may hold every client's connection
    assert note == "raised the open-file limit from 1024 to 40032 for the burst"  # no spreading of drivers here


def test_each_host_runs_the_driver_processes_asked(limits: FakeLimits) -> None:
    """Here the soft limit (1024: 992 connections a driver) spreads 40000 clients over 41 drivers; a host's
    share is under its own limit."""
    here = burst.BurstPlan((40_000,), 2).load(40_000)
    hosts = burst.BurstPlan((40_000,), 2, client_hosts=ClientHosts(("c1", "c2"))).load(40_000)
    assert here.driver_procs == 41 and hosts.driver_procs == 2


@pytest.mark.parametrize(
    ("soft", "hard", "procs"),
    [(1024, 100_000, 2), (1024, 8_032, 3), (1024, 1024, 21), (64, 64, 2)],
    ids=["raised", "spread", "spread-at-soft", "beyond-max: refused by the generator"],
)
def test_a_host_spreads_its_share_over_more_drivers_under_its_hard_limit(
    monkeypatch: pytest.MonkeyPatch, soft: int, hard: int, procs: int
) -> None:
    """A host's share of a 40,000-client burst, two hosts: 20,000 connections at once, 2 drivers asked."""
    from accept_order.core.spec import ConcurrentLoad
    from accept_order.loads.hosts import load_side

    fake = FakeLimits(soft, hard)
    monkeypatch.setattr(load_side, "resource", fake)
    share = ConcurrentLoad(connections=20_000, concurrency=20_000, driver_procs=2)
    spread = load_side.make_room(share)
    assert fake.limits == (min(20_032, hard), hard)
    assert spread.driver_procs == procs and spread.concurrency == 20_000
    if procs > 2:  # each driver's part now fits under the limit
        assert -(-20_000 // procs) + 32 <= fake.limits[0]
