"""sweep --target (nginx, --accept-batch 0) showed 'max/wakeup 0' and 'avg/wakeup 0.00': a server elsewhere counts
nothing this tool can read (its workers' counters are all None), so those are unknown, not zero. Shown as '-'."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "sweep.json"
UNCOUNTED = ("wakeups", "accepts", "empty", "max_batch", "voluntary_switches", "involuntary_switches", "cpu_s")


def _row(tmp_path: Path, counted: bool) -> str:
    data = json.loads(GOLDEN.read_text())
    data["runs"] = data["runs"][-1:]
    if not counted:
        for counter in data["runs"][0]["counters"]:
            counter.update(dict.fromkeys(UNCOUNTED))
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(data))
    out = run_cli(["show", str(path)]).stdout
    return next(line for line in out.splitlines() if "tps" in line and line.startswith(("no limit", "1 limit")))


def test_uncounted_accepts_are_unknown_not_zero(tmp_path: Path) -> None:
    cells = [c.strip() for c in _row(tmp_path, counted=False).split("|")]
    assert cells[-2:] == ["-", "-"], cells


def test_counted_accepts_are_shown(tmp_path: Path) -> None:
    cells = [c.strip() for c in _row(tmp_path, counted=True).split("|")]
    assert cells[-2] != "-" and float(cells[-1]) > 0, cells
