"""A ramp's or burst's steps table (show --format csv) left a kernel counter's cell blank in a step where it did not
move: the file keeps only the counters that moved, so 'ramp --rates 2000,8000 --work 200us --step 1s' read
counters.TcpExtListenOverflows blank at 2000/s (held) and 148 at 8000/s, where its table's overflows column said 0
and 148; a blank reads as not read (a spreadsheet's average skips it, pandas reads NaN). A counter another step
moved now reads 0 where it stayed put; a part with no counters at all (a file before them) stays blank."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def _csv(tmp_path: Path, name: str, change: Any = None) -> list[dict[str, str]]:
    data = json.loads(GOLDEN.joinpath(f"{name}.json").read_text())
    if change is not None:
        change(data)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    result = run_cli(["show", str(path), "--format", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_a_ramp_step_whose_counter_stayed_put_reads_zero(tmp_path: Path) -> None:
    first, second = _csv(tmp_path, "ramp")  # the golden ramp: resets and RSTs moved in its second step only
    assert (first["counters.TcpEstabResets"], second["counters.TcpEstabResets"]) == ("0", "1")
    assert (first["counters.TcpCurrEstab"], second["counters.TcpCurrEstab"]) == ("-12", "0")  # a delta may be < 0


def test_a_burst_cell_reads_zero_and_one_without_counters_stays_blank(tmp_path: Path) -> None:
    def moved(data: dict[str, Any]) -> None:
        epoll, reuseport = data["runs"]
        epoll["cells"][0]["counters"] = {}
        epoll["cells"][1]["counters"] = {"TcpExtListenOverflows": 5}
        reuseport["cells"][0].pop("counters", None)  # a file before them: nothing was read
        reuseport["cells"][1]["counters"] = {"TcpExtSyncookiesSent": 3}

    rows = _csv(tmp_path, "burst", moved)
    said = [(r["counters.TcpExtListenOverflows"], r["counters.TcpExtSyncookiesSent"]) for r in rows]
    assert said == [("0", "0"), ("5", "0"), ("", ""), ("0", "3")], said
