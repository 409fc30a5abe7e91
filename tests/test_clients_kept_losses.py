"""Client hosts kept between a run's loads, where a host is lost: a host lost during one load (its interpreter gone
mid-run) is, for the run's next load, a host lost between loads like any other: named lost to it, its share driven
by the others; the run goes on. And an open loop's host that the lost one's absence moves to the first stripe is
late or on time against that stripe, in the file as in the report. execnet "popen" gateways stand in for ssh, as in
tests/test_clients_kept.py (whose fixture this uses)."""

from __future__ import annotations

from typing import Any

import execnet
import psutil
import pytest
from test_clients_kept import spawned  # noqa: F401 - the fixture
from test_clients_report import host, notes

from accept_order.core.hosts import ClientHosts, HostOutcome
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.lifecycle import lifecycle
from accept_order.experiments.session import Loading, drive_load
from accept_order.loads.hosts import gateways


def test_a_host_lost_during_a_load_is_lost_to_the_next_and_the_run_goes_on(spawned: dict[str, Any]) -> None:  # noqa: F811
    """c2's interpreter is killed while the first load runs (c2 cannot be reached again): the first load names it
    lost mid-run; the second is c1's alone, c2 named as not reached for it, not a run ended by 'could not be
    reached' (which only the run's first load may say)."""
    hosts = ClientHosts(("c1", "c2"))
    first = ConcurrentLoad(connections=None, duration_s=1.0, concurrency=2, driver_procs=1, clients=hosts)
    second = ConcurrentLoad(connections=200, concurrency=2, driver_procs=1, clients=hosts)
    loading = Loading()
    results = []

    def kill_c2(done: int, elapsed: float) -> None:
        if done and "c2" not in spawned["unreachable"]:
            spawned["unreachable"].add("c2")
            generator = loading.generator
            assert generator is not None
            [process] = [r.ssh.process for r in generator.gateways._reaching if r.destination == "c2"]  # type: ignore[union-attr]
            assert process is not None
            process.kill()

    def drive(target: Any) -> None:
        results.append(drive_load(target, first, 2, kill_c2, loading))
        results.append(drive_load(target, second, 2))

    lifecycle(ServerSpec(workers=2), drive, lambda: "", lambda outcome, measured: outcome)
    before, after = results
    assert before.hosts[0].lost is None and before.hosts[1].lost is not None
    c1, c2 = after.hosts
    assert c1.lost is None and c2.lost is not None and "not reached for this load" in c2.lost, c2.lost
    assert c1.ok + c1.failed == 200 and after.driven == 200  # c1 drove c2's share too
    assert not gateways._kept


def test_an_open_loops_host_moved_to_the_first_stripe_is_late_against_it(spawned: dict[str, Any]) -> None:  # noqa: F811
    """c1 lost between two open-loop loads: c2, listed second, takes the first stripe (due at the common start),
    and its outcome says so through its file (due_s 0, not left out to be read as its place in the list, 1/R)."""
    hosts = ClientHosts(("c1", "c2", "c3"))
    load = ConcurrentLoad(connections=30, concurrency=3, driver_procs=1, rate=300.0, clients=hosts)
    results = []

    def drive(target: Any) -> None:
        results.append(drive_load(target, load, 2))
        c1 = gateways._kept[(hosts, "client host")]["c1"]
        assert c1.ssh.process is not None
        c1.ssh.process.kill()
        spawned["unreachable"].add("c1")
        results.append(drive_load(target, load, 2))

    lifecycle(ServerSpec(workers=2), drive, lambda: "", lambda outcome, measured: outcome)
    c1, c2, c3 = (HostOutcome.from_dict(h.to_dict()) for h in results[1].hosts)
    assert c1.lost is not None and c2.lost is None and c3.lost is None
    assert (c2.due_s, c3.due_s) == (0.0, round(1 / 300.0, 6))


def test_a_host_due_at_the_start_is_not_read_as_due_at_its_place() -> None:
    """The report: c2 due at the common start (c1 lost), 90 ms late, at 10/s (its place would say due at 0.1 s)."""
    lost = host("c1", served=0, started_s=None, ended_s=None, lost="not reached for this load: gone")
    late = HostOutcome.from_dict(host("c2", started_s=0.0903, due_s=0.0).to_dict())  # as read from its file
    said = notes([lost, late], rate=10.0)
    assert [line for line in said if line.startswith("Warning: c2 started 90 ms")], said


def test_an_interrupt_while_hosts_are_kept_ends_them(spawned: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A Ctrl-C while a load's hosts are being kept (waiting for each one's task to end: an API caller's, since the
    command line holds signals there) keeps none and ends every one: none outlives the run."""

    def interrupted(self: Any, timeout: float | None = None) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(execnet.gateway_base.Channel, "waitclose", interrupted)
    hosts = ClientHosts(("c1", "c2"))
    load = ConcurrentLoad(connections=40, concurrency=2, driver_procs=1, clients=hosts)
    with pytest.raises(KeyboardInterrupt):
        lifecycle(ServerSpec(workers=2), lambda target: drive_load(target, load, 2), lambda: "", lambda o, m: o)
    monkeypatch.undo()
    assert not gateways._kept
    interpreters = [p for p in psutil.Process().children(recursive=True) if "exec(eval" in " ".join(p.cmdline())]
    assert interpreters == []
