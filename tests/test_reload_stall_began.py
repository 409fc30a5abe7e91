"""reload reads when a kill's stall began from the other workers' accepts after the killed one was gone, not from the
whole run's counts: io_uring's lost wakeup on a killed ring (experiments/reload/lost_wakeup.py) begins with the kill,
whatever the others served before it, and a stall that began after they had accepted past the kill is not it.

The files are a real stall's (`reload --modes io-uring --how kill -w 3 -c 32 --work 5ms --duration 300ms`: served
18/0/0, 32 queued, 32 timed out) with one thing changed: the others served some before the kill (the whole-run rule
said 'these counts do not tell' and named nothing), they accepted some after it, or the mode is epoll. The real run
checks the reading against the replies: the survivors' accepts after the kill are at most what they served."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli
from reload_kill_run import killed_blocking_run

DATA = Path(__file__).parent / "data"
NAMED = "io_uring's lost wakeup on a killed ring can do that"


def _said(tmp_path: Path, served: list[int], after: int | None, last: float | None = None, mode: str = "") -> str:
    doc = json.loads((DATA / "reload_io_uring_kill_stalled_c32.json").read_text())
    run: dict[str, Any] = doc["runs"][0]
    run["served"], run["others_after"], run["others_last_s"] = served, after, last
    if mode:
        run["server"]["mode"] = mode
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(doc))
    return " ".join(run_cli(["show", str(path)], 1000).stdout.split())


def test_a_stall_from_the_kill_is_named_though_the_others_served_before_it(tmp_path: Path) -> None:
    out = _said(tmp_path, [18, 5, 2], 0)
    assert (
        "after worker 0 was killed, the other workers left the shared queue unserved (they accepted none after it, "
        f"7 before it); served per worker 18/5/2. {NAMED}" in out
    )


def test_the_whole_runs_counts_still_name_it_where_the_others_served_none(tmp_path: Path) -> None:
    out = _said(tmp_path, [18, 0, 0], 0)
    assert f"(they accepted none in the whole run); served per worker 18/0/0. {NAMED}" in out


def test_a_stall_that_began_after_the_others_accepted_past_the_kill_is_not_named(tmp_path: Path) -> None:
    out = _said(tmp_path, [18, 5, 2], 4, 0.3)
    assert (
        "the other workers accepted 4 after worker 0 was gone (the last of them seen by 0.3 s into the load, which "
        "ran 300 ms), so the queue was not left from the kill" in out
    )
    assert "lost wakeup" not in out
    out = _said(tmp_path, [18, 5, 2], 4, None)
    assert "accepted 4 after worker 0 was gone (after the run's last look, which ran 300 ms)" in out


def test_epoll_is_never_named_even_with_a_stall_from_the_kill(tmp_path: Path) -> None:
    out = _said(tmp_path, [18, 5, 2], 0, mode="epoll")
    assert "(they accepted none after it, 7 before it)" in out  # what was seen is said
    assert "lost wakeup" not in out


def test_a_file_without_the_reading_reads_the_whole_run_as_before(tmp_path: Path) -> None:
    out = _said(tmp_path, [18, 5, 2], None)
    assert "served 7 over the whole run, so these counts do not tell" in out and "lost wakeup" not in out


def test_a_real_kill_reads_the_others_accepts_after_it(tmp_path: Path) -> None:
    """blocking, worker 0 killed at 150 ms of 300: the survivors keep accepting from the shared queue; what they
    accepted after the kill is at most what their replies say they served in the whole run, and their count last
    moved at a look after the kill."""
    run = killed_blocking_run(tmp_path)
    assert run["gone_s"] is not None, run
    others = sum(run["served"][1:])
    assert 0 < run["others_after"] <= others, run
    assert run["others_last_s"] is not None and run["others_last_s"] > run["at_s"], run
