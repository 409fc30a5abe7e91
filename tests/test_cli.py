"""The command line through click's CliRunner: output, exit codes, JSON, and one stderr line per bad input."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest
from conftest import assert_one_error_line, needs_ipv6, run_cli

from accept_order.analysis.order import is_rotation
from accept_order.experiments.documents import load
from accept_order.experiments.order.result import RunResult
from accept_order.results.envelope import SCHEMA_VERSION, tool_version
from accept_order.servers.modes import MODES
from accept_order.servers.registry import available_modes


def sequence_of(output: str) -> list[int]:
    match = re.search(r"^Sequence: ([\d x]+)$", output, re.MULTILINE)
    assert match, output
    return [int(m) for m in match.group(1).split()]


def test_run_prints_sequence_table_and_verdict() -> None:
    result = run_cli(["run", "--mode", "blocking", "--workers", "3", "--connections", "6"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("accept-order run: mode blocking, 3 workers, 6 connections on 127.0.0.1:")
    assert is_rotation(sequence_of(out), 3)
    assert "served 6, failed 0, driven 6" in out
    # 0.2 renamed the per-worker column "woke" to "wakeups".
    assert re.search(r"^\s*worker\s+pid\s+served\s+share\s+wakeups\s", out, re.MULTILINE), out
    assert not re.search(r"\bwoke\b", out)
    assert "Verdict: rotation" in out
    assert "Why: accept()" in out
    assert result.stderr == ""


def test_run_reports_the_chosen_port(free_port: int) -> None:
    result = run_cli(["run", "-m", "epoll", "-n", "2", "--port", str(free_port)])
    assert result.exit_code == 0, result.output
    assert f"127.0.0.1:{free_port}" in result.stdout
    assert sequence_of(result.stdout) == [0, 0]


@needs_ipv6
def test_run_on_ipv6_loopback() -> None:
    result = run_cli(["run", "-m", "blocking", "--host", "::1", "-n", "3"])
    assert result.exit_code == 0, result.output
    assert "on ::1:" in result.stdout
    assert "served 3, failed 0, driven 3" in result.stdout


def test_run_json_round_trip_and_show(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    result = run_cli(["run", "-m", "epoll", "-n", "6", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert f"wrote {path}" in result.stderr
    kind, doc = load(path)
    assert kind == "run"
    assert doc["version"] == SCHEMA_VERSION == 2
    assert doc["server"]["mode"] == "epoll"
    assert doc["load"]["connections"] == 6
    env = doc["environment"]
    assert {"kernel", "cpu_count", "somaxconn", "python"} <= set(env)
    assert len(doc["records"]) == 6
    assert len(doc["counters"]) == 3
    run = RunResult.from_dict(doc)
    assert run.sequence == [0] * 6
    assert f"127.0.0.1:{run.port}" in result.stdout

    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == result.stdout  # `show` prints the run exactly as `run` did


def test_compare_runs_every_supported_mode(tmp_path: Path) -> None:
    # 0.2: compare runs every mode by default (0.1 ran five "core" modes).
    path = tmp_path / "compare.json"
    result = run_cli(["compare", "-n", "6", "--json", str(path)])
    assert result.exit_code == 0, result.output
    available = available_modes()
    assert available, "no mode available here"
    for mode in MODES:
        assert re.search(rf"^\s*{re.escape(mode)}\s", result.stdout, re.MULTILINE), mode
    kind, doc = load(path)
    assert kind == "compare"
    assert [r["server"]["mode"] for r in doc["runs"]] == available
    assert set(doc["skipped"]) == set(MODES) - set(available)
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0
    assert shown.stdout == result.stdout


def test_compare_skips_a_mode_the_platform_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MODES["epoll-shared"], "unavailable", lambda: "pretend this kernel lacks it")
    result = run_cli(["compare", "--modes", "blocking,epoll-shared", "-n", "3"])
    assert result.exit_code == 0, result.output
    assert "not available: pretend this kernel lacks it" in result.stdout
    assert "blocking" in result.stdout


def test_modes_lists_every_mode() -> None:
    result = run_cli(["modes"])
    assert result.exit_code == 0
    text = result.stdout
    builtin, _, nginx = text.partition("--server nginx")
    assert builtin.startswith("--server builtin")
    lines = [line.strip() for line in builtin.splitlines()]
    for name in MODES:
        assert any(line.startswith(name + " ") for line in lines), name
    assert all(line.endswith("; available)") for line in lines if line and line.split()[0] in MODES), lines
    for name in ("epoll", "accept-mutex", "reuseport"):  # nginx's modes are listed whether or not it is here
        assert any(line.strip().startswith(name + " ") for line in nginx.splitlines()), name


def test_version_and_help() -> None:
    version = run_cli(["--version"])
    assert version.exit_code == 0
    assert version.stdout.endswith(f", version {tool_version()}\n")  # in-process click names the program "main"
    help_ = run_cli(["run", "--help"])
    assert help_.exit_code == 0
    assert "--work DURATION" in help_.stdout and "--work-ms" not in help_.stdout  # the old spelling is hidden


# -- bad input: exactly one line on stderr, exit 2 for usage and 1 for runtime, no traceback ---------
# 0.2: out-of-range numbers are refused by click's ranges, naming the option as typed:
#   "Invalid value for '--workers' / '-w': 0 is not in the range 1<=x<=512."


def invalid(option: str, detail: str) -> tuple[str, str]:
    return (f"Invalid value for '{option}'", detail)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "--mode", "nope"], "'nope' is not a mode of builtin"),
        (["run", "--workers", "0"], invalid("--workers", "0 is not in the range 1<=x<=512")),
        (["run", "--workers", "100000"], invalid("--workers", "100000 is not in the range 1<=x<=512")),
        (["run", "--workers", "-3"], invalid("--workers", "-3 is not in the range")),
        (["run", "--workers", "three"], "'three' is not a valid integer"),
        (["run", "--connections", "0"], invalid("--connections", "0 is not in the range 1<=x<=10000000")),
        (["run", "--connections", "99999999999"], invalid("--connections", "99999999999 is not in the range")),
        (["run", "--port", "70000"], invalid("--port", "70000 is not in the range 0<=x<=65535")),
        (["run", "--host", "localhost.invalid"], invalid("--host", "neither an IP address nor a name")),
        (["run", "--gap-ms", "-1"], "--gap-ms"),
        (["run", "--work-ms", "-5"], invalid("--work-ms", "'-5' is not a duration")),
        (["run", "--timeout", "0"], "--timeout"),
        (["run", "--backlog", "0"], "--backlog"),
        (["run", "--accept-batch", "-1"], "--accept-batch"),
        (["run", "--cpus", "2-1"], "is not a CPU list"),
        (["run", "--cpus", "100000"], "--cpus: CPU 100000 not available here"),
        (["run", "--no-such-option"], "No such option"),
        (["compare", "--modes", "blocking,bogus"], "'bogus' is not a mode of builtin"),
        (["compare", "--modes", ","], "',' names no mode"),
        (["serve", "--workers", "0"], invalid("--workers", "is not in the range")),
        (["serve", "--mode", "nope"], "'nope' is not a mode of builtin"),
        (["no-such-command"], "No such command"),
        (["runn"], "no command 'runn'; did you mean 'run'?"),
        (["comapre"], "did you mean 'compare'?"),
        (["run", "-m", "sched-rr"], ("builtin has no mode 'sched-rr'", "node has it: add --server node")),
        (["run", "-m", "reuseport", "--server", "node"], ("node has no mode 'reuseport'", "nginx", "add --server")),
        (["show"], "Missing argument"),
        (["run", "--work-ms", "nan"], invalid("--work-ms", "'nan' is not a duration")),
        (["herd", "--work-ms", "inf"], invalid("--work-ms", "'inf' is not a duration")),
        (["latency", "--work-ms", "nan"], invalid("--work-ms", "'nan' is not a duration")),
        (["run", "--cpus", "0-99999999999"], "is not a CPU list"),
        (["compare", "--modes", "epoll,epoll"], "given more than once: epoll"),
        (["latency", "--compare", "blocking,blocking"], "given more than once: blocking"),
        (["sweep", "--accept-batch", "1,99999999"], invalid("--accept-batch", "must be between 0 and 1048576")),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], fragment: str | tuple[str, ...]) -> None:
    fragments = (fragment,) if isinstance(fragment, str) else fragment
    assert_one_error_line(run_cli(args), 2, *fragments)


def test_bare_command_prints_the_help_and_exits_0() -> None:
    result = run_cli([])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ") and "Commands:" in result.output and "compare" in result.output
    assert "\\n" not in result.output  # not one error line with literal newlines, as 0.2 printed it


def test_mode_the_platform_lacks_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MODES["epoll"], "unavailable", lambda: "pretend this kernel lacks EPOLLEXCLUSIVE")
    line = assert_one_error_line(run_cli(["run", "--mode", "epoll"]), 2, "mode 'epoll' is not available")
    assert "pretend this kernel lacks EPOLLEXCLUSIVE" in line
    assert_one_error_line(run_cli(["serve", "--mode", "epoll"]), 2, "not available")


# 0.2 names who listens there; reuseport says so before its listeners could join another group.
@pytest.mark.parametrize(
    ("mode", "fragment"), [("blocking", "already in use"), ("reuseport", "already has a listener")]
)
def test_port_in_use_exits_1(mode: str, fragment: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        me = f"pid {os.getpid()}"
        assert_one_error_line(run_cli(["run", "--mode", mode, "--port", str(port)]), 1, f"port {port}", fragment, me)
        assert_one_error_line(run_cli(["serve", "--mode", mode, "--port", str(port)]), 1, fragment, me)


def test_host_not_on_this_machine_exits_1() -> None:
    # A TEST-NET-1 address (RFC 5737): valid, but never assigned to this machine. 0.2 warns first that a
    # non-loopback address is reachable by others, then fails with one error line.
    result = run_cli(["run", "--host", "192.0.2.1"])
    assert result.exit_code == 1, result.output
    warning, error = result.stderr.splitlines()
    assert warning.startswith("accept-order: warning: listening on 192.0.2.1: anyone"), warning
    assert error.startswith("accept-order: error: ") and "address not available" in error, error
    assert "Traceback" not in result.output and result.stdout == ""


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot read"),
        ("{broken", "is not JSON"),
        ('{"schema": "other", "version": 1}', "is not an accept-order result file"),
        ('{"schema": "accept-order", "version": 999, "kind": "run"}', "schema version 999"),
        ('{"schema": "accept-order", "version": 1, "kind": "mystery"}', "'mystery', which this version cannot show"),
        ('{"schema": "accept-order", "version": 2, "kind": "mystery"}', "'mystery', which this version cannot show"),
        ('{"schema": "accept-order", "version": 1, "kind": "run"}', "result.json: counters: missing"),
        ('{"schema": "accept-order", "version": 2, "kind": "run"}', "result.json: counters: missing"),
        ('{"schema": "accept-order", "version": 1, "kind": "compare", "runs": [{}]}', "runs[0].counters: missing"),
        ('{"schema": "accept-order", "version": 2, "kind": "compare", "runs": [{}]}', "runs[0].counters: missing"),
    ],
)
def test_show_bad_files_exit_1(tmp_path: Path, content: str | None, fragment: str) -> None:
    path = tmp_path / "result.json"
    if content is not None:
        path.write_text(content)
    assert_one_error_line(run_cli(["show", str(path)]), 1, fragment)


def test_show_of_a_truncated_run_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    assert run_cli(["run", "-n", "2", "--json", str(path)]).exit_code == 0
    doc = json.loads(path.read_text())
    del doc["verdict"]["why"]
    doc["records"][0].pop("seq")
    path.write_text(json.dumps(doc))
    assert_one_error_line(run_cli(["show", str(path)]), 1, "run.json: records[0].seq: missing")


def test_json_path_unwritable_is_refused_before_the_run(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "run.json"
    assert_one_error_line(run_cli(["run", "-n", "2", "--json", str(target)]), 2, "does not exist")
    assert_one_error_line(run_cli(["herd", "-n", "2", "--json", str(tmp_path)]), 2, "is a directory")


def test_show_a_file_that_is_not_text_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00")
    assert_one_error_line(run_cli(["show", str(path)]), 1, "is not UTF-8 text")


def test_show_of_a_field_that_only_fails_while_printing_exits_1(tmp_path: Path) -> None:
    # Rich renders lazily: in 0.1 a mode that is a list passed from_dict and failed only when drawn. Now the
    # whole document is checked when it is read (results/schema.py); either way: one line, nothing printed.
    path = tmp_path / "compare.json"
    assert run_cli(["compare", "-n", "2", "--modes", "epoll", "--json", str(path)]).exit_code == 0
    doc = json.loads(path.read_text())
    doc["runs"][0]["server"]["mode"] = [1, 2]
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert_one_error_line(result, 1, "runs[0].server.mode: expected a string")
    assert "accept-order compare" not in result.stdout  # nothing half-printed before the error
