"""The note on a load generator sharing the workers' CPUs counts its words: `latency -n 1 -c 64 -w 2` (one
connection: one driver process) said 'The load generator's 1 processes run on the same 2 CPUs as the 2 workers;
they waited ... of their time'."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "latency.json"


def _note(path: Path) -> str:
    out = run_cli(["show", str(path)]).stdout
    return next(line for line in out.splitlines() if line.startswith("The load generator's"))


def test_one_driver_process_is_one_process(tmp_path: Path) -> None:
    doc = json.loads(GOLDEN.read_text())
    doc["load"]["driver_procs"] = 1
    doc["drivers"] = doc["drivers"][:1]
    doc["drivers"][0]["runqueue_s"] = 0.001  # 5% of its 21 ms: below a starved driver's warning
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(doc))
    assert _note(path) == (
        "The load generator's 1 process runs on the same 2 CPUs as the 2 workers; it waited for a CPU at most 5% of "
        "its time; that wait is part of the measured latencies."
    )


def test_two_driver_processes_keep_their_plural(tmp_path: Path) -> None:
    doc = json.loads(GOLDEN.read_text())
    for driver in doc["drivers"]:
        driver["runqueue_s"] = 0.001
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(doc))
    assert _note(path).startswith("The load generator's 2 processes run on the same 2 CPUs as the 2 workers; they")
