"""A result file checked as it is read: its envelope (accept_order.results.files.check_schema: the schema's name,
its version and kind), then the whole document against its kind's shape (results/schema.py): every saved fixture
fits; a field that does not is refused in one printable line naming its path; a version-1 file is checked in its
version-2 form."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from result_file_cases import HOSTILE, one_line

from accept_order.core.errors import ResultFileError
from accept_order.results.files import (
    check_schema,
)

# -- check_schema --------------------------------------------------------------------------------------


def test_schema_accepts_a_good_document_and_another_schema_name() -> None:
    assert check_schema({"schema": "accept-order", "version": 2, "kind": "herd"}, "f", newest=2) == (
        "herd",
        2,
    )
    assert check_schema({"schema": "x", "version": 1, "kind": "k"}, "f", schema="x", newest=1) == ("k", 1)


@pytest.mark.parametrize(
    "fields, expected",
    [
        ({"schema": None}, "f is not an accept-order result file (it has no schema)"),
        ({"schema": "other"}, 'f is not an accept-order result file (its schema is "other")'),
        ({"schema": ["accept-order"]}, "f is not an accept-order result file (its schema is a list)"),
        ({"version": None}, "f has no schema version"),
        ({"version": True}, "f has an invalid schema version true; expected a whole number from 1"),
        ({"version": "1"}, 'f has an invalid schema version "1"; expected a whole number from 1'),
        ({"version": 1.0}, "f has an invalid schema version 1.0; expected a whole number from 1"),
        ({"version": 0}, "f has an invalid schema version 0; expected a whole number from 1"),
        ({"version": -5}, "f has an invalid schema version -5; expected a whole number from 1"),
        ({"version": 2}, "f has schema version 2; this accept-order reads up to 1"),
        ({"version": 10**200}, "f has schema version a very large number; this accept-order reads up to 1"),
        ({"kind": None}, 'f does not say what kind of result it is (no "kind")'),
        ({"kind": 5}, "f has an invalid result kind 5; expected a name"),
        ({"kind": ""}, 'f has an invalid result kind ""; expected a name'),
        ({"kind": {"a": 1}}, "f has an invalid result kind an object; expected a name"),
    ],
)
def test_schema_refusals(fields: dict[str, Any], expected: str) -> None:
    document = {"schema": "accept-order", "version": 1, "kind": "run", **fields}
    document = {k: v for k, v in document.items() if v is not None}
    with pytest.raises(ResultFileError) as exc:
        check_schema(document, "f", newest=1)
    assert one_line(exc) == expected


def test_schema_shows_hostile_values_escaped() -> None:
    with pytest.raises(ResultFileError) as exc:
        check_schema({"schema": HOSTILE + "\u202e" * 50}, HOSTILE, newest=1)
    message = one_line(exc)
    assert message.startswith("evil\\x1b]0;pwned")
    assert message.endswith('...")')  # the file's value is shortened, not printed whole
    assert "\u202e" not in message


# -- the whole document, checked against its kind's shape on load ---------------------------------------

DATA_ROOT = Path(__file__).parent / "data"
V2_LATENCY = DATA_ROOT / "v2" / "latency.json"


def _saved(tmp_path: Path, source: Path, change: Any, name: str = "r.json") -> Path:
    doc = json.loads(source.read_text())
    change(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _setter(*at: Any, value: Any) -> Any:
    def change(doc: Any) -> None:
        for key in at[:-1]:
            doc = doc[key]
        doc[at[-1]] = value

    return change


@pytest.mark.parametrize("path", sorted(DATA_ROOT.glob("*/*.json")), ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_every_saved_fixture_fits_its_shape(path: Path) -> None:
    from accept_order.experiments.documents import load

    kind, document = load(path)  # raises if the document does not fit
    assert document["kind"] == kind


def test_every_kind_declares_its_shape() -> None:
    from accept_order.experiments import every
    from accept_order.results.schema import Record

    assert all(isinstance(experiment.shape, Record) for experiment in every())


@pytest.mark.parametrize("value", [None, "", -1, True, 1.5, 10**30])
def test_a_summary_count_that_is_not_the_histograms_is_one_line(tmp_path: Path, value: Any) -> None:
    """merge used to end in "'int' object is not iterable" for each of these."""
    from conftest import assert_one_error_line, run_cli

    path = _saved(tmp_path, V2_LATENCY, _setter("summary", "count", value=value))
    for args in (["merge", str(path), str(V2_LATENCY)], ["show", str(path)], ["show", str(path), "--format", "csv"]):
        line = assert_one_error_line(run_cli(args), 1)
        within = " within 2**53" if value == 10**30 else ""
        assert line.endswith(f"{path}: summary.count: expected a non-negative integer{within}, got {json.dumps(value)}")


@pytest.mark.parametrize("value", [1e30, 10**30, 0, -3, True, "7"])
def test_an_absurd_histogram_count_is_one_line(tmp_path: Path, value: Any) -> None:
    """show --format hdr used to divide by zero for a count of 1e30."""
    from conftest import assert_one_error_line, run_cli

    path = _saved(tmp_path, V2_LATENCY, _setter("histogram", "counts", 0, 1, value=value))
    line = assert_one_error_line(run_cli(["show", str(path), "--format", "hdr"]), 1)
    within = " within 2**53" if value in (1e30, 10**30) else ""
    assert line.endswith(
        f"r.json: histogram.counts[0][1]: expected a positive integer{within}, got {json.dumps(value)}"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_setter("served", value=[1, 2, 3]), "served: has 3 entries, one per worker, but the server had 2"),
        (_setter("summary", "count", value=5), "summary.count: is 5, but the histogram holds 300 samples"),
        (_setter("server", "workers", value=True), "server.workers: expected an integer from 1 to 512, got true"),
        (_setter("wall_s", value=-0.5), "wall_s: expected a non-negative number, got -0.5"),
        (_setter("wall_s", value=1e30), "wall_s: expected a non-negative number within 2**53, got 1e+30"),
        (_setter("port", value=70000), "port: expected an integer from 0 to 65535, got 70000"),
        (_setter("errors", value={"timeout": -2}), "errors.timeout: expected a non-negative integer, got -2"),
        (_setter("histogram", "unit", value="ms"), 'histogram.unit: expected one of "us", got "ms"'),
        (_setter("histogram", "counts", 0, value=[48]), "histogram.counts[0]: expected a list of 2, got a list"),
        (_setter("load", "duration_s", value=2.0), "load: gives both connections and duration_s"),
        (_setter("server", "mode", value="bogus"), "server.mode: names mode 'bogus'"),
        (_setter("counters", 1, "cpu_s", value="0.1"), "counters[1].cpu_s: expected a non-negative number or null"),
        (_setter("evidence", "counters", value={"X": 1.5}), "evidence.counters.X: expected an integer, got 1.5"),
        (_setter("title", value="x" * 70000), "title: expected a string of at most 65536 characters"),
        (lambda doc: doc.pop("histogram"), "histogram: missing"),
        (lambda doc: doc.pop("server"), "server: missing"),
    ],
)
def test_a_field_that_does_not_fit_is_named_with_its_path(tmp_path: Path, change: Any, message: str) -> None:
    from accept_order.experiments.documents import load

    path = _saved(tmp_path, V2_LATENCY, change)
    with pytest.raises(ResultFileError) as exc:
        load(path)
    assert one_line(exc).startswith(f"{path}: {message}")


def test_a_run_inside_a_document_is_named_by_its_index(tmp_path: Path) -> None:
    from accept_order.experiments.documents import load

    for source, change, message in (
        (
            "latency-compare",
            _setter("runs", 1, "histogram", "counts", 2, 1, value=-1),
            "runs[1].histogram.counts[2][1]",
        ),
        ("repeat", _setter("rounds", 1, 0, "records", 0, "worker", value=9), "rounds[1][0].records[0].worker: names"),
        ("burst", _setter("runs", 0, "cells", 1, "served", value=[1, 2, 3]), "runs[0].cells[1].served: has 3"),
        ("ramp", _setter("steps", 0, "kind", value="both"), 'steps[0].kind: expected one of "rate", "concurrency"'),
        ("reload", _setter("runs", 2, "how", value="nuke"), "runs[2].how: expected one of"),
        ("serve", _setter("sequence", 0, value=5), "sequence[0]: names worker 5, but the server had 2"),
        ("herd", _setter("runs", value={}), "runs: expected a list, got an object"),
    ):
        path = _saved(tmp_path, DATA_ROOT / "v2" / f"{source}.json", change)
        with pytest.raises(ResultFileError) as exc:
            load(path)
        assert one_line(exc).startswith(f"{path}: {message}")


def test_keys_a_shape_does_not_name_are_left_alone(tmp_path: Path) -> None:
    """A newer version may add fields: they load, and `show --format json` keeps them."""
    from accept_order.experiments.documents import load

    def extra(doc: dict[str, Any]) -> None:
        doc["from_the_future"] = {"a": [1, None, "b"]}
        doc["server"]["new_option"] = -1
        doc["evidence"]["probe"] = [1.5]

    kind, document = load(_saved(tmp_path, V2_LATENCY, extra))
    assert document["from_the_future"] == {"a": [1, None, "b"]} and document["server"]["new_option"] == -1


def test_a_version_1_file_is_checked_in_its_version_2_form(tmp_path: Path) -> None:
    from accept_order.experiments.documents import load

    path = _saved(tmp_path, DATA_ROOT / "v1" / "latency.json", _setter("plan", "workers", value=0))
    with pytest.raises(ResultFileError) as exc:
        load(path)
    assert one_line(exc) == (
        f"{path}: server.workers: expected an integer from 1 to 512, got 0 (a version 1 file, read as version 2)"
    )
    path = _saved(tmp_path, DATA_ROOT / "v1" / "compare.json", _setter("runs", 1, "counters", value=["x"]))
    with pytest.raises(ResultFileError) as exc:
        load(path)
    assert one_line(exc) == f'{path}: runs[1].counters[0]: expected an object, got "x"'


@dataclass(frozen=True)
class _Inner:
    n: int


@dataclass(frozen=True)
class _Outer:
    inner: _Inner
    ratio: float
    cpus: tuple[int, ...] = ()
    name: str | None = None
    by_name: dict[str, int] = field(default_factory=dict)


def test_derive_reads_a_dataclass() -> None:
    """The shape of a dataclass: ints are non-negative, floats finite, `X | None` nullable, tuples lists,
    dict[str, X] objects, nested dataclasses their own shape; a field without a default is required."""
    from accept_order.results.schema import SchemaError, derive

    shape = derive(_Outer)
    shape.check({"inner": {"n": 0}, "ratio": 0.5, "cpus": [1], "name": None, "by_name": {"a": 1}}, "")
    for doc, message in (
        ({"ratio": 1}, "inner: missing"),
        ({"inner": {"n": -1}, "ratio": 1}, "inner.n: expected a non-negative integer, got -1"),
        ({"inner": {"n": 1}, "ratio": float("nan")}, "ratio: expected a non-negative number, got NaN"),
        ({"inner": {"n": 1}, "ratio": 1, "cpus": [0, False]}, "cpus[1]: expected a non-negative integer, got false"),
        (
            {"inner": {"n": 1}, "ratio": 1, "name": 3},
            "name: expected a string of at most 65536 characters or null, got 3",
        ),
        ({"inner": {"n": 1}, "ratio": 1, "by_name": {"a": "1"}}, 'by_name.a: expected a non-negative integer, got "1"'),
    ):
        with pytest.raises(SchemaError) as exc:
            shape.check(doc, "")
        assert str(exc.value) == message


def test_more_workers_than_a_run_may_have_is_refused_before_anything_draws_them(tmp_path: Path) -> None:
    """2**20 workers in a hand-edited file took minutes and gigabytes to plot: a run has at most 512."""
    from accept_order.experiments.documents import load

    path = _saved(tmp_path, DATA_ROOT / "v2" / "run.json", _setter("server", "workers", value=1 << 20))
    with pytest.raises(ResultFileError) as exc:
        load(path)
    assert one_line(exc) == f"{path}: server.workers: expected an integer from 1 to 512, got 1048576"
