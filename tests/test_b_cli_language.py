"""The 0.2 option language and its edges: ranges naming the option typed, --mode vs --modes, --host names
and warnings, Examples in every --help, --json and show on odd paths, hostile result files, the fault
hook, a foreign SO_REUSEPORT group, and the --requests alias."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import sys
import time
from pathlib import Path

import pytest
from click.testing import Result
from conftest import assert_one_error_line, run_cli

from accept_order.servers.worker import FAULT_ENV

COMMANDS = ["run", "compare", "serve", "latency", "sweep", "herd", "show", "modes"]
ESC = "\x1b[31m"


def served(result: Result) -> tuple[int, int, int]:
    match = re.search(r"^served (\d+), failed (\d+), driven (\d+)$", result.stdout, re.MULTILINE)
    assert match, result.output
    return int(match[1]), int(match[2]), int(match[3])


# -- numbers and option combinations ------------------------------------------------------------------


def test_negative_work_ms_names_work_ms() -> None:
    line = assert_one_error_line(run_cli(["run", "--work-ms", "-1"]), 2, "Invalid value for '--work-ms'")
    assert "-1" in line and "--work-us" not in line


@pytest.mark.parametrize("several", ["--modes", "--compare"])
def test_latency_mode_and_modes_together_is_a_usage_error(several: str) -> None:
    result = run_cli(["latency", several, "blocking", "--mode", "epoll"])
    assert_one_error_line(result, 2, "--mode", "--modes", "not both")
    assert result.stdout == ""  # refused before any run: neither option was silently dropped


# -- --host ---------------------------------------------------------------------------------------------


def test_host_name_localhost_runs() -> None:
    result = run_cli(["run", "--host", "localhost", "-n", "6"])
    assert result.exit_code == 0, result.output
    assert served(result) == (6, 0, 6)
    assert re.search(r"on (127\.0\.0\.1|::1):\d+", result.stdout), result.stdout
    assert result.stderr == ""  # loopback: no warning


def test_host_any_address_warns_and_still_runs() -> None:
    result = run_cli(["run", "--host", "0.0.0.0", "-n", "2"])
    assert result.exit_code == 0, result.output
    assert served(result) == (2, 0, 2)
    warnings = [line for line in result.stderr.splitlines() if "anyone" in line]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith("accept-order: warning: ") and "0.0.0.0" in warnings[0]


@pytest.mark.parametrize("host", ["224.0.0.1", "255.255.255.255"])
def test_host_multicast_or_broadcast_is_refused(host: str) -> None:
    result = run_cli(["run", "--host", host, "-n", "2"])
    assert_one_error_line(result, 2, "Invalid value for '--host'", host, "multicast or broadcast")
    assert result.stdout == ""


# -- --help ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_ends_with_examples(command: str) -> None:
    result = run_cli([command, "--help"])
    assert result.exit_code == 0, result.output
    blocks = [b for b in re.split(r"\n\s*\n", result.stdout.strip("\n")) if b.strip()]
    last = blocks[-1].splitlines()
    assert last[0].strip() == "Examples:", result.stdout
    examples = last[1:]
    assert len(examples) >= 2, last
    assert all(line.startswith("    ") for line in examples), last
    assert any(f"accept-order {command}" in line for line in examples), last
    assert result.stdout.count("Examples:") == 1


# -- --json and show on odd paths -----------------------------------------------------------------------


def test_compare_json_says_where_it_wrote(tmp_path: Path) -> None:
    path = tmp_path / "cmp.json"
    result = run_cli(["compare", "--modes", "blocking,epoll", "-n", "2", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"wrote {path}"]
    assert json.loads(path.read_text())["kind"] == "compare"


def test_empty_json_path_is_named() -> None:
    result = run_cli(["run", "-n", "2", "--json", ""])
    assert_one_error_line(result, 2, "--json needs a file name")
    assert result.stdout == ""


def test_show_of_an_empty_path_is_named() -> None:
    assert_one_error_line(run_cli(["show", ""]), 1, "needs a file name")


def test_json_to_dev_null_is_refused_and_dev_null_survives() -> None:
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    result = run_cli(["run", "-n", "2", "--json", "/dev/null"])
    assert_one_error_line(result, 2, "/dev/null", "character device", "not a regular file")
    assert result.stdout == ""  # refused before the run
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_json_to_a_symlink_is_refused_and_the_link_is_untouched(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("keep me\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    result = run_cli(["run", "-n", "2", "--json", str(link)])
    assert_one_error_line(result, 2, "symbolic link")
    assert result.stdout == ""
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]  # no temporary left


def test_show_dev_zero_is_one_line_quickly() -> None:
    started = time.monotonic()
    result = run_cli(["show", "/dev/zero"])
    assert_one_error_line(result, 1, "/dev/zero", "not a regular file")
    assert time.monotonic() - started < 5
    assert result.stdout == ""


# -- hostile strings in a result file -------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    """Real run and compare files, written once for the module."""
    folder = tmp_path_factory.mktemp("saved")
    docs = {}
    for kind, args in (("run", ["run", "-n", "3"]), ("compare", ["compare", "--modes", "blocking", "-n", "2"])):
        path = folder / f"{kind}.json"
        result = run_cli([*args, "--json", str(path)])
        assert result.exit_code == 0, result.output
        docs[kind] = json.loads(path.read_text())
    return docs


def _hostile_mode(doc: dict) -> None:
    doc["server"]["mode"] = ESC + "epoll"


def _hostile_error(doc: dict) -> None:
    doc["records"][1].update(worker=None, pid=None, error=ESC + "boom")


def _hostile_verdict(doc: dict) -> None:
    doc["verdict"]["why"] = ESC + "why"


def _hostile_skipped(doc: dict) -> None:
    doc["skipped"] = {ESC + "bogus": ESC + "reason"}


def _hostile_compare_mode(doc: dict) -> None:
    doc["runs"][0]["server"]["mode"] = ESC + "blocking"


@pytest.mark.parametrize(
    ("kind", "spoil", "visible"),
    [
        ("run", _hostile_mode, "epoll"),
        ("run", _hostile_error, "boom"),
        ("run", _hostile_verdict, "why"),
        ("compare", _hostile_skipped, "bogus"),
        ("compare", _hostile_compare_mode, "blocking"),
    ],
)
def test_escape_sequences_in_a_result_file_never_reach_stdout(
    tmp_path: Path, saved: dict[str, dict], kind: str, spoil: object, visible: str
) -> None:
    doc = json.loads(json.dumps(saved[kind]))
    spoil(doc)  # type: ignore[operator]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert "\x1b" not in result.stdout and "\x1b" not in result.stderr
    if result.exit_code == 0:
        assert "\\x1b[31m" + visible in result.stdout  # shown, made visible
    else:
        assert_one_error_line(result, 1, "server.mode: names mode")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")
def test_escape_sequence_in_a_latency_title_never_reaches_stdout(tmp_path: Path) -> None:
    path = tmp_path / "lat.json"
    made = run_cli(["latency", "-w", "1", "-n", "50", "-c", "2", "--title", "plain", "--json", str(path)])
    assert made.exit_code == 0, made.output
    doc = json.loads(path.read_text())
    doc["title"] = ESC + "Title"
    doc["errors"] = {ESC + "ECONNRESET": 1}
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout
    assert "\\x1b[31mTitle" in result.stdout


# -- the fault hook, a foreign reuseport group ----------------------------------------------------------


def test_bogus_fault_hook_is_one_clear_line() -> None:
    result = run_cli(["run", "-n", "2"], extra_env={FAULT_ENV: "bogus"})
    assert_one_error_line(result, 2, FAULT_ENV, "'bogus'", "never-ready", "die-on-accept")
    assert result.stdout == ""


def test_reuseport_refuses_a_port_with_a_foreign_reuseport_listener() -> None:
    with socket.socket() as foreign:
        foreign.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        foreign.bind(("127.0.0.1", 0))
        foreign.listen(8)
        port = foreign.getsockname()[1]
        result = run_cli(["run", "--mode", "reuseport", "--port", str(port), "-n", "6"])
        assert_one_error_line(result, 1, f"port {port}", "already has a listener", f"pid {os.getpid()}")
        assert result.stdout == ""
        foreign.setblocking(False)
        with pytest.raises(BlockingIOError):  # none of the run's connections reached the foreign queue
            foreign.accept()


# -- the --requests alias -------------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")
def test_requests_is_still_an_alias_for_connections_in_latency() -> None:
    result = run_cli(["latency", "-w", "1", "-c", "2", "--requests", "40"])
    assert result.exit_code == 0, result.output
    assert re.search(r"\b40 connections, 2 concurrent", result.stdout), result.stdout
    assert re.search(r"^Duration in ms \(epoll\) .* count:40$", result.stdout, re.MULTILINE), result.stdout
    both = run_cli(["latency", "--requests", "40", "-n", "40"])
    assert_one_error_line(both, 2, "--requests is its old name")
