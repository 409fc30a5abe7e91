"""Review RC of cbfa5f5: the tool's uvicorn (TCP_NODELAY on its listener, where a user's `uvicorn --workers N
--loop asyncio` has Nagle on) was said in seven reports but not in herd's (herd --server uvicorn) nor in any
--repeat report (latency, ramp, burst, run, herd --repeat): now once in each, none for uvloop."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_uvicorn_launch_note import NOTE, shown

REPORTS = ["herd", "repeat", "repeat-latency", "repeat-ramp", "repeat-burst"]


@pytest.mark.parametrize("name", REPORTS)
def test_herd_and_repeat_reports_of_a_launched_uvicorn_asyncio_say_it_once(name: str, tmp_path: Path) -> None:
    assert shown(name, tmp_path).count(NOTE) == 1
    assert NOTE not in shown(name, tmp_path, mode="uvloop")
