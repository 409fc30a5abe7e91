"""One load as the client hosts' shares (loads/hosts/split.py): an open loop's rate and its stripes, and each host
checking its own share against its own limits. Pure functions: no host is reached."""

from __future__ import annotations

import pytest

from accept_order.core import limits
from accept_order.core.errors import PlanError
from accept_order.core.hosts import ClientHosts
from accept_order.core.spec import ConcurrentLoad
from accept_order.loads.hosts.split import shares, stripe_s

HOSTS = ClientHosts(("c1", "c2"))


@pytest.mark.parametrize("concurrency", [2, 3, 7])
def test_an_open_loops_hosts_arrive_interleaved_and_finish_together(concurrency: int) -> None:
    """The hosts' schedules together are the whole rate's: connection k of host i is due at i/R + k*N/R, so
    the merged arrivals are exactly 1/R apart, and every host's count takes it as long. Concurrency is only the
    most in flight: an odd -c must not give one host more of the rate (it would finish early, and the load's
    last part would run at a fraction of --rate)."""
    rate, hosts = 1000.0, 2
    load = ConcurrentLoad(connections=2000, concurrency=concurrency, rate=rate, clients=HOSTS)
    parts = shares(load, hosts)
    assert sum(p.rate or 0 for p in parts) == pytest.approx(rate)
    assert sum(p.connections or 0 for p in parts) == 2000
    assert sum(p.concurrency for p in parts) == concurrency
    ends = {(p.connections or 0) / (p.rate or 1) for p in parts}
    assert max(ends) - min(ends) < 1 / rate  # each host's last connection is due within one gap of the others'
    due = sorted(stripe_s(load, i) + k / (p.rate or 1) for i, p in enumerate(parts) for k in range(p.connections or 0))
    gaps = [b - a for a, b in zip(due, due[1:], strict=False)]
    assert min(gaps) == pytest.approx(1 / rate) and max(gaps) == pytest.approx(1 / rate)


def test_each_host_checks_its_share_against_its_own_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The coordinator's open-file limit says nothing of a host's; the share a host is handed is checked there
    (its LoadGenerator validates it), or a share over the host's limit fails its connections with EMFILE,
    counted as the server's failures."""
    parts = shares(ConcurrentLoad(connections=4000, concurrency=4000, driver_procs=1, clients=HOSTS), 2)
    monkeypatch.setattr(limits, "open_file_limit", lambda: 1024)  # the host's soft limit, as ssh sessions often have
    with pytest.raises(PlanError, match="open-file limit 1024"):
        parts[0].validated()
    cpus = shares(ConcurrentLoad(connections=10, concurrency=2, cpus=(1 << 19,), clients=HOSTS), 2)
    with pytest.raises(PlanError, match="--load-cpus"):  # a client host's CPUs are its own: checked there too
        cpus[0].validated()


def test_fewer_connections_than_hosts_name_connections_not_the_concurrency_cut_to_them() -> None:
    """'latency --clients c1,c2,c3 -n 2' read '--concurrency 2 over 3 client hosts', though -c was left at 200: the
    concurrency is cut to the connections, so the connections are what to raise."""
    load = ConcurrentLoad(connections=2, concurrency=2)
    with pytest.raises(PlanError, match=r"^--connections 2 over 3 client hosts: give at least one per host$"):
        shares(load, 3)
    with pytest.raises(PlanError, match=r"^--concurrency 2 over 3 client hosts"):
        shares(ConcurrentLoad(connections=100, concurrency=2), 3)
