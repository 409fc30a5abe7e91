"""Results as data: `show --format json|csv|hdr` and `merge`. The exports must carry the same numbers as the
result (counts add up to what was measured), stay inert (a spreadsheet formula in a file stays text), and
merging adds exactly: the merged histogram is the sum of the counts, not an estimate."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import Result
from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).parent / "data" / "v1"


def cli(*args: str) -> Result:
    return run_cli(list(args))


@pytest.fixture(scope="module")
def latency_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("export")
    paths = []
    for i in range(2):
        path = tmp / f"lat{i}.json"
        result = cli("latency", "-n", "500", "-c", "4", "-w", "2", "--json", str(path))
        assert result.exit_code == 0, result.output
        paths.append(path)
    return paths


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_json_is_the_version_2_document() -> None:
    result = cli("show", str(DATA / "compare.json"), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["version"] == 2 and doc["kind"] == "compare" and len(doc["runs"]) >= 2


def test_csv_records_are_every_connection() -> None:
    doc = json.loads(cli("show", str(DATA / "compare.json"), "--format", "json").stdout)
    table = rows(cli("show", str(DATA / "compare.json"), "--format", "csv").stdout)
    assert len(table) == sum(len(r["records"]) for r in doc["runs"])
    assert {row["run"] for row in table} == {r["server"]["mode"] for r in doc["runs"]}


def test_csv_histogram_and_hdr_carry_every_count(latency_files: list[Path]) -> None:
    doc = json.loads(latency_files[0].read_text())
    table = rows(cli("show", str(latency_files[0]), "--format", "csv").stdout)
    assert sum(int(r["count"]) for r in table) == doc["summary"]["count"] == 500
    workers = rows(cli("show", str(latency_files[0]), "--format", "csv", "--table", "workers").stdout)
    assert [int(w["served"]) for w in workers] == doc["served"]
    hdr = cli("show", str(latency_files[0]), "--format", "hdr").stdout.splitlines()
    values = [line.split() for line in hdr if line[:1] == " " and line.split()[0][0].isdigit()]
    shares = [float(v[1]) for v in values]
    assert shares == sorted(shares) and shares[-1] == 1.0 and int(values[-1][2]) == 500
    assert hdr[-1].startswith("#[Buckets") and any(line.startswith("#[Mean") for line in hdr)


def test_a_formula_in_a_file_stays_text(tmp_path: Path) -> None:
    doc = json.loads(cli("show", str(DATA / "run-blocking.json"), "--format", "json").stdout)
    doc["records"][0]["error"] = '=HYPERLINK("http://x")'
    doc["records"][0]["worker"] = None
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(doc))
    table = rows(cli("show", str(path), "--format", "csv").stdout)
    assert table[0]["error"].startswith("'=")


def test_a_table_the_result_does_not_have_is_one_line(latency_files: list[Path]) -> None:
    result = cli("show", str(latency_files[0]), "--format", "csv", "--table", "records")
    assert_one_error_line(result, 2, "a latency result has no connection records")
    assert result.stdout == ""


def test_merge_adds_exactly(latency_files: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "merged.json"
    result = cli("merge", *map(str, latency_files), "--json", str(out))
    assert result.exit_code == 0, result.output
    a, b, m = (json.loads(p.read_text()) for p in (*latency_files, out))
    counts = Counter({us: n for us, n in a["histogram"]["counts"]})
    counts.update({us: n for us, n in b["histogram"]["counts"]})
    assert {us: n for us, n in m["histogram"]["counts"]} == dict(counts)
    assert m["served"] == [x + y for x, y in zip(a["served"], b["served"], strict=True)]
    assert m["summary"]["count"] == 1000 and m["load"]["connections"] == 1000
    assert m["wall_s"] == pytest.approx(a["wall_s"] + b["wall_s"], abs=1e-5)
    assert [f["file"] for f in m["evidence"]["merged_from"]["files"]] == list(map(str, latency_files))
    concurrent = tmp_path / "concurrent.json"
    assert cli("merge", *map(str, latency_files), "--concurrent", "--json", str(concurrent)).exit_code == 0
    assert json.loads(concurrent.read_text())["wall_s"] == pytest.approx(max(a["wall_s"], b["wall_s"]), abs=1e-5)


def test_merge_refuses_different_experiments(latency_files: list[Path], tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    assert cli("latency", "-m", "reuseport", "-n", "200", "-c", "4", "-w", "2", "--json", str(other)).exit_code == 0
    assert_one_error_line(cli("merge", str(latency_files[0]), str(other)), 1, "not the same experiment", "mode")
    assert cli("merge", str(latency_files[0])).exit_code == 2
    wrong = cli("merge", str(DATA / "compare.json"), str(DATA / "compare.json"))
    assert_one_error_line(wrong, 1, "merge adds latency results")
