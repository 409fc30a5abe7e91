"""latency --repeat's line of a mode's own listeners' drops gives one run's count, the range over its runs, and says
so: 49e6e1b's 'epoll: the server's listeners dropped 135 handshake packets over its 2 runs' read as 135 in all where
each run dropped 135 (270), and a mode with a run whose drops were not read read '... in 1 of its 2'. The golden
--repeat file (tests/data/golden/repeat-latency.json) with drops set."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

REPEATED = Path(__file__).parent / "data" / "golden" / "repeat-latency.json"


def test_each_runs_count_is_said_as_each_runs(tmp_path: Path) -> None:
    document = json.loads(REPEATED.read_text())
    for row in document["rounds"]:
        for run in row:
            run["evidence"]["listener_drops"] = 135
    document["rounds"][1][1]["evidence"].pop("listener_drops")  # reuseport's second run: not read
    path = tmp_path / "repeat.json"
    path.write_text(json.dumps(document))
    shown = run_cli(["show", str(path)], columns=1000)
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.stdout.splitlines() if "listeners dropped" in line]
    assert lines == [
        "blocking: the server's listeners dropped 135 handshake packets in each of its 2 runs",
        "reuseport: the server's listeners dropped 135 handshake packets in the one of its 2 runs that read them",
    ], lines
