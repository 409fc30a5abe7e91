"""Client hosts between a run's loads (a ramp's steps, a sweep's points, --modes, a burst's sizes) end within the
coordinator's silence when the coordinator vanishes with the way to them cut: a kept host's Python idled between
loads without a beat, so a coordinator SIGKILLed with c2's link down left c2's Python to TCP's give-up (a quarter
of an hour; its channel never closed). The coordinator now beats every host it reached from its hello to its end
(loads/hosts/beats.py), and a host's watch ends its Python after COORDINATOR_SILENT_S (10 s) without a beat.

The command runs under tests/held_between_loads.py, held as its second load reaches the hosts (the first load's
drivers reaped, the next one not begun), or before its first load, once the hosts have taken their part. The witness
is the host's own /proc (the processes in its namespace), read until its Python is gone, within the silence and
GONE_S. A real cluster (tests/cluster.py), as test_clients_silent_host.py, whose link_down this uses.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster import Cluster, cluster_fixture
from conftest import child_processes
from held_between_loads import BEFORE_THE_FIRST, HELD
from test_clients_faults import (
    GONE_S,
    UNDER_WAY_S,
    _remote_python,
    assert_nothing_left,
    bridge,
    local_processes,
    own_config,
    remote_processes,
)
from test_clients_silent_host import link_down
from waiting import OutputReader, ended_within

from accept_order.loads.hosts.beats import COORDINATOR_SILENT_S

cluster = cluster_fixture(clients=2)
HELPER = str(Path(__file__).with_name("held_between_loads.py"))
LOADS = {  # each with two loads, and its option naming the client hosts
    "ramp": ["ramp", "--rates", "200,300", "--step", "1s", "--keep-going", "--clients"],
    "sweep": ["sweep", "--accept-batch", "1,2", "-n", "300", "-c", "4", "--clients"],
    "latency --modes": ["latency", "--modes", "epoll,reuseport", "-n", "300", "-c", "4", "--clients"],
    "burst": ["burst", "--modes", "epoll", "--clients", "20,40", "--client-hosts"],
}


class Held:
    """The command under the helper, in a session of its own, its stderr read as it comes."""

    def __init__(self, c: Cluster, tmp_path: Path, command: str, before_the_first: bool = False) -> None:
        self.json_path = tmp_path / "run.json"
        config = own_config(c, tmp_path, "Host *\n  ConnectTimeout 3\n")  # a host cut off is not reached anew
        args = [*LOADS[command], "c1,c2", "--ssh-config", config, "--host", bridge(c), "-w", "2"]
        self.proc = subprocess.Popen(
            [sys.executable, HELPER, *args, "--json", str(self.json_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "COLUMNS": "200", BEFORE_THE_FIRST: "1" if before_the_first else "0"},
        )
        self.err = OutputReader(self.proc.stderr)  # type: ignore[arg-type]

    def between_loads(self, c: Cluster, kept: bool | None) -> None:
        """Wait until it is held between its loads: no host drives; `kept` (a ramp's steps), each host's Python idles
        there; not (a sweep's points, each a session of its own), it ended with the first load's session; None: one
        or the other."""
        self.err.wait_for(HELD, 2 * UNDER_WAY_S)
        for name in ("c1", "c2"):
            if kept or (kept is None and pythons(c, name)):
                assert child_processes(_remote_python(c, name).pid) == [], f"{name} still drives"
            else:
                gone_within(c, name, GONE_S, f"{name}'s Python to end with the first load's session")

    def go_on(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def end(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)


def pythons(c: Cluster, name: str) -> list[str]:
    return [p for p in remote_processes(c, name) if "python" in p]


def gone_within(c: Cluster, name: str, bound: float, what: str) -> float:
    """Seconds until the host's Python is gone, read from its namespace's /proc; fails past `bound`."""
    return ended_within(lambda: pythons(c, name), bound, what)


BETWEEN = [("ramp", "between"), ("sweep", "between"), ("latency --modes", "between"), ("burst", "between")]


@pytest.mark.parametrize(("command", "when"), [*BETWEEN, ("ramp", "before the first")])
def test_a_coordinator_killed_between_loads_with_a_link_down_leaves_nothing(
    cluster: Cluster, tmp_path: Path, command: str, when: str
) -> None:
    """Before the first load, each host has taken its part and waits for its load (load_side's clock reading)."""
    held = Held(cluster, tmp_path, command, before_the_first=when == "before the first")
    try:
        held.between_loads(cluster, kept={"ramp": True, "sweep": False}.get(command))
        print(f"{command}: c2's Python {'idles' if pythons(cluster, 'c2') else 'ended'} between the loads")
        with link_down(cluster, "c2"):
            os.killpg(held.proc.pid, signal.SIGKILL)
            held.proc.wait(30)
            began = time.monotonic()
            took = gone_within(cluster, "c2", COORDINATOR_SILENT_S + GONE_S, "c2's idle Python to end, its link down")
            began = time.monotonic()
            print(f"c2's Python gone {took:.1f} s after the kill")  # -s shows it
            assert pythons(cluster, "c1") == []  # its channel closed with the coordinator's ssh
            ended_within(  # the coordinator's ssh to c2 by its keepalives (gateways.SERVER_ALIVE)
                lambda: [p for p in local_processes(str(tmp_path)) if " c2 " in p],
                20 + GONE_S,
                "the ssh to c2 to end, c2's link down",
            )
            print(f"the ssh to c2 gone {took + time.monotonic() - began:.1f} s after the kill")
        assert_nothing_left(cluster, str(tmp_path))
    finally:
        held.end()


def test_a_link_cut_between_steps_loses_the_host_and_keeps_the_steps(cluster: Cluster, tmp_path: Path) -> None:
    """The coordinator alive and c2 cut off between the ramp's steps: c2's Python ends on its own (it hears no beat),
    the second step runs on c1 alone, c2 named not reached for it; both steps saved, exit 1."""
    held = Held(cluster, tmp_path, "ramp")
    try:
        held.between_loads(cluster, kept=True)
        with link_down(cluster, "c2"):
            gone_within(cluster, "c2", COORDINATOR_SILENT_S + GONE_S, "c2's idle Python to end, cut off")
            held.go_on()
            assert held.proc.wait(120) == 1
            held.err.finish()
        errors = [line for line in held.err.text.splitlines() if line.startswith("accept-order: error:")]
        assert len(errors) == 1 and re.fullmatch(
            r"accept-order: error: client host c2 was lost during the run: not reached for this load: client host "
            rf"c2: .*; the report and {re.escape(str(held.json_path))} hold what the other hosts drove in .*",
            errors[0],
        ), held.err.text
        assert "Traceback" not in held.err.text
        steps = json.loads(held.json_path.read_text())["steps"]
        assert len(steps) == 2, steps
        first, second = ({h["destination"]: h for h in step["hosts"]} for step in steps)
        assert first["c1"]["lost"] is None and first["c2"]["lost"] is None and first["c2"]["served_total"] > 0
        assert second["c1"]["lost"] is None and second["c1"]["served_total"] > 0
        assert (second["c2"]["lost"] or "").startswith("not reached for this load: client host c2: ")
        assert second["c2"]["served_total"] == 0
        assert_nothing_left(cluster, str(tmp_path))
    finally:
        held.end()


def test_a_link_cut_between_sweep_points_keeps_the_points_done(cluster: Cluster, tmp_path: Path) -> None:
    """A sweep's points are sessions of their own, each reaching its hosts anew: c2 cut off before the second is not
    reached for it, and the sweep stops there, naming c2 and why; the first point saved, exit 1."""
    held = Held(cluster, tmp_path, "sweep")
    try:
        held.between_loads(cluster, kept=False)
        with link_down(cluster, "c2"):
            held.go_on()
            assert held.proc.wait(120) == 1
            held.err.finish()
        errors = [line for line in held.err.text.splitlines() if line.startswith("accept-order: error:")]
        assert errors == [
            "accept-order: error: client host c2: could not be reached over ssh (ssh: connect to host "
            f"{cluster.address('c2')} port 22: Connection timed out)"
        ], held.err.text
        document = json.loads(held.json_path.read_text())
        [done] = document["runs"]
        assert done["server"]["accept_batch"] == 1 and done["summary"]["count"] == 300
        assert "client host c2: could not be reached over ssh" in str(document["stopped"]), document["stopped"]
        assert_nothing_left(cluster, str(tmp_path))
    finally:
        held.end()
