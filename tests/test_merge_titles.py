"""merge says each file's title (latency --title: the question its run was made for) where the files' differ.

Kept from the first file alone, a merge of 'why A' and 'why B' headed its histogram 'why A' and the second title was
nowhere in the report or the merged file. The title is no setting of the server or the load (two client hosts' files
may be named for their hosts), so the files still add, as every other label of theirs does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def titled(name: str, title: str, started_at: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / name).read_text())
    for run in data.get("runs", [data]):
        run["title"] = title
        run["environment"] = {**run["environment"], "started_at": started_at}  # another measurement
    return data


def merged(tmp_path: Path, name: str, titles: tuple[str, str]) -> tuple[dict[str, Any], str]:
    paths = []
    for i, title in enumerate(titles):
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps(titled(name, title, f"2026-11-23T1{i}:00:00+00:00")))
        paths.append(str(path))
    out = tmp_path / "merged.json"
    result = run_cli(["merge", *paths, "--json", str(out)], columns=2000)  # the note on one line
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), result.stdout


def test_each_files_title_is_said_where_they_differ(tmp_path: Path) -> None:
    document, report = merged(tmp_path, "latency.json", ("why A", "why B"))
    assert document["title"] == "why A + why B"
    files = document["evidence"]["merged_from"]["files"]
    assert [(Path(f["file"]).name, f["title"]) for f in files] == [("0.json", "why A"), ("1.json", "why B")]
    assert "why A + why B min:" in report
    assert "0.json ('why A'), " in report and "1.json ('why B'))" in report


def test_each_runs_titles_of_a_comparison(tmp_path: Path) -> None:
    document, _ = merged(tmp_path, "latency-compare.json", ("why A", "why B"))
    for run in document["runs"]:
        assert run["title"] == "why A + why B"
        assert [f["title"] for f in run["evidence"]["merged_from"]["files"]] == ["why A", "why B"]


def test_one_title_shared_by_every_file_stays_as_it_was(tmp_path: Path) -> None:
    document, report = merged(tmp_path, "latency.json", ("why A", "why A"))
    assert document["title"] == "why A"
    assert all("title" not in f for f in document["evidence"]["merged_from"]["files"])
    assert "('why A')" not in report


def test_a_file_without_a_title_is_said_to_have_none(tmp_path: Path) -> None:
    """A file with no title (by hand, or another tool's) beside a titled one: said so, not as an empty title ('')."""
    document, report = merged(tmp_path, "latency.json", ("why A", ""))
    assert document["title"] == "why A"
    assert "1.json (no title))" in report and "('')" not in report, report


def test_default_titles_that_differ_by_port_are_one_question(tmp_path: Path) -> None:
    """Two runs without --title against a server restarted between them (a new port) carry defaults that differ
    by the port alone: no question of their own, so the merge keeps the first's as before, and the note lists no
    titles (under xdist the note listing both wrapped a test's expected words apart: 4bf7575)."""
    titles = ("Duration in ms (target 127.0.0.1:38863)", "Duration in ms (target 127.0.0.1:40211)")
    document, report = merged(tmp_path, "latency.json", titles)
    assert document["title"] == titles[0]
    assert all("title" not in source for source in document["evidence"]["merged_from"]["files"])
    assert "38863)'" not in report and "40211" not in report


def test_a_given_title_beside_a_default_is_still_said(tmp_path: Path) -> None:
    document, _ = merged(tmp_path, "latency.json", ("Duration in ms (target 127.0.0.1:38863)", "why B"))
    assert document["title"] == "Duration in ms (target 127.0.0.1:38863) + why B"
