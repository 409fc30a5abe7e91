"""sweep over caps a server has no setting for.

`sweep --server puma --accept-batch 1,4` ran and reported cap 1, then stopped at cap 4 ('Stopped early:
--accept-batch does not apply to puma ...'): a usage error found only after a whole run. Every cap is checked
before the first runs now.

`sweep --server uvicorn --accept-batch 1,0` said 'Note: mode asyncio accepts one connection per wakeup whatever
the cap', where bpftrace on the accept tracepoints saw one asyncio wakeup accept 79 connections of 100 queued
(asyncio's _accept_connection loops until EAGAIN) and uvloop's one each: what such a server shares is that the
cap is not applied, so its caps ran the same server. And the verdict picked among them: Puma's 'sweep
--accept-batch 1,0' read '1 limit's whole tail is lower', where a tail tighter by 10% would have read 'pick 1
limit': no cap is picked where none applies."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_one_error_line, run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "sweep.json"


def test_a_refused_cap_is_refused_before_any_cap_runs() -> None:
    # uvicorn (PyPI's, a test dependency) takes caps 0 and 1 and refuses 4: the 1 must not run first
    result = run_cli(["sweep", "--server", "uvicorn", "-w", "1", "--accept-batch", "1,4", "-n", "20", "-c", "2"])
    assert_one_error_line(result, 2, "--accept-batch does not apply to uvicorn")
    assert result.stdout == "", result.stdout


def test_the_note_says_the_cap_did_not_apply_not_how_many_it_accepts(tmp_path: Path) -> None:
    data = json.loads(GOLDEN.read_text())
    for run in data["runs"]:
        run["server"].update(server="uvicorn", mode="asyncio")
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(data))
    out = run_cli(["show", str(path)]).stdout
    note = next(line for line in out.splitlines() if line.startswith("Note:"))
    assert "--accept-batch does not apply to uvicorn's asyncio" in note, note
    assert "every cap ran the same server" in note, note
    assert "one connection per wakeup" not in note, note


def test_no_cap_is_picked_where_none_applies(tmp_path: Path) -> None:
    data = json.loads(GOLDEN.read_text())  # builtin epoll: 'no limit led on these runs' figures ...'
    assert "Verdict: No cap to pick: no limit led" in run_cli(["show", str(GOLDEN)]).stdout
    for run in data["runs"]:
        run["server"].update(server="puma", mode="cluster")
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(data))
    verdict = next(line for line in run_cli(["show", str(path)]).stdout.splitlines() if line.startswith("Verdict:"))
    assert "Pick" not in verdict and "No cap to pick: --accept-batch does not apply" in verdict, verdict
    assert "no limit vs 1 limit" in verdict, verdict  # what parts the two runs is still said
