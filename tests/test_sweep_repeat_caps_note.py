"""sweep --repeat over caps a server has no setting for said nothing of it: one sweep's report notes that
--accept-batch does not apply (829b2e0: every cap ran the same server), its --repeat's did not, beside a verdict
that ranks the caps ('1 limit has the lowest p99 in 2/2 runs'). The repeated report says it now, as one sweep's does;
epoll's caps apply, and its repeated report still has no such note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "sweep.json"  # builtin epoll, caps 1 and 0


def _repeated(tmp_path: Path, server: str, mode: str) -> list[str]:
    runs: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["runs"]
    for run in runs:
        run["server"].update(server=server, mode=mode)
    doc = json.loads(GOLDEN.read_text()) | {"kind": "repeat", "of": "sweep", "rounds": [runs, runs], "machine": {}}
    doc.pop("runs")
    path = tmp_path / "repeat.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_a_repeated_sweep_says_the_cap_did_not_apply(tmp_path: Path) -> None:
    lines = _repeated(tmp_path, "uvicorn", "asyncio")
    assert any(line.startswith("Verdict:") for line in lines), lines
    notes = [line for line in lines if line.startswith("Note: --accept-batch does not apply to uvicorn's asyncio")]
    assert len(notes) == 1 and "every cap ran the same server" in notes[0], lines


def test_a_repeated_sweep_whose_cap_applies_has_no_such_note(tmp_path: Path) -> None:
    lines = _repeated(tmp_path, "builtin", "epoll")
    assert any(line.startswith("Verdict:") for line in lines), lines
    assert not [line for line in lines if "does not apply" in line], lines
