"""The tool's uvicorn differs from a user's: it sets TCP_NODELAY on its listening socket (340ea3f), where a
user's `uvicorn --workers N --loop asyncio` has Nagle on (Kludex/uvicorn#3149) and a reply over a kept connection
waits for the client's delayed ACK. Each report of a run of it says so, once, where a kind's other notes go;
uvloop (which sets TCP_NODELAY itself) and one worker (asyncio's own socket, which has it) do not differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from accept_order.core.spec import ServerSpec
from accept_order.servers.kind_notes import launch_note

GOLDEN = Path(__file__).parent / "data" / "golden"
NOTE = "this tool's uvicorn sets TCP_NODELAY on its listening socket"
REPORTS = ["run", "compare", "latency", "latency-compare", "sweep", "ramp", "burst"]


def as_uvicorn(doc: Any, mode: str, workers: int) -> int:
    """Every server spec in the document made uvicorn's (in place); how many there were."""
    found = 0
    if isinstance(doc, dict):
        if isinstance(doc.get("server"), str) and "mode" in doc and "workers" in doc:
            doc.update(server="uvicorn", mode=mode, workers=workers)
            found += 1
        found += sum(as_uvicorn(value, mode, workers) for value in doc.values())
    elif isinstance(doc, list):
        found += sum(as_uvicorn(value, mode, workers) for value in doc)
    return found


def shown(name: str, tmp_path: Path, mode: str = "asyncio", workers: int = 3) -> str:
    doc = json.loads((GOLDEN / f"{name}.json").read_text())
    assert as_uvicorn(doc, mode, workers) >= 1
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)], columns=400)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("name", REPORTS)
def test_each_report_of_a_launched_uvicorn_asyncio_says_it_once(name: str, tmp_path: Path) -> None:
    assert shown(name, tmp_path).count(NOTE) == 1
    assert NOTE not in shown(name, tmp_path, mode="uvloop")


def test_only_asyncio_with_workers_differs() -> None:
    note = launch_note(ServerSpec(kind="uvicorn", mode="asyncio", workers=3))
    assert note is not None and note.startswith(NOTE) and "Kludex/uvicorn#3149" in note
    assert launch_note(ServerSpec(kind="uvicorn", mode="uvloop", workers=3)) is None
    assert launch_note(ServerSpec(kind="uvicorn", mode="asyncio", workers=1)) is None
    assert launch_note(ServerSpec(kind="nginx", mode="epoll", workers=3)) is None
