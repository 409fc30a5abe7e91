"""Result files: a run survives a JSON round trip; other schemas, newer versions and non-JSON are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accept_order import records
from accept_order.errors import ResultFileError
from accept_order.records import (
    ConnectionRecord,
    Environment,
    Plan,
    RunResult,
    Verdict,
    WorkerCounters,
)


def sample_result() -> RunResult:
    return RunResult(
        plan=Plan(mode="blocking", workers=2, connections=3, gap_ms=1.5, cpus=(0, 1), settle=False),
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
        evidence={"note": [1, 2, 3]},
        wall_s=0.25,
        unsettled=1,
    )


def test_run_result_round_trip(tmp_path: Path) -> None:
    result = sample_result()
    path = tmp_path / "run.json"
    records.save(path, "run", result.to_dict())
    kind, doc = records.load(path)
    assert kind == "run"
    assert doc["schema"] == records.SCHEMA
    assert doc["version"] == records.SCHEMA_VERSION
    again = RunResult.from_dict(doc)
    assert again == result
    assert again.plan.cpus == (0, 1)  # tuples come back as tuples, not lists
    assert again.counters[0].affinity == (0,)
    assert (again.served, again.failed, again.sequence) == (2, 1, [0, 1])
    assert again.records[1].error == "timeout: no answer within 5 s"


def test_saved_file_is_plain_versioned_json(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    records.save(path, "run", sample_result().to_dict())
    doc = json.loads(path.read_text())
    assert {"schema", "version", "kind", "plan", "environment", "records", "counters", "verdict"} <= set(doc)
    assert doc["environment"]["kernel"] == "6.1.0-test"
    assert doc["environment"]["somaxconn"] == 4096
    assert not (tmp_path / "run.json.tmp").exists()  # written atomically via a temporary name


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    doc = sample_result().to_dict()
    doc["plan"]["added_later"] = 1
    doc["counters"][0]["added_later"] = 2
    doc["environment"]["added_later"] = 3
    assert RunResult.from_dict(doc) == sample_result()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json at all", "is not JSON"),
        ("", "is not JSON"),
        ("[1, 2]", "is not an accept-order result file"),
        ('{"schema": "something-else", "version": 1, "kind": "run"}', "is not an accept-order result file"),
        ('{"kind": "run"}', "is not an accept-order result file"),
        ('{"schema": "accept-order", "version": 999, "kind": "run"}', "schema version 999"),
        ('{"schema": "accept-order", "kind": "run"}', "schema version None"),
        ('{"schema": "accept-order", "version": "1", "kind": "run"}', "schema version 1"),
    ],
)
def test_load_refuses(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path / "bad.json", text)
    with pytest.raises(ResultFileError, match=message) as info:
        records.load(path)
    assert info.value.exit_code == 1


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="cannot read"):
        records.load(tmp_path / "absent.json")


def test_save_into_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="cannot write"):
        records.save(tmp_path / "no" / "such" / "dir.json", "run", {})


def test_newer_version_message_says_what_this_version_reads(tmp_path: Path) -> None:
    path = _write(tmp_path / "new.json", json.dumps({"schema": "accept-order", "version": 99}))
    with pytest.raises(ResultFileError) as info:
        records.load(path)
    assert f"reads up to {records.SCHEMA_VERSION}" in str(info.value)
