"""A run's client hosts are kept between its loads (a ramp's steps, a burst's sizes): reached once, greeted again
for each load; a host lost between loads is named in the later load, whose share the others then drive; the run's
end ends them all. execnet "popen" gateways stand in for ssh (a host is a local interpreter)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import execnet
import psutil
import pytest
from conftest import run_cli
from test_clients_cli import own_address

from accept_order.core.hosts import ClientHosts
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.lifecycle import lifecycle
from accept_order.experiments.session import drive_load
from accept_order.loads.hosts import gateways


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """popen gateways in place of ssh; `started` counts the interpreters started per host; a host named in
    `unreachable` gets a Python that does not exist (as a host that went away would fail its handshake)."""
    state: dict[str, Any] = {"started": {}, "unreachable": set()}

    def spec(destination: str, hosts: Any, index: int) -> Any:
        state["started"][destination] = state["started"].get(destination, 0) + 1
        python = "/nonexistent/python" if destination in state["unreachable"] else sys.executable
        return execnet.XSpec(f"popen//id={destination}{index}//python={python}")

    monkeypatch.setattr(gateways, "_spec", spec)
    return state


def test_a_ramp_reaches_each_host_once(spawned: dict[str, Any], tmp_path: Path) -> None:
    address = own_address()
    if address is None:
        pytest.skip("no address but loopback here")
    out = tmp_path / "ramp.json"
    args = ["ramp", "--clients", "c1,c2", "--host", address, "--rates", "200,400,600", "--step", "300ms"]
    result = run_cli([*args, "-w", "2", "--keep-going", "--json", str(out)])  # every step, held or not
    assert result.exit_code == 0, result.output
    steps = json.loads(out.read_text())["steps"]
    assert len(steps) == 3 and all(len(s["hosts"]) == 2 for s in steps)
    assert spawned["started"] == {"c1": 1, "c2": 1}  # not once per step
    assert not gateways._kept  # the run's end ended them
    assert not [p for p in psutil.Process().children(recursive=True) if "exec(eval" in " ".join(p.cmdline())]


def test_a_host_lost_between_loads_is_named_and_its_share_driven(spawned: dict[str, Any]) -> None:
    """Two loads in one run (the lifecycle, as a burst's sizes): after the first, c2's interpreter is
    killed and c2 cannot be reached again; the second load is c1's alone, c2 named as lost to it."""
    hosts = ClientHosts(("c1", "c2"))
    load = ConcurrentLoad(connections=400, concurrency=4, driver_procs=1, clients=hosts)
    results = []

    def drive(target: Any) -> None:
        results.append(drive_load(target, load, 2))
        c2 = gateways._kept[(hosts, "client host")]["c2"]
        assert c2.ssh.process is not None
        c2.ssh.process.kill()  # the host went away
        spawned["unreachable"].add("c2")
        results.append(drive_load(target, load, 2))

    lifecycle(ServerSpec(workers=2), drive, lambda: "", lambda outcome, measured: outcome)
    before, after = results
    assert [h.lost for h in before.hosts] == [None, None]
    for h in before.hosts:  # a host's window is its drivers', not the time its reports took to collect
        assert h.started_s is not None and h.ended_s is not None
        assert abs((h.ended_s - h.started_s) - h.wall_s) < 1e-5, h
    c1, c2 = after.hosts
    assert c1.lost is None and c2.lost is not None and "not reached for this load" in c2.lost
    assert c1.ok + c1.failed == 400 and after.driven == 400  # c1 drove c2's share too
    assert spawned["started"] == {"c1": 1, "c2": 2}  # c1 kept; c2 tried anew
    assert not gateways._kept


def test_a_kept_host_is_kept_once_its_last_task_has_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keeping a host waits for its last task to end (a load's, once its drivers are reaped), so that the next
    load starts on a host done with the last; and the host is greeted again, not reached anew."""
    tests = Path(__file__).parent
    started: list[str] = []

    def spec(destination: str, hosts: Any, index: int) -> Any:
        started.append(destination)
        return execnet.XSpec(f"popen//id={destination}{index}//python={sys.executable}//chdir={tests}")

    monkeypatch.setattr(gateways, "_spec", spec)
    hosts = ClientHosts(("c1",))
    try:
        for _ in range(2):
            reached = gateways.Gateways(hosts)
            [host] = reached.connect("slow_part")
            assert host.channel.receive(timeout=30) == ("answered",)
            reached.keep()
            assert host.channel.isclosed()  # its tail (1 s) is over
        assert started == ["c1"]
    finally:
        gateways.close_kept()
