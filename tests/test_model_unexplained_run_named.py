"""The model's 'something else is at work' names a run above the prediction that saw none of its causes: a real
'latency --modes epoll,reuseport,io-uring,fd-pass -w 2 -n 3000 -c 32 --work 200us' here said 'epoll, reuseport,
io-uring, fd-pass above what queueing predicts ...: something else is at work: the load generator shared the workers'
CPUs during epoll (...); ... during reuseport (...); the load generator was short of CPU during fd-pass', and of
io-uring's 1.42x nothing, as if one of those were it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from accept_order.experiments.latency.besides_queueing import something_else
from accept_order.experiments.latency.result import LatencyCompareResult

GOLDEN = Path(__file__).parent / "data" / "golden" / "latency-compare.json"


def test_a_run_that_saw_nothing_is_named() -> None:
    blocking, reuseport = LatencyCompareResult.from_dict(json.loads(GOLDEN.read_text())).runs
    # reuseport's drivers neither starved nor waited, its host not busy: nothing besides queueing to name
    calm = dataclasses.replace(
        reuseport,
        drivers=tuple(dataclasses.replace(d, runqueue_s=0.0, cpu_s=0.0) for d in reuseport.drivers),
        evidence={k: v for k, v in reuseport.evidence.items() if k != "machine"},
    )
    said = something_else([blocking, calm])
    assert said.startswith("something else is at work: the load generator was short of CPU during blocking"), said
    assert said.endswith("; reuseport: none of these seen (noise, or what the run does not measure)"), said
    assert "during reuseport" not in said, said


def test_every_run_with_a_cause_is_said_as_before() -> None:
    runs = LatencyCompareResult.from_dict(json.loads(GOLDEN.read_text())).runs
    assert something_else(runs) == (
        "something else is at work: the load generator was short of CPU during blocking; the load generator was "
        "short of CPU during reuseport"
    )
