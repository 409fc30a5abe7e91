"""Result files: a run survives a JSON round trip; other schemas, newer versions, non-JSON and malformed
values are refused; version 1 files written by accept-order 0.1.0 still load and render."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from accept_order.core.errors import ResultFileError
from accept_order.core.measures import ConnectionRecord, Environment, Verdict, WorkerCounters
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import documents
from accept_order.experiments.documents import render_document
from accept_order.experiments.order.result import RunResult
from accept_order.results import envelope

V1_DATA = Path(__file__).resolve().parent / "data" / "v1"
V1_FILES = sorted(V1_DATA.glob("*.json"))


def sample_result() -> RunResult:
    return RunResult(
        server=ServerSpec(mode="blocking", workers=2, cpus=(0, 1)),
        load=SequentialLoad(connections=3, gap_ms=1.5, settle=False),
        environment=Environment(
            system="Linux",
            kernel="6.1.0-test",
            machine="x86_64",
            cpu_count=2,
            somaxconn=4096,
            python="3.11.9",
            hostname="box",
            started_at="2024-01-01T00:00:00+00:00",
        ),
        port=40123,
        records=(
            ConnectionRecord(0, 0, 100, 12, 340),
            ConnectionRecord(1, None, None, 1500, 5_000_000, "timeout: no answer within 5 s"),
            ConnectionRecord(2, 1, 101, 3012, 290),
        ),
        counters=(
            WorkerCounters(0, 100, 1, 1, 0, 1, 2, 0, 0.001, (0,)),
            WorkerCounters(1, 101, 2, 1, 1, 1, None, None, None, (1,)),
        ),
        verdict=Verdict("rotation (FIFO among idle workers)", "fifo", 2, 2, "why", 1.0, 1.0, True, 1.5),
        evidence={"kept as it is": [1, 2, 3]},
        wall_s=0.25,
        unsettled=1,
    )


def rendered(kind: str, document: dict[str, Any]) -> str:
    """The text `show` would print (rich renders lazily, so print it all to find any failure)."""
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render_document(kind, document), crop=False)
    return out.getvalue()


def test_run_result_round_trip(tmp_path: Path) -> None:
    result = sample_result()
    path = tmp_path / "run.json"
    envelope.save(path, "run", result.to_dict())
    kind, doc = documents.load(path)
    assert kind == "run"
    assert doc["schema"] == envelope.SCHEMA
    assert doc["version"] == envelope.SCHEMA_VERSION == 2
    assert doc["tool"] == {"name": "accept-order", "version": envelope.tool_version()}
    assert "upgraded_from" not in doc  # a version 2 file is read as written
    again = RunResult.from_dict(doc)
    assert again == result
    assert again.records == result.records  # every record, failed ones included, in order
    assert again.server.cpus == (0, 1)  # tuples come back as tuples, not lists
    assert again.load == SequentialLoad(connections=3, gap_ms=1.5, settle=False)
    assert again.counters[0].affinity == (0,)
    assert (again.served, again.failed, again.sequence) == (2, 1, [0, 1])
    assert again.records[1].error == "timeout: no answer within 5 s"
    assert "blocking" in rendered(kind, doc)


def test_saved_file_is_plain_versioned_json(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    envelope.save(path, "run", sample_result().to_dict())
    doc = json.loads(path.read_text())
    keys = {"schema", "version", "kind", "tool", "server", "load", "environment", "records", "counters", "verdict"}
    assert keys <= set(doc)
    assert "plan" not in doc  # version 2 splits the plan into server and load
    assert doc["version"] == 2
    assert doc["tool"]["version"] == envelope.tool_version()
    assert doc["load"]["kind"] == "sequential"
    assert doc["counters"][1]["wakeups"] == 2 and "returns" not in doc["counters"][1]
    assert doc["environment"]["kernel"] == "6.1.0-test"
    assert doc["environment"]["somaxconn"] == 4096
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # written atomically: no temporary file left


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    doc = sample_result().to_dict()
    doc["server"]["added_later"] = 1
    doc["load"]["added_later"] = 1
    doc["counters"][0]["added_later"] = 2
    doc["environment"]["added_later"] = 3
    doc["records"][0]["added_later"] = 4
    assert RunResult.from_dict(doc) == sample_result()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json at all", "is not JSON"),
        ("", "is not JSON"),
        ("[1, 2]", "is not a result: its top level is a list"),
        ('{"schema": "something-else", "version": 1, "kind": "run"}', "is not an accept-order result file"),
        ('{"kind": "run"}', "is not an accept-order result file"),
        ('{"schema": "accept-order", "version": 999, "kind": "run"}', "schema version 999"),
        ('{"schema": "accept-order", "kind": "run"}', "has no schema version"),
        ('{"schema": "accept-order", "version": "1", "kind": "run"}', 'invalid schema version "1"'),
        ('{"schema": "accept-order", "version": -5, "kind": "run"}', "invalid schema version -5"),
        ('{"schema": "accept-order", "version": 0, "kind": "run"}', "invalid schema version 0"),
        ('{"schema": "accept-order", "version": true, "kind": "run"}', "invalid schema version true"),
        ('{"schema": "accept-order", "version": 1.0, "kind": "run"}', "invalid schema version 1.0"),
        ('{"schema": "accept-order", "version": 2}', 'no "kind"'),
        ('{"schema": "accept-order", "version": 2, "kind": "bogus"}', "kind 'bogus'"),
        ('{"schema": "accept-order", "version": 1, "kind": "bogus"}', "kind 'bogus'"),
        ('{"schema": "accept-order", "version": 2, "kind": 7}', "invalid result kind 7"),
    ],
)
def test_load_refuses(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path / "bad.json", text)
    with pytest.raises(ResultFileError, match=message) as info:
        documents.load(path)
    assert info.value.exit_code == 1


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="cannot read"):
        documents.load(tmp_path / "absent.json")


def test_save_into_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="cannot write"):
        envelope.save(tmp_path / "no" / "such" / "dir.json", "run", {})


def test_newer_version_message_says_what_this_version_reads(tmp_path: Path) -> None:
    path = _write(tmp_path / "new.json", json.dumps({"schema": "accept-order", "version": 99}))
    with pytest.raises(ResultFileError) as info:
        documents.load(path)
    assert f"reads up to {envelope.SCHEMA_VERSION}" in str(info.value)


def test_render_refuses_an_unknown_kind() -> None:
    with pytest.raises(ResultFileError, match="bogus") as info:
        render_document("bogus", sample_result().to_dict())
    assert info.value.exit_code == 1


# -- malformed values in an otherwise well-formed version 2 file ----------------------------------------


def _record_worker(worker: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        doc["records"][2]["worker"] = worker

    return change


def _set(section: str, index: int | None, field: str, value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        target = doc[section] if index is None else doc[section][index]
        target[field] = value

    return change


@pytest.mark.parametrize(
    ("change", "message", "in_file"),
    [
        (
            _record_worker(-1),
            "ConnectionRecord.worker: expected a non-negative integer or null, got -1",
            "records[2].worker: expected a non-negative integer or null, got -1",
        ),
        (
            _record_worker(2),
            "names worker 2, not one of 0..1",
            "records[2].worker: names worker 2, but the server had 2 (0..1)",
        ),
        (_record_worker(99), "names worker 99", "records[2].worker: names worker 99"),
        (
            _record_worker(True),
            "ConnectionRecord.worker: expected a non-negative integer or null, got true",
            "records[2].worker: expected a non-negative integer or null, got true",
        ),
        (
            _record_worker("1"),
            'ConnectionRecord.worker: expected a non-negative integer or null, got "1"',
            'records[2].worker: expected a non-negative integer or null, got "1"',
        ),
        (
            _set("counters", 0, "wakeups", "3"),
            "WorkerCounters.wakeups: expected",
            'counters[0].wakeups: expected a non-negative integer or null, got "3"',
        ),
        (
            _set("counters", 1, "accepts", "1"),
            "WorkerCounters.accepts: expected",
            "counters[1].accepts: expected",
        ),
        (
            _set("counters", 0, "cpu_s", "0.5"),
            "WorkerCounters.cpu_s: expected",
            'counters[0].cpu_s: expected a non-negative number or null, got "0.5"',
        ),
        (
            _set("records", 0, "latency_us", "340"),
            "ConnectionRecord.latency_us: expected",
            'records[0].latency_us: expected a non-negative integer, got "340"',
        ),
        (
            _set("records", 0, "seq", None),
            "ConnectionRecord.seq: expected",
            "records[0].seq: expected a non-negative integer, got null",
        ),
        (
            _set("server", None, "workers", "2"),
            "ServerSpec.workers: expected",
            'server.workers: expected an integer from 1 to 512, got "2"',
        ),
        (
            _set("verdict", None, "expected", 1),
            "Verdict.expected: expected",
            "verdict.expected: expected true or false, got 1",
        ),
    ],
)
def test_malformed_values_are_refused(tmp_path: Path, change: Any, message: str, in_file: str) -> None:
    doc = sample_result().to_dict()
    change(doc)
    path = tmp_path / "bad.json"
    envelope.save(path, "run", doc)
    with pytest.raises(ResultFileError) as loading:  # what show, merge and plot do: one line naming the field
        documents.load(path)
    assert str(loading.value).startswith(f"{path}: {in_file}")
    assert loading.value.exit_code == 1
    with pytest.raises(ResultFileError, match=message) as info:  # the Python API checks what it builds too
        RunResult.from_dict(doc)
    assert info.value.exit_code == 1
    with pytest.raises(ResultFileError, match=message):
        render_document("run", doc)


def test_malformed_run_inside_a_compare_is_refused(tmp_path: Path) -> None:
    bad = sample_result().to_dict()
    bad["records"][0]["worker"] = 7
    path = tmp_path / "compare.json"
    envelope.save(path, "compare", {"runs": [sample_result().to_dict(), bad], "skipped": {}})
    with pytest.raises(ResultFileError, match=r"runs\[1\]\.records\[0\]\.worker: names worker 7"):
        documents.load(path)
    with pytest.raises(ResultFileError, match="names worker 7"):
        render_document("compare", {"runs": [sample_result().to_dict(), bad], "skipped": {}})


# -- version 1 files, as accept-order 0.1.0 wrote them --------------------------------------------------


def test_v1_data_covers_every_kind_0_1_wrote() -> None:
    kinds = {json.loads(p.read_text())["kind"] for p in V1_FILES}
    assert kinds == {"run", "compare", "herd", "latency", "latency-compare", "sweep"}
    assert all(json.loads(p.read_text())["version"] == 1 for p in V1_FILES)


@pytest.mark.parametrize("path", V1_FILES, ids=lambda p: p.name)
def test_v1_file_loads_and_renders(path: Path) -> None:
    raw = json.loads(path.read_text())
    kind, doc = documents.load(path)
    assert kind == raw["kind"]
    assert doc["version"] == envelope.SCHEMA_VERSION
    assert doc["upgraded_from"] == 1
    raw_runs = raw.get("runs", [raw])
    runs = doc.get("runs", [doc])
    assert len(runs) == len(raw_runs)
    for old, new in zip(raw_runs, runs, strict=True):
        assert "plan" not in new
        assert new["server"]["mode"] == old["plan"]["mode"]
        assert new["server"]["workers"] == old["plan"]["workers"]
        assert new.get("records") == old.get("records")  # the connections, unchanged
        # version 1's "returns" are version 2's "wakeups", value for value
        assert [c["wakeups"] for c in new["counters"]] == [c["returns"] for c in old["counters"]]
        assert all("returns" not in c for c in new["counters"])
    text = rendered(kind, doc)
    assert text.strip()
    for old in raw_runs:
        assert old["plan"]["mode"] in text


@pytest.mark.parametrize("path", [p for p in V1_FILES if p.name.startswith("run-")], ids=lambda p: p.name)
def test_v1_run_becomes_a_run_result_with_its_records(path: Path) -> None:
    raw = json.loads(path.read_text())
    _, doc = documents.load(path)
    result = RunResult.from_dict(doc)
    plan = raw["plan"]
    assert result.server.mode == plan["mode"]
    assert result.server.workers == plan["workers"]
    assert result.load.connections == plan["connections"]
    assert result.load.gap_ms == plan["gap_ms"]
    assert result.load.settle == plan["settle"]
    assert [r.worker for r in result.records] == [r["worker"] for r in raw["records"]]
    assert [c.wakeups for c in result.counters] == [c["returns"] for c in raw["counters"]]
    assert result.verdict.pattern == raw["verdict"]["pattern"]


def test_v1_run_round_trips_as_v2(tmp_path: Path) -> None:
    _, doc = documents.load(V1_DATA / "run-epoll-pinned.json")
    result = RunResult.from_dict(doc)
    path = tmp_path / "again.json"
    envelope.save(path, "run", result.to_dict())
    kind, again = documents.load(path)
    assert (kind, again["version"], "upgraded_from" in again) == ("run", 2, False)
    assert RunResult.from_dict(again) == result


def test_malformed_v1_file_is_refused(tmp_path: Path) -> None:
    raw = json.loads((V1_DATA / "run-blocking.json").read_text())
    del raw["plan"]
    path = _write(tmp_path / "broken-v1.json", json.dumps(raw))
    with pytest.raises(ResultFileError, match=f"^{path}: plan: missing$"):
        documents.load(path)
    raw = json.loads((V1_DATA / "run-blocking.json").read_text())
    raw["records"][0]["worker"] = raw["plan"]["workers"]
    path = _write(tmp_path / "bad-worker-v1.json", json.dumps(raw))
    with pytest.raises(
        ResultFileError, match=r"records\[0\]\.worker: names worker 3.*\(a version 1 file, read as version 2\)$"
    ):
        documents.load(path)
