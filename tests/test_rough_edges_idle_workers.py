"""'idle workers' means one thing: workers waiting for a connection. The hash note of compare and run said
"2 idle workers, 0.3 expected" of workers the hash gave no connection, whatever they waited for; it says
"served none" now, and no report or page counts idle workers in that sense again."""

from __future__ import annotations

import re
from pathlib import Path

from accept_order.analysis.seen import hash_pattern

ROOT = Path(__file__).resolve().parent.parent
# A count of idle workers beside an expected count, or idle workers 'expected': the hash's sense
HASH_SENSE = re.compile(r"(\d+|\}) idle workers?(\{[^}]*\})?, [\d.{}:a-z]+ expected|idle workers expected", re.I)
# A page's shown output (its fenced blocks) is what the tool printed when docs/regen.py last ran: judged by
# the source that prints it, not here
FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def test_the_hash_note_counts_workers_that_served_none() -> None:
    _, _, figures = hash_pattern([0, 6, 0])
    assert "2 workers served none, 0.3 expected" in figures and "idle" not in figures
    assert "1 worker served none" in hash_pattern([3, 3, 0])[2]


def test_no_report_or_page_counts_idle_workers_as_those_that_served_none() -> None:
    pages = [*(ROOT / "src").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in pages
        for match in HASH_SENSE.finditer(FENCED.sub("", path.read_text(encoding="utf-8")))
    ]
    assert not found, found
