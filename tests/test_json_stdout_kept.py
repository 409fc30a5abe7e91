"""`--json -` whose stdout could not take the JSON: the result is kept in a new file, named in the error line, so
that a measurement is not lost with its reader (`| jq` with a typo in its filter ends before a long sweep does). The
working directory first, the temporary one when it cannot be written, and a line saying it is lost when neither can.
(The commands' own lines: tests/test_json_stdout.py.)"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from accept_order.cli import result_stdout
from accept_order.core.errors import ResultFileError
from accept_order.results import files

DOCUMENT = '{\n "kind": "run"\n}\n'


@pytest.fixture
def one_second(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The working directory, and every kept file stamped with the same second."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(result_stdout.time, "strftime", lambda _: "20260101-000000")
    return tmp_path


def test_kept_in_the_working_directory_never_over_another_file(one_second: Path) -> None:
    (one_second / "accept-order-run-20260101-000000.json").write_text("an earlier run's")
    assert (
        result_stdout.kept_instead(DOCUMENT, "accept-order-run")
        == "the result is kept in ./accept-order-run-20260101-000000-2.json"
    )
    assert (one_second / "accept-order-run-20260101-000000-2.json").read_text() == DOCUMENT
    assert (one_second / "accept-order-run-20260101-000000.json").read_text() == "an earlier run's"


def test_kept_in_the_temporary_directory_when_the_working_one_cannot_be_written(
    one_second: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = one_second / "tmp"
    elsewhere.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(elsewhere))
    real = files.write_bytes

    def read_only_here(path: str, data: bytes) -> None:
        if os.path.dirname(path) == os.curdir:
            raise ResultFileError(f"cannot write {path}: Read-only file system")
        real(path, data)

    monkeypatch.setattr(files, "write_bytes", read_only_here)
    assert (
        result_stdout.kept_instead(DOCUMENT, "accept-order-sweep")
        == f"the result is kept in {elsewhere}/accept-order-sweep-20260101-000000.json"
    )
    assert (elsewhere / "accept-order-sweep-20260101-000000.json").read_text() == DOCUMENT


def test_lost_says_so_and_why(one_second: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(path: str, data: bytes) -> None:
        raise ResultFileError(f"cannot write {path}: No space left on device")

    monkeypatch.setattr(files, "write_bytes", full)
    said = result_stdout.kept_instead(DOCUMENT, "accept-order-run")
    assert said.startswith("the result is lost (cannot write ") and said.endswith(": No space left on device)"), said
    assert list(one_second.iterdir()) == []
