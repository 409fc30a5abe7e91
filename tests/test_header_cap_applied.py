"""The latency report's header names the --accept-batch cap only where the run's mode reads it: a file saved before
87222a4 may hold a cap its mode never read ('latency -m io-uring --accept-batch 4' ran, and its header said
'accept-batch 4'), as may a launched server's run given 1 (gunicorn takes 0 or 1 and reads neither). Such a file still
loads, and its header says what was applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "latency.json"  # blocking, 2 workers, no cap


@pytest.mark.parametrize(("mode", "said"), [("blocking", False), ("epoll", True)])
def test_the_header_says_the_cap_where_the_mode_reads_it(tmp_path: Path, mode: str, said: bool) -> None:
    doc = json.loads(GOLDEN.read_text())
    doc["server"].update(mode=mode, accept_batch=4)
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[0]
    assert header.startswith(f"accept-order latency: mode {mode}, 2 workers, work none"), header
    assert ("accept-batch 4" in header) is said, header
