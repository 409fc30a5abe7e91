"""`ramp --modes epoll,reuseport` (a result of kind repeat) exported its steps with `show --format csv` without the
two columns its table says why a step broke by: 'overflows' (488 and 469 at 6000/s here, the server's listeners'
drops, as nstat's ListenOverflows grew by 957 in all) and 'max Recv-Q' (512: the queue full). One ramp's steps table
had them; --modes' rows now do too, as the table gives them: the listeners' drops where read, else ListenOverflows,
blank where neither was read."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def _rows(tmp_path: Path, change: Any) -> list[dict[str, str]]:
    data = json.loads(GOLDEN.joinpath("repeat-ramp.json").read_text())
    change(data["rounds"][0][0]["steps"])  # round 1's epoll: a step at 200/s, one at 2000/s
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(data))
    result = run_cli(["show", str(path), "--format", "csv"])
    assert result.exit_code == 0, result.output
    return [row for row in csv.DictReader(io.StringIO(result.stdout)) if row["round"] == "1" and row["run"] == "epoll"]


def test_the_steps_say_their_overflows_and_longest_queue(tmp_path: Path) -> None:
    def broke(steps: list[dict[str, Any]]) -> None:
        steps[1].update(listener_drops=488, queues=[512, 40], counters={"TcpExtListenOverflows": 500})

    held, broken = _rows(tmp_path, broke)
    assert (held["overflows"], held["max_recv_q"]) == ("0", "0"), held
    # the server's own listeners' drops, not the namespace's counter, where both were read (as the table)
    assert (broken["overflows"], broken["max_recv_q"], broken["held"]) == ("488", "512", "False"), broken


def test_without_the_listeners_drops_the_counter_and_without_queues_a_blank(tmp_path: Path) -> None:
    def counted(steps: list[dict[str, Any]]) -> None:
        steps[1].update(counters={"TcpExtListenOverflows": 9}, queues=[])
        steps[1].pop("listener_drops", None)

    _, broken = _rows(tmp_path, counted)
    assert (broken["overflows"], broken["max_recv_q"]) == ("9", ""), broken
