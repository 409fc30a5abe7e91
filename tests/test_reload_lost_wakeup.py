"""reload names io_uring's lost wakeup on a killed ring only where it can have left the queue unserved to the end.

Traced on Linux 6.18, the wait-queue steps read from its source (experiments/reload/lost_wakeup.py): while a SIGKILLed
worker exits, its ring's multishot accept stays first among the listener's exclusive waiters and swallows each
connection's wakeup until io_uring's fallback work cancels it, unaccepted; nothing wakes the other rings until a new
connection arrives. So it explains survivors that accepted none for the rest of a run only where no client started a
connection afterwards: a closed loop whose clients' --timeout ran out after the load's end. The files are runs' own:
`reload --modes io-uring --how kill -c 50 --work 1ms` (served 828/0/0, 50 queued at the end, 50 timed out) and this
suite's own load (`-w 3 -c 32 --work 5ms --duration 300ms`: served 18/0/0, 32 queued, 32 timed out; 8 of 13 runs
stalled so at load 12). The counter-cases are the first file with one thing changed: a timeout that ran out during the
load (its client would have connected again, waking a live ring), an open loop, another mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

DATA = Path(__file__).parent / "data"
UNSERVED = "the other workers left the shared queue unserved (they accepted none in the whole run)"
NAMED = "io_uring's lost wakeup on a killed ring can do that"


def _said(path: Path) -> str:
    return " ".join(run_cli(["show", str(path)], 1000).stdout.split())


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("reload_io_uring_kill_stalled.json", "served per worker 828/0/0"),
        ("reload_io_uring_kill_stalled_c32.json", "served per worker 18/0/0"),
    ],
)
def test_a_stall_the_lost_wakeup_can_explain_names_it(name: str, said: str) -> None:
    out = _said(DATA / name)
    assert f"{UNSERVED}; {said}. {NAMED} (docs/howto/reload.md). Traced on Linux 6.18: a connection arriving" in out
    # the wait-queue steps were read from the kernel's source (no kprobe here): said so, not as traced
    assert "Read from the kernel's source, not traced: that accept is still first among the listener's" in out
    assert "here the clients' --timeout (10 s) ran out only after the load's end, so no client made a new" in out


def _changed(tmp_path: Path, change: dict[str, Any], where: str) -> Path:
    doc = json.loads((DATA / "reload_io_uring_kill_stalled.json").read_text())
    doc["runs"][0][where].update(change)
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"timeout_s": 0.5}, "load"),  # killed at 1.02 s of 2 s: the first timeouts at 1.52 s, under load
        ({"rate": 500.0}, "load"),  # an open loop starts connections whatever is in flight
        ({"mode": "epoll"}, "server"),  # not io_uring's poll
    ],
)
def test_a_stall_it_cannot_explain_is_said_without_it(tmp_path: Path, change: dict[str, Any], where: str) -> None:
    out = _said(_changed(tmp_path, change, where))
    assert UNSERVED in out  # what was seen is still said
    assert "lost wakeup" not in out


def test_the_first_timeout_counts_from_the_kill_not_the_load_s_start(tmp_path: Path) -> None:
    # killed at 1.02 s of 2 s with a 1.5 s timeout: the first timeouts at 2.52 s, after the load's end, though the
    # timeout is shorter than the load
    out = _said(_changed(tmp_path, {"timeout_s": 1.5}, "load"))
    assert f"{UNSERVED}; served per worker 828/0/0. {NAMED}" in out
    assert "here the clients' --timeout (1.5 s) ran out only after the load's end" in out


REPEAT = DATA / "reload_io_uring_kill_repeat.json"  # reload --repeat 4 of the test's load: rounds 1 and 2 stalled


def test_repeat_says_which_runs_left_the_queue_and_why() -> None:
    out = _said(REPEAT)
    assert (
        "io-uring kill: a kill left connections in the shared queue until they timed out in 2 of 4 runs (rounds 1, "
        "2); round 1, the first: io-uring kill: 32 connections still waited" in out
    )
    assert f"{UNSERVED}; served per worker 34/0/0. {NAMED}" in out


def test_repeat_without_a_stall_says_none(tmp_path: Path) -> None:
    doc = json.loads(REPEAT.read_text())
    doc["rounds"] = doc["rounds"][2:]  # rounds 3 and 4: the others served 50 and 51, nothing timed out
    path = tmp_path / "served.json"
    path.write_text(json.dumps(doc))
    out = _said(path)
    assert "left connections in the shared queue" not in out and "lost wakeup" not in out
    assert "kept in 2/2" in out


def test_two_workers_read_as_one_other(tmp_path: Path) -> None:
    doc = json.loads((DATA / "reload_io_uring_kill_stalled_c32.json").read_text())
    run = doc["runs"][0]
    run["server"]["workers"], run["served"], run["worker_counters"] = 2, run["served"][:2], run["worker_counters"][:2]
    path = tmp_path / "two.json"
    path.write_text(json.dumps(doc))
    out = _said(path)
    assert (
        "the other worker left the shared queue unserved (it accepted none in the whole run); served per worker 18/0"
        in out
    )
    assert NAMED in out
