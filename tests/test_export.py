"""Results as data: `show --format json|csv|hdr` and `merge`. The exports must carry the same numbers as the
result (counts add up to what was measured), stay inert (a spreadsheet formula in a file stays text), and
merging adds exactly: the merged histogram is the sum of the counts, not an estimate."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).parent / "data" / "v1"
V2 = Path(__file__).parent / "data" / "v2"


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
    wrong = cli("merge", str(DATA / "compare.json"), str(DATA / "latency.json"))
    assert_one_error_line(wrong, 1, "merge adds latency results")


def _edited(source: Path, target: Path, change: Any) -> Path:
    doc = json.loads(source.read_text())
    change(doc)
    target.write_text(json.dumps(doc))
    return target


def _load(**values: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        doc["load"].update(values)
        doc["environment"]["started_at"] = f"another time {values}"

    return change


def test_merge_refuses_a_number_of_connections_with_a_time(latency_files: list[Path], tmp_path: Path) -> None:
    timed = _edited(latency_files[1], tmp_path / "timed.json", _load(connections=None, duration_s=2.0))
    result = cli("merge", str(latency_files[0]), str(timed))
    assert_one_error_line(result, 1, "timed.json is not the same experiment", "500 connections vs a 2.0 s duration")
    # the amount may differ between files of one shape: times add, as connections do
    longer = _edited(latency_files[0], tmp_path / "longer.json", _load(connections=None, duration_s=3.0))
    out = tmp_path / "merged.json"
    assert cli("merge", str(timed), str(longer), "--json", str(out)).exit_code == 0
    assert json.loads(out.read_text())["load"]["duration_s"] == 5.0


def test_merge_never_counts_a_measurement_twice(latency_files: list[Path], tmp_path: Path) -> None:
    a, b = map(str, latency_files)
    for args in ([a, a], [a, b, a], [a, str(Path(a).parent / "." / Path(a).name)]):
        assert_one_error_line(cli("merge", *args), 1, "are the same file", "count every connection twice")
    link = tmp_path / "link.json"
    link.symlink_to(a)
    assert_one_error_line(cli("merge", a, str(link)), 1, "are the same file")
    # a copy, even with another title, is the same measurement
    copy = _edited(Path(a), tmp_path / "copy.json", lambda doc: doc.update(title="another title"))
    assert_one_error_line(cli("merge", a, str(copy)), 1, "hold the same measurement", "would count it twice")
    # a merge already holds what went into it
    both = tmp_path / "both.json"
    assert cli("merge", a, b, "--json", str(both)).exit_code == 0
    for args in ([str(both), b], [b, str(both)], [a, str(both)]):  # in either order, whichever went in
        assert_one_error_line(cli("merge", *args), 1, f"both.json already holds {args[args[0] == str(both)]}'s")


def test_merge_shows_strings_from_files_and_arguments_escaped(latency_files: list[Path], tmp_path: Path) -> None:
    def hostile(doc: dict[str, Any]) -> None:
        doc["title"] = "T\x1b]0;pwned\x07\x1b[2J"
        doc["server"]["host"] = "127.0.0.1\x1b[31m"

    evil = [_edited(path, tmp_path / f"evil{i}.json", hostile) for i, path in enumerate(latency_files)]
    out = tmp_path / "a\x1b[31mb.json"
    result = cli("merge", *map(str, evil), "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "T\\x1b]0;pwned\\x07\\x1b[2J" in result.stdout and "127.0.0.1\\x1b[31m" in result.stdout
    assert result.stderr == f"wrote {tmp_path}/a\\x1b[31mb.json\n"
    assert json.loads(out.read_text())["title"] == "T\x1b]0;pwned\x07\x1b[2J"  # the data keeps its characters


def test_an_argument_echoed_back_is_escaped(tmp_path: Path) -> None:
    result = cli("latency", "-n", "20", "-c", "2", "-w", "1", "--title", "x\x1b[31my\u202e")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert "x\\x1b[31my\\u202e min:" in result.stdout


def test_plot_names_its_picture_as_given(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "a[bold]b.png"
    result = cli("plot", str(DATA / "latency.json"), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stderr == f"wrote {out}\n"  # rich markup neither applied nor escaped with a backslash


@pytest.mark.parametrize("kind", ["ramp", "burst"])
def test_a_formula_in_a_column_name_stays_text(kind: str, tmp_path: Path) -> None:
    def formula_key(doc: dict[str, Any]) -> None:
        rows = doc["steps"] if kind == "ramp" else doc["runs"][0]["cells"]
        rows[0]["=HYPERLINK(1)"] = 1
        rows[0]["counters"]["@SUM(1)"] = 2

    path = _edited(V2 / f"{kind}.json", tmp_path / f"{kind}.json", formula_key)
    result = cli("show", str(path), "--format", "csv")
    assert result.exit_code == 0, result.output
    header = next(csv.reader(io.StringIO(result.stdout)))
    assert "'=HYPERLINK(1)" in header and "'counters.@SUM(1)" not in header and "counters.@SUM(1)" in header
    assert not [name for name in header if name[:1] in ("=", "+", "-", "@")]


def test_hdr_with_as_many_samples_as_a_file_may_hold_divides_exactly() -> None:
    """1/(1-share) divided by zero once the share rounded to 1.0 (a count of 1e30 did it); the column is now
    total/(total-at), exact for any count a file may hold (results/schema.py: up to 2**53 in all)."""
    from accept_order.core.histogram import LatencyHistogram
    from accept_order.results.export import hdr_percentiles
    from accept_order.results.schema import MAX_COUNT

    hist = LatencyHistogram.from_dict({"unit": "us", "counts": [[100, MAX_COUNT - 1], [200, 1]]})
    lines = hdr_percentiles(hist).splitlines()
    assert lines[-1].endswith(f"SubBuckets     = {2:12d}]")
    rows = [line.split() for line in lines[2:] if line.startswith(" ")]
    assert rows[0][3] == f"{MAX_COUNT / 1:.2f}" and rows[-1][2] == str(MAX_COUNT)


def test_merge_refuses_counts_that_add_up_past_what_a_file_may_hold(latency_files: list[Path], tmp_path: Path) -> None:
    from accept_order.results.schema import MAX_COUNT

    def huge(doc: dict[str, Any]) -> None:
        doc["histogram"]["counts"][0][1] = MAX_COUNT // 2
        doc.pop("summary")

    big = [_edited(path, tmp_path / f"big{i}.json", huge) for i, path in enumerate(latency_files)]
    result = cli("merge", *map(str, big))
    assert_one_error_line(
        result, 1, "the merged result: histogram.counts: the counts add up to", f"more than {MAX_COUNT}"
    )


def test_merge_takes_a_driver_without_its_optional_figures(latency_files: list[Path], tmp_path: Path) -> None:
    """Found by the fuzz test: a driver without runqueue_s (optional: None when /proc has no schedstat)
    fits the file's shape, and merge ended in KeyError on it."""

    def older(doc: dict[str, Any]) -> None:
        for driver in doc["drivers"]:
            driver.pop("runqueue_s")
            driver.pop("open_s", None)

    lean = _edited(latency_files[1], tmp_path / "lean.json", older)
    out = tmp_path / "merged.json"
    result = cli("merge", str(latency_files[0]), str(lean), "--json", str(out))
    assert result.exit_code == 0, result.output
    assert [d["runqueue_s"] is None for d in json.loads(out.read_text())["drivers"]].count(True) == 2


@pytest.mark.parametrize(
    ("kind", "table", "said"),
    [
        ("inspect", "workers", "an inspect result keeps no per-worker table (try --table waits)"),
        ("atlas", "records", "an atlas result has no connection records (try --table rows)"),
        ("burst", "records", "a burst result has no connection records (try --table steps or hosts)"),
    ],
)
def test_a_table_a_kind_lacks_names_the_tables_it_has(kind: str, table: str, said: str) -> None:
    """0.3 suggested --table steps for every kind without workers (inspect has none) and said 'a inspect'."""
    golden = Path(__file__).parent / "data" / "golden" / f"{kind}.json"
    assert_one_error_line(run_cli(["show", str(golden), "--format", "csv", "--table", table]), 2, said)
