"""The review of 526ab09/dee652f (an attached server's spec holds no backlog of the tool's): what it left.

ServerSpec.backlog became `int | None` so that a server this tool did not start holds none, but the check let None
through for a server the tool starts: 'accept_order.run(backlog=None)' read "epoll is a server this tool did not
start", untrue, and lighttpd was launched with 'server.listen-backlog = None' and exited on its config (status 255,
'parser failed somehow near here'). And merge ignored backlogs that only one of two files read, comparing each
file with the first alone: the order of the files decided whether two that read different backlogs merged."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.api import run
from accept_order.core.errors import PlanError
from accept_order.core.spec import ServerSpec
from accept_order.servers.registry import checked


def test_a_server_this_tool_starts_needs_a_backlog() -> None:
    with pytest.raises(PlanError, match="--backlog must be a number, got None"):
        checked(ServerSpec(kind="lighttpd", mode="max-worker", workers=1, backlog=None))


def test_the_api_says_the_backlog_is_missing_not_that_the_server_was_not_started() -> None:
    with pytest.raises(PlanError) as caught:
        run(mode="epoll", workers=2, connections=3, backlog=None)
    assert "--backlog" in str(caught.value) and "did not start" not in str(caught.value), caught.value


@pytest.mark.parametrize("kind", ["attached", "remote"])
def test_a_server_it_did_not_start_still_has_none(kind: str) -> None:
    spec = ServerSpec(kind=kind, mode=kind, attach=(1,), port=80, backlog=None).validated()
    assert spec.backlog is None


# merge compared each file with the first alone and ignored backlogs only one of the two read: an older file first
# (no reading) let two newer files that read [64] and [128] merge, which 'a old b' refused; the merged file had a
# reading or none by the files' order.
OLD_FILE = Path(__file__).parent / "data" / "latency_attach_io_uring.json"  # an attached run saved before backlogs
NOBODY_CHOSE = ("backlog", "policy", "mutex_delay_ms", "maxconn")


def _newer(tmp_path: Path, name: str, backlogs: list[int], second: int) -> str:
    """The older file's run as a newer version saves it (its listeners' backlogs read), started `second` later."""
    doc = json.loads(OLD_FILE.read_text())
    doc["server"] = {**{k: v for k, v in doc["server"].items() if k not in NOBODY_CHOSE}, "backlogs": backlogs}
    doc["environment"]["started_at"] = f"2026-11-28T02:50:{second}+00:00"
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_files_that_read_different_backlogs_part_whatever_their_order(tmp_path: Path) -> None:
    a, b = _newer(tmp_path, "a.json", [64], 52), _newer(tmp_path, "b.json", [128], 53)
    for order in itertools.permutations([str(OLD_FILE), a, b]):
        result = run_cli(["merge", *order, "--json", str(tmp_path / "m.json")])
        line = assert_one_error_line(result, 1, "not the same experiment")
        assert "backlogs [64] vs [128]" in line or "backlogs [128] vs [64]" in line, (order, line)
        assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("newer_first", [True, False])
def test_the_merged_file_keeps_the_reading_whatever_the_order(tmp_path: Path, newer_first: bool) -> None:
    a = _newer(tmp_path, "a.json", [64], 52)
    merged = tmp_path / "m.json"
    order = [a, str(OLD_FILE)] if newer_first else [str(OLD_FILE), a]
    result = run_cli(["merge", *order, "--json", str(merged)])
    assert result.exit_code == 0, result.output
    server = json.loads(merged.read_text())["server"]
    assert server["backlogs"] == [64] and not set(NOBODY_CHOSE) & set(server), server
