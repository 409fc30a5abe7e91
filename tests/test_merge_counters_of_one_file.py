"""Review P: the kernel counters of a merged load (results/merge.py, render/evidence.py).

1. Where only one file had kernel counters (an old file, a host without /proc/net/netstat), the merged load kept
   that file's and read 'none of 8 drop/overflow counters moved' (or 'ListenOverflows +12') for the whole load,
   or, the other file first, 'not available (no /proc/net/netstat)'. Now none are kept and it says why.
2. Files from different hosts had their counters added but labelled 'host-wide: shared network namespace, may
   include other TCP traffic on this host'. Now the hosts are named.

Saved files edited here (tests/data/v2/latency.json)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

V2 = Path(__file__).parent / "data" / "v2"


def _file(tmp_path: Path, name: str, day: int, hostname: str = "vm", counters: dict[str, int] | None = None) -> str:
    """The saved latency run, started on `day`, on `hostname`, its counters' deltas `counters` (None: a file
    from before the kernel counters, whose evidence has none)."""
    document: dict[str, Any] = copy.deepcopy(json.loads((V2 / "latency.json").read_text()))
    document["environment"]["started_at"] = f"2026-01-{day:02d}T00:00:00+00:00"
    document["environment"]["hostname"] = hostname
    evidence = document["evidence"]
    if counters is None:
        for key in ("counters", "counters_watched", "counters_available"):
            evidence.pop(key, None)
    else:
        evidence["counters"] = counters
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def _merged_counters(tmp_path: Path, *paths: str) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "merged.json"
    merged = run_cli(["merge", *paths, "--json", str(out)])
    assert merged.exit_code == 0, merged.output
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0, shown.output
    (line,) = [x for x in shown.stdout.splitlines() if "kernel counters" in x]
    return line, json.loads(out.read_text())["evidence"]


@pytest.mark.parametrize("moved", [{}, {"TcpExtListenOverflows": 12}])
@pytest.mark.parametrize("old_first", [False, True])
def test_counters_of_one_file_are_not_said_for_the_merged_load(
    tmp_path: Path, moved: dict[str, int], old_first: bool
) -> None:
    new, old = _file(tmp_path, "new.json", 1, counters=moved), _file(tmp_path, "old.json", 2)
    line, evidence = _merged_counters(tmp_path, *((old, new) if old_first else (new, old)))
    assert "not added for the merged load: not in every merged file" in line, line
    assert "moved" not in line and "ListenOverflows" not in line and "/proc/net/netstat" not in line
    assert "counters" not in evidence


def test_counters_in_no_file_are_not_available_as_before(tmp_path: Path) -> None:
    line, _ = _merged_counters(tmp_path, _file(tmp_path, "a.json", 1), _file(tmp_path, "b.json", 2))
    assert "not available" in line and "not in every merged file" not in line


def test_counters_of_several_hosts_are_added_and_named_theirs(tmp_path: Path) -> None:
    a = _file(tmp_path, "a.json", 1, "vm", {"TcpExtListenOverflows": 12})
    b = _file(tmp_path, "b.json", 2, "vm", {"TcpExtListenOverflows": 1})
    c = _file(tmp_path, "c.json", 3, "other", {"TcpExtListenOverflows": 4})
    line, evidence = _merged_counters(tmp_path, a, b, c)
    assert "ListenOverflows +17" in line
    assert "added over 2 hosts' shared network namespaces: other, vm" in line and "this host" not in line, line
    assert evidence["counters_hosts"] == ["other", "vm"]
    line, _ = _merged_counters(tmp_path, a, b)  # one host: its own namespace's, as a file of it says
    assert "ListenOverflows +13" in line and "other TCP traffic on this host" in line, line
