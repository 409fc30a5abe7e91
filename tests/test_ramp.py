"""`accept-order ramp` (seed 002's breaking point): steps in order, every connection of a step counted,
stopping at the first step that does not hold and saying why; HAProxy's maxconn leaves the excess waiting
in the listen queue (back-pressure) where the kernel shows it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.experiments.ramp.run import RampPlan, run_ramp
from accept_order.servers.launched.haproxy import haproxy_missing
from accept_order.spec import ServerSpec

COMMAND = [sys.executable, "-m", "accept_order", "ramp"]


def test_every_step_is_counted_and_saved(tmp_path: Path) -> None:
    out = tmp_path / "ramp.json"
    proc = subprocess.run(
        [*COMMAND, "-w", "2", "--rates", "100,200", "--step", "500ms", "--keep-going", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["kind"] == "ramp" and [s["offered"] for s in doc["steps"]] == [100, 200]
    for step in doc["steps"]:
        assert step["kind"] == "rate" and sum(step["served"]) > 0
        assert "time-wait" in step["sockets"] or "estab" in step["sockets"]
    shown = subprocess.run([sys.executable, "-m", "accept_order", "show", str(out)], capture_output=True, text=True)
    assert shown.returncode == 0 and "accept-order ramp" in shown.stdout


def test_it_stops_at_the_first_step_that_does_not_hold_and_says_why() -> None:
    """No connection takes under a microsecond: the first step cannot hold, and the ramp goes no further."""
    plan = RampPlan(concurrencies=(2, 4, 8), step_s=0.3, p99_ms=0.001)
    result = run_ramp(ServerSpec(workers=2), plan)
    assert len(result.steps) == 1
    held, broke = result.knee
    assert held is None and broke is result.steps[0]
    assert broke.reasons and broke.reasons[0].startswith("p99 ")
    assert broke.finished == sum(broke.served) + broke.failed > 0


@pytest.mark.skipif(bool(haproxy_missing()), reason=str(haproxy_missing()))
def test_haproxy_maxconn_leaves_the_excess_in_the_listen_queue() -> None:
    plan = RampPlan(concurrencies=(32,), step_s=1.0)
    result = run_ramp(ServerSpec(server="haproxy", mode="threads", workers=1, maxconn=1, work_us=5000), plan)
    (step,) = result.steps
    assert step.failed == 0 and sum(step.served) > 0
    assert max(step.queues) > 0  # held back by maxconn, waiting where the kernel queues it


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rates", "100", "--concurrency-steps", "4"], "not both"),
        (["--maxconn", "10"], "--maxconn is HAProxy's"),
        (["--rates", "0"], "positive"),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str) -> None:
    proc = subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
