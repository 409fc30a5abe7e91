"""A kill's timeouts are not called a served queue's where the others took the queue the kill left only past the
clients' --timeout: io_uring's lost wakeup on a killed ring (experiments/reload/lost_wakeup.py) stalls the queue until
a new connection arrives, and in a closed loop whose clients all wait in it that is the first client's own, once its
--timeout ran out; the others then serve the rest of the run.

b323155 read only whether the others accepted any after the kill, so 'reload --modes io-uring --how kill -w 3 -c 32
--work 1ms --duration 2s --timeout 150ms' read 'lost 64: 32 timed out in a served queue' (no promise broken) in 2 of 4
runs, every client timed out once, the others accepting 528 and 695 after (epoll in the same runs: 1 timeout in one;
load 3).
The stalled file here is such a run's, with bpftrace the witness (io_uring_complete per worker, signal_generate of the
SIGKILL): worker 1's first completion 219 ms after the SIGKILL, the run's looks none at 100 ms after the going and a
count moved by 201 ms (load 6.6). The served file is b323155's command run again (load 7.4): the others' count moved
by the first look, 110 ms and 109 ms after the going, and nothing was queued at the end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli
from reload_kill_run import killed_blocking_run

DATA = Path(__file__).parent / "data"
STALLED = DATA / "reload_io_uring_kill_stalled_past_timeout.json"
SERVED = DATA / "reload_kill_timeouts_served_seen.json"
NAMED = "io_uring's lost wakeup on a killed ring can do that"


def _said(doc: dict[str, Any], tmp_path: Path) -> str:
    path = tmp_path / "reload.json"
    path.write_text(json.dumps(doc))
    return " ".join(run_cli(["show", str(path)], 1000).stdout.split())


def test_timeouts_before_the_others_took_the_queue_are_not_a_served_queue(tmp_path: Path) -> None:
    doc = json.loads(STALLED.read_text())
    (run,) = doc["runs"]
    assert run["errors"]["timeout"] >= run["load"]["concurrency"] and run["others_after"] > 0  # b323155's case
    out = _said(doc, tmp_path)
    assert "timed out in a served queue" not in out and "lost 68: not what the kernel promises" in out
    assert (
        "io-uring kill: 36 timed out, and after worker 0 was gone the other workers' own count had not moved at a look "
        "100 ms after it and first moved by a look 201 ms after it, past the clients' --timeout (150 ms): the queue "
        "the kill left waited unserved at least 100 ms, and may have until those timed out" in out
    )
    assert f"served per worker 720/365/0. {NAMED}" in out


def test_epoll_is_said_the_same_but_never_named(tmp_path: Path) -> None:
    doc = json.loads(STALLED.read_text())
    doc["runs"][0]["server"]["mode"] = "epoll"
    out = _said(doc, tmp_path)
    assert "epoll kill: 36 timed out" in out and "lost wakeup" not in out and "served queue" not in out


def test_others_seen_accepting_within_the_timeout_are_a_served_queue(tmp_path: Path) -> None:
    doc = json.loads(SERVED.read_text())
    for run in doc["runs"]:  # the witness: nothing queued at the end, the others seen accepting within 150 ms
        assert run["evidence"]["listeners"]["end"][0]["queue"] == 0
        assert run["others_first_s"] - run["at_s"] - run["gone_s"] < run["load"]["timeout_s"]
    out = _said(doc, tmp_path)
    assert "lost 267: 267 timed out in a served queue" in out and "lost 433: 373 timed out in a served queue" in out
    assert "past the clients' --timeout" not in out and "not what the kernel promises" not in out


def test_a_file_without_the_first_look_reads_as_before_b323155(tmp_path: Path) -> None:
    """b323155's own file has no others_first_s: whether the others took the queue in time is not known."""
    out = _said(json.loads((DATA / "reload_kill_timeouts_served.json").read_text()), tmp_path)
    assert "lost 322: not what the kernel promises" in out and "lost 340: not what the kernel promises" in out
    assert "timed out in a served queue" not in out and "past the clients' --timeout" not in out


def test_a_real_kill_saves_the_first_look_that_saw_the_others_accept(tmp_path: Path) -> None:
    """blocking, worker 0 killed at 150 ms of 300: the survivors keep accepting from the shared queue; the first look
    that saw their count move is after the kill and no later than the last, and a look that saw none is before it."""
    run = killed_blocking_run(tmp_path)
    assert run["gone_s"] is not None and run["others_after"] > 0, run
    assert run["at_s"] < run["others_first_s"] <= run["others_last_s"], run
    assert run["others_still_s"] is None or run["at_s"] < run["others_still_s"] < run["others_first_s"], run


def test_repeat_counts_the_stall_against_the_promise_and_says_the_served_queues(tmp_path: Path) -> None:
    """--repeat 4 of the stalled command (load 9-11): io-uring stalled in round 2 (32 timed out, the others' count
    first moved by a look 303 ms after the going); epoll timed out 21 and 1 in rounds 1 and 4, the others seen
    accepting by the first look. 'kept in 2/2' left those 2 out unsaid, and the stall's round was not named."""
    out = _said(json.loads((DATA / "reload_kill_repeat_stall_and_served.json").read_text()), tmp_path)
    assert "kept in 2/2; 2 of 4 timed out in a served queue" in out and "kept in 3/4" in out
    assert (
        "io-uring kill: a kill left connections in the shared queue until they timed out in 1 of 4 runs (round 2); "
        "round 2, the first: io-uring kill: 32 timed out, and after worker 0 was gone the other workers' own count "
        "had not moved at a look 203 ms after it and first moved by a look 303 ms after it" in out
    )
    assert "epoll kill: a kill left" not in out


def test_a_timeout_under_the_looks_apart_names_no_stall(tmp_path: Path) -> None:
    """--timeout 50ms, epoll (load 14): the first look after the going, 101 ms after it, already saw the others
    accept, so the looks cannot tell whether 58 timed out in a stall or a served queue: neither is said."""
    doc = json.loads((DATA / "reload_epoll_kill_timeout_under_a_look.json").read_text())
    (run,) = doc["runs"]
    assert run["others_still_s"] is None and run["others_first_s"] - run["at_s"] - run["gone_s"] > 0.05
    out = _said(doc, tmp_path)
    assert "lost 64: not what the kernel promises" in out
    assert "past the clients' --timeout" not in out and "served queue" not in out
