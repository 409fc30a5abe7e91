"""merge kept the first file's evidence as the merged load's: two cluster runs merged said 'observe on server ...
each worker's accepts equal the connections its replies named (52,898 in all)' under a table of 95,556 served,
and 'other processes used 59% of the CPUs, this run's own 36%' from the first file's CPU ticks beside both files'
load generators (the first file alone: 73% and 22%). The counters' deltas and observe's counts now add; the
host's CPU of one window is not kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "latency.json"


def _observed(served: list[int], cpu_s: float) -> list[dict[str, Any]]:
    workers = [
        {"pid": 100 + i, "tid": None, "accepts": n, "served_by_replies": n, "cpu_s": cpu_s}
        for i, n in enumerate(served)
    ]
    return [{"host": "server", "program": "nginx", "traced": True, "wall_s": 1.0, "workers": workers, "agrees": True}]


def _file(tmp_path: Path, name: str, counters: dict[str, int], busy: int) -> str:
    data = json.loads(GOLDEN.read_text())
    data["environment"]["started_at"] = name  # another session's file, not a copy
    evidence = data["evidence"]
    evidence["counters"] = counters
    evidence["observed_on"] = _observed(data["served"], 0.5)
    jiffies = evidence["machine"]["before"]["cpu_jiffies"]
    jiffies["busy"] = 0
    evidence["machine"]["after"]["cpu_jiffies"].update(busy=busy, total=jiffies["total"] + 400)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_merged_evidence_is_every_file_s(tmp_path: Path) -> None:
    a = _file(tmp_path, "a", {"TcpExtListenOverflows": 3}, busy=380)
    b = _file(tmp_path, "b", {"TcpExtListenOverflows": 4, "TcpExtTCPAbortOnClose": 1}, busy=380)
    out = tmp_path / "merged.json"
    run_cli(["merge", a, b, "--json", str(out)])
    evidence = json.loads(out.read_text())["evidence"]
    assert evidence["counters"] == {"TcpExtListenOverflows": 7, "TcpExtTCPAbortOnClose": 1}
    served = json.loads(Path(a).read_text())["served"]
    observed = evidence["observed_on"][0]
    assert [w["accepts"] for w in observed["workers"]] == [2 * n for n in served]
    assert [w["cpu_s"] for w in observed["workers"]] == [1.0] * len(served)
    assert observed["agrees"] and observed["wall_s"] == 2.0
    assert "machine" not in evidence  # one window's CPU: 'others used' would be the first file's ticks less all drivers
    shown = run_cli(["show", str(out)]).stdout
    assert "busy host-wide" not in shown
    assert f"({2 * sum(served):,} in all)" in shown


def test_observe_of_other_workers_is_not_added(tmp_path: Path) -> None:
    a = _file(tmp_path, "a", {}, busy=0)
    data = json.loads(Path(_file(tmp_path, "b", {}, busy=0)).read_text())
    data["evidence"]["observed_on"][0]["workers"][0]["pid"] = 999  # another server's workers
    Path(tmp_path / "b.json").write_text(json.dumps(data))
    out = tmp_path / "merged.json"
    run_cli(["merge", a, str(tmp_path / "b.json"), "--json", str(out)])
    assert "observed_on" not in json.loads(out.read_text())["evidence"]


def _with_observed(path: str, change: Any) -> str:
    data = json.loads(Path(path).read_text())
    change(data["evidence"]["observed_on"][0])
    Path(path).write_text(json.dumps(data))
    return path


def _idle_worker(seen: dict[str, Any]) -> None:
    # a worker no connection came to (nginx without reuseport under a light load): no reply named it
    seen["workers"].append({"pid": 999, "tid": None, "accepts": 0, "served_by_replies": None, "cpu_s": 0.0})


def test_a_worker_that_took_nothing_in_either_file_still_agrees(tmp_path: Path) -> None:
    """Each file said 'each worker's accepts equal the connections its replies named'; their merge said 'the
    counts differ: connections came from elsewhere too' of a worker that had taken none in either."""
    a = _with_observed(_file(tmp_path, "a", {}, busy=0), _idle_worker)
    b = _with_observed(_file(tmp_path, "b", {}, busy=0), _idle_worker)
    out = tmp_path / "merged.json"
    run_cli(["merge", a, b, "--json", str(out)])
    shown = run_cli(["show", str(out)]).stdout
    assert "each worker's accepts equal the connections its replies named" in shown
    assert "the counts differ" not in shown


def _sampled(seen: dict[str, Any]) -> None:
    # observe without bpftrace: approximate accepts, which joined does not set beside the replies (agrees None)
    seen.update(traced=False, agrees=None)
    seen["workers"][0]["cpu_s"] = None


def test_a_sampled_file_makes_the_merged_counts_sampled(tmp_path: Path) -> None:
    a = _file(tmp_path, "a", {}, busy=0)
    b = _with_observed(_file(tmp_path, "b", {}, busy=0), _sampled)
    out = tmp_path / "merged.json"
    run_cli(["merge", a, b, "--json", str(out)])
    observed = json.loads(out.read_text())["evidence"]["observed_on"][0]
    assert observed["traced"] is False and observed["agrees"] is None
    assert observed["workers"][0]["cpu_s"] is None  # one file's CPU alone is not the merged load's
    shown = " ".join(run_cli(["show", str(out)]).stdout.split())  # the title wraps
    assert "accepts sampled, approximate" in shown and "accepts equal" not in shown
