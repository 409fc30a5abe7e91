"""What `show` prints of a result file's verdict, for the tests that set readings on a golden comparison and read
what the verdict makes of them (tests/test_latency_modes_machine_unlike.py, tests/test_latency_work_unalike.py).
Imported by name, as conftest's helpers are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def verdict_shown(doc: dict[str, Any], folder: Path) -> str:
    """`show` of `doc` (written in `folder`) from its 'Verdict:' to the report's end, its wrapped lines rejoined."""
    path = folder / f"{doc['kind']}.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    return " ".join(out[out.index("Verdict:") :].split())
