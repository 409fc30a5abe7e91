"""A merged latency result says it is one, and whose pids its per-worker rows show.

`merge l1.json l2.json` of two `latency -n 2000/3000 -c 16` sessions printed 'worker 0, pid 12627, served 2452'
with nothing saying it was a merge: pid 12627 (worker 0 of the first session) served 916, worker 0 of the second
(pid 12664) the other 1536; results/merge.py adds the rows index by index and keeps the first file's pid.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import run_cli


def test_a_merge_of_two_sessions_names_its_files_and_whose_pids_it_shows(tmp_path: Path) -> None:
    paths = [tmp_path / "monday.json", tmp_path / "tuesday.json"]
    for path in paths:
        made = run_cli(["latency", "-w", "2", "-n", "40", "-c", "2", "--json", str(path)])
        assert made.exit_code == 0, made.output
    pids = [[c["pid"] for c in json.loads(path.read_text())["counters"]] for path in paths]
    assert not set(pids[0]) & set(pids[1])  # two sessions: two sets of worker processes

    merged = run_cli(["merge", *map(str, paths)], columns=1000)
    assert merged.exit_code == 0, merged.output
    out = merged.stdout
    note = next(line for line in out.splitlines() if line.startswith("Merged from"))
    assert "2 files measured one after the other" in note and str(paths[0]) in note and str(paths[1]) in note
    assert "the pids, the port and the affinity lines are the first file's" in note
    # the affinity lines name the first file's pids, as the note says, and none of the second's
    assert [int(pid) for pid in re.findall(r"^pid (\d+)'s current affinity list", out, re.M)] == pids[0]

    alone = run_cli(["show", str(paths[0])])
    assert alone.exit_code == 0 and "Merged from" not in alone.stdout
