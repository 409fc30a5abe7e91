"""A ramp step that loses a client host is judged on the rate offered to the hosts that reported, not on the whole.

'ramp --clients c1,c2,c3 --target NGINX --rates 1000,2000,3000 --step 4s --observe-on srv' with c2's ssh session
SIGKILLed 9 s in (namespace cluster, nginx 1.22 with 4 workers, load 5) read 'Knee: the last step that held was
1000/s; the first that did not was 2000/s: finished 1331/s of 2000/s offered' and ran no third step, where c1 and c3
finished 2,667 each of their 2,667 (p99 4.73 ms) and nginx's access log had c2's 2,352 too: the missing third was c2's
share, driven into no count here (its 'Lost' line), not a server that fell behind. The rate is split evenly over the
hosts (loads/hosts/split.py), so the hosts that reported were offered 1333/s of it, which they finished.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.host_outcome import NOT_REACHED, HostOutcome
from accept_order.experiments.ramp.plan import RampPlan
from accept_order.experiments.ramp.result import RampStep
from accept_order.experiments.ramp.step_verdict import judge

GOLDEN = Path(__file__).parent / "data" / "golden" / "ramp.json"
PLAN = RampPlan(rates=(1000.0, 2000.0, 3000.0), step_s=4.0, p99_ms=3000.0)


def host(name: str, lost: str | None = None) -> HostOutcome:
    histogram = LatencyHistogram()
    if lost is None:
        histogram.add(300, 2667)
    return HostOutcome(name, histogram, {}, (2667,) if lost is None else (0,), 4.0, lost=lost)


def step(served: tuple[int, ...], *hosts: HostOutcome) -> RampStep:
    golden = RampStep.from_dict(json.loads(GOLDEN.read_text())["steps"][0])
    return replace(
        golden, kind="rate", offered=2000.0, wall_s=4.006352, served=served, errors={}, p99_us=4730, hosts=hosts
    )


LOST = "its connection closed after at least 933 connections (933 served by its last report)"


def test_a_step_whose_lost_hosts_share_alone_is_missing_holds() -> None:
    assert judge(step((1324, 1358, 1333, 1319), host("c1"), host("c2", LOST), host("c3")), PLAN, 4) == []


def test_a_step_short_of_the_reporting_hosts_share_says_whose_rate_it_missed() -> None:
    halved = step((662, 679, 666, 660), host("c1"), host("c2", LOST), host("c3"))
    assert judge(halved, PLAN, 4) == ["finished 666/s of 1333.33/s offered to the client hosts that reported (c2 lost)"]


def test_without_a_lost_host_the_whole_rate_is_offered() -> None:
    assert judge(step((1324, 1358, 1333, 1319), host("c1"), host("c2"), host("c3")), PLAN, 4) == [
        "finished 1331/s of 2000/s offered"
    ]
    every = step((0, 0, 0, 0), host("c1", LOST), host("c2", LOST), host("c3", LOST))
    assert judge(every, PLAN, 4) == ["finished 0/s of 2000/s offered"]  # nobody reported: the whole is missing


UNREACHED = f"{NOT_REACHED}: client host c2: could not be reached over ssh (Connection refused)"


def test_a_host_not_reached_for_the_step_had_no_share_of_its_rate() -> None:
    """'ramp --clients c1,c2,c3 --host BRIDGE -w 1 -m blocking --work 3ms --rates 90,450 --step 5s' with everything in
    c2's namespace SIGKILLed in the first step (its sshd too: namespace cluster, load 4-5): the second step reached c1
    and c3 alone, which drove the whole 450/s (1,121 and 1,116 connections of 5 s each, 225/s each), and read
    'finished 251/s of 300/s offered to the client hosts that reported (c2 lost)': nobody was offered 300/s, c2 drove
    none of it. A host not reached for a step is no host the step was split over."""
    unreached = step((1324, 1358, 1333, 1319), host("c1"), host("c2", UNREACHED), host("c3"))
    assert unreached.offered_reported == 2000.0
    assert judge(unreached, PLAN, 4) == ["finished 1331/s of 2000/s offered"]
    both = step((662, 679, 666, 660), host("c1"), host("c2", UNREACHED), host("c3", LOST), host("c4"))
    assert judge(both, PLAN, 4) == [
        "finished 666/s of 1333.33/s offered to the client hosts that reported (c3 lost)"
    ]  # 2 of the 3 it was split over
