"""A latency tail at the 1 s retransmission floor beside SYNs the kernel sent again (TcpExtTCPSynRetrans) is
said in one sentence beside the tail, and the model does not blame other processes' CPU for a p99 that sits
there. Only when the numbers carry it: no sentence without a retransmission counted, without a connection of
1 s or more, or in a file saved before the counter was watched."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

from rich.console import Console

from accept_order.analysis.syn_retrans import SYN_RETRANS, slow_count, syn_stalls
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.compare_report import compare_report
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_verdict import model_line
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.probes.netstat import WATCHED_COUNTERS

ENV = Environment("Linux", "6.18", "x86_64", 2, 4096, "3.11", "host", "2026-11-27T00:00:00+00:00")
OLD_WATCHED = [n for n in WATCHED_COUNTERS if n != SYN_RETRANS]  # what files saved before it watched
# the host's CPUs 99% busy over the run, nearly all of it other processes' (as measured on a busy machine)
MACHINE = {
    "before": {"cpu_jiffies": {"total": 13_488_659, "steal": 0, "busy": 10_101_783}},
    "after": {"cpu_jiffies": {"total": 13_490_271, "steal": 0, "busy": 10_103_375}},
}


def evidence(resent: int | None, private: bool = False) -> dict[str, Any]:
    """A run's kernel evidence; `resent` None: a file from before TCPSynRetrans was watched."""
    watched = list(WATCHED_COUNTERS) if resent is not None else OLD_WATCHED
    return {
        "counters": {SYN_RETRANS: resent} if resent else {},
        "counters_watched": watched,
        "counters_available": True,
        "shared_namespace": not private,
        "machine": MACHINE,
    }


def run_of(durations_us: list[int], ev: dict[str, Any], mode: str = "epoll") -> LatencyResult:
    hist = LatencyHistogram()
    for us in durations_us:
        hist.add(us)
    # each worker's CPU read, as the built-in workers' always is (where it is not, no share is said: 9e51daa)
    counters = tuple(
        WorkerCounters(i, 100 + i, cpu_s=0.001, service_us=((500, 50),), service_sum_us=25_000) for i in range(2)
    )
    run = LatencyResult(
        server=ServerSpec(mode=mode, workers=2).validated(),
        load=ConcurrentLoad(connections=len(durations_us), concurrency=8).validated(),
        environment=ENV,
        port=1234,
        histogram=hist,
        errors={},
        served=(len(durations_us) // 2, len(durations_us) - len(durations_us) // 2),
        counters=counters,
        drivers=(DriverStats(0, 8, len(durations_us), 10.0, 0.5, 0.0),),
        wall_s=10.0,
        evidence=ev,
    )
    return dataclasses.replace(run, model=predict(run))


def text_of(renderable: Any) -> str:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(renderable)
    return out.getvalue()


# 3000 connections: most in a few ms, 7 at 1-2 s and 1 at 3 s (one and two SYNs sent again)
TAIL = [4000] * 2992 + [1_003_000, 1_010_000, 1_021_000, 1_050_000, 1_100_000, 1_500_000, 1_900_000, 3_020_000]


def test_slow_connections_and_retransmits_are_said_beside_the_tail() -> None:
    run = run_of(TAIL, evidence(12))
    assert slow_count(run.histogram) == 8  # exact: 1_003_000 is not rounded into a bucket below 1 s
    text = text_of(latency_report(run))
    assert "8 connections of 3,000 took 1 s or more, and 12 SYNs or SYN-ACKs were sent again during the run" in text
    assert "(host-wide, other TCP traffic included; TCPSynRetrans)" in text, text
    assert "after 1 s, then 2 s more" in text and "not the accept mode" in text
    assert "that part of the tail may be the kernel's connection set-up" in text  # a host-wide count: a may
    # the run's own namespace: said so, and without the hedge
    own = text_of(latency_report(run_of(TAIL, evidence(12, private=True))))
    assert "(in the run's own network namespace; TCPSynRetrans)" in own
    assert "that part of the tail is the kernel's connection set-up" in own
    # more than the run made connections, host-wide: others' are among them, and the sentence says may
    busy = text_of(latency_report(run_of(TAIL, evidence(32_509))))
    assert "32,509 SYNs or SYN-ACKs were sent again during the run (host-wide, more than the run's 3,000 " in busy
    assert "connections: other TCP traffic's among them; TCPSynRetrans)" in busy and "part of the tail may be" in busy
    # fewer retransmissions than slow connections cannot be all of them
    few = text_of(latency_report(run_of(TAIL, evidence(3))))
    assert "3 SYNs or SYN-ACKs were sent again" in few and "up to 3 of them may be" in few, few


def test_nothing_said_unless_the_numbers_carry_it() -> None:
    said = "took 1 s or more"
    assert syn_stalls(run_of(TAIL, evidence(0)).histogram, evidence(0)) is None
    assert said not in text_of(latency_report(run_of(TAIL, evidence(0))))  # watched, none sent again
    assert said not in text_of(latency_report(run_of([4000] * 3000, evidence(40))))  # none slow
    assert said not in text_of(latency_report(run_of(TAIL, evidence(None))))  # an older file


def test_a_comparison_names_the_run_it_was() -> None:
    stalled, quiet = run_of(TAIL, evidence(9), "epoll"), run_of([4000] * 3000, evidence(0), "reuseport")
    text = text_of(compare_report([stalled, quiet], {}))
    assert "epoll: 8 connections of 3,000 took 1 s or more, and 9 SYNs or SYN-ACKs were sent again" in text, text
    assert "reuseport: " not in text.split("took 1 s or more")[0].splitlines()[-1]
    assert text.count("took 1 s or more") == 1


def test_the_model_does_not_blame_other_processes_for_a_p99_at_the_floor() -> None:
    at_floor = [4000] * 2900 + [1_010_000] * 100  # 1 in 30 waited for a SYN sent again: the p99 is one of them
    blamed = model_line([run_of(at_floor, evidence(None))]) or ""  # no counter: as before, the CPU is named
    assert "something else is at work: other processes used 96% of the CPUs" in blamed, blamed
    line = model_line([run_of(at_floor, evidence(100, private=True))]) or ""  # the run's own SYNs sent again
    assert "epoll's p99 is among its 100 connections of 1 s or more while SYNs were sent again" in line, line
    assert "other processes used" not in line, line
    # a host-wide count may be all others': the timer is a may, beside the CPU they used (test_burst_syn_resend_note)
    anyone = model_line([run_of(at_floor, evidence(100))]) or ""
    assert "sent again host-wide (the kernel's 1 s retransmission timer may be part of it)" in anyone, anyone
    assert "other processes used 96% of the CPUs" in anyone, anyone
    # retransmits beyond the p99 leave the model's sentence as it was: a p99 of 40 ms is not the timer's
    beyond = [4000] * 2850 + [40_000] * 142 + TAIL[-8:]
    assert "something else is at work: other processes used" in (model_line([run_of(beyond, evidence(12))]) or "")
