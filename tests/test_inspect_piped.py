"""inspect's paragraphs at the left edge (its notes, 'A row's settings ...') are wrapped when its report goes
to a pipe, not cut at the pipe's width: '(no other mode looks like it in' lost ' /proc).' (a first-hour
tester's find)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "data" / "golden" / "inspect.json"


def test_a_long_note_reaches_a_pipe_whole(tmp_path: Path) -> None:
    doc = json.loads(GOLDEN.read_text())
    doc["notes"] = ["word " * 60 + "THE-END"]
    path = tmp_path / "inspect.json"
    path.write_text(json.dumps(doc))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}  # a pipe's own width
    proc = subprocess.run(
        [sys.executable, "-m", "accept_order", "show", str(path)], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "THE-END" in proc.stdout and proc.stdout.count("word") == 60, proc.stdout[-600:]
