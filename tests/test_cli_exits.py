"""A command that would run nothing fails before anything starts (exit 1, one line naming why); `--modes
all` means the server's own modes, and burst's default is each server's own default mode. In-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.servers.registry import server_kind

needs_nginx = pytest.mark.skipif(bool(server_kind("nginx").missing()), reason="nginx is not installed")
needs_haproxy = pytest.mark.skipif(bool(server_kind("haproxy").missing()), reason="haproxy is not installed")


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["burst", "--server", "haproxy", "--modes", "epoll", "--clients", "5"], "epoll (haproxy has no mode 'epoll')"),
        (["compare", "--servers", "nginx", "--modes", "blocking"], "blocking (nginx has no mode 'blocking')"),
        (["herd", "--server", "nginx", "--modes", "blocking"], "blocking (nginx has no mode 'blocking')"),
        (
            ["latency", "--servers", "nginx,gunicorn", "--modes", "blocking", "-n", "10"],
            "nginx blocking (nginx has no mode 'blocking'); gunicorn blocking (gunicorn has no mode 'blocking')",
        ),
    ],
    ids=["burst", "compare", "herd", "latency"],
)
def test_a_command_left_with_nothing_to_run_fails_naming_why(args: list[str], why: str, tmp_path: Path) -> None:
    saved = tmp_path / "out.json"
    result = run_cli([*args, "--json", str(saved)])
    assert_one_error_line(result, 1, f"nothing to run: {why}")
    assert result.stdout == ""
    assert not saved.exists()


@needs_haproxy
def test_burst_runs_each_servers_own_default_mode(tmp_path: Path) -> None:
    """HAProxy has no epoll: burst's default is its own default mode, not an empty table."""
    saved = tmp_path / "burst.json"
    result = run_cli(["burst", "--server", "haproxy", "-w", "2", "--clients", "5", "--json", str(saved)])
    assert result.exit_code == 0, result.output
    runs = json.loads(saved.read_text())["runs"]
    assert [(r["server"]["server"], r["server"]["mode"]) for r in runs] == [
        ("haproxy", server_kind("haproxy").default_mode())
    ]
    assert [sum(c["served"]) for r in runs for c in r["cells"]] == [5]


@needs_nginx
def test_herd_all_means_the_servers_own_modes(tmp_path: Path) -> None:
    """`herd --server nginx` (default --modes all) runs nginx's modes, not the built-in ones it lacks."""
    saved = tmp_path / "herd.json"
    result = run_cli(["herd", "--server", "nginx", "-w", "1", "-n", "1", "--json", str(saved)])
    assert result.exit_code == 0, result.output
    doc = json.loads(saved.read_text())
    assert [r["server"]["mode"] for r in doc["runs"]] == list(server_kind("nginx").modes())
    assert doc["skipped"] == {}


# -- numbers are ASCII digits; an error names the option typed ------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["run", "-p", "٣"], "--port"),
        (["run", "-w", "٣"], "--workers"),
        (["run", "--work-ms", "١"], "--work-ms"),
        (["run", "--timeout", "nan"], "--timeout"),
        (["run", "--cpus", "٠"], "--cpus"),
        (["run", "--attach", "٣", "-p", "80"], "--attach"),
        (["run", "--target", "127.0.0.1:٣"], "--target"),
        (["latency", "--duration", "٣s"], "--duration"),
        (["latency", "-c", "٣"], "--concurrency"),
        (["sweep", "--accept-batch", "١,٠"], "--accept-batch"),
        (["ramp", "--rates", "٣"], "--rates"),
        (["burst", "--clients", "١٠"], "--clients"),
    ],
)
def test_digits_of_other_scripts_are_not_numbers(args: list[str], option: str) -> None:
    """Python's int('٣') is 3: `-p ٣` bound port 3. Only ASCII digits are numbers, in every option."""
    assert_one_error_line(run_cli(args), 2, option)


def test_every_numeric_option_takes_ascii_digits_only() -> None:
    """Every IntRange/FloatRange option of every command is the ASCII-only kind (cli/types.py), so a new
    numeric option cannot bring click's (int() and float() take any script's digits, and 'nan')."""
    import click

    from accept_order.cli import types
    from accept_order.cli.app import COMMANDS, main

    ctx = click.Context(main)
    found = []
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None
        for param in command.params:
            if isinstance(param.type, click.IntRange | click.FloatRange):
                found.append(f"{name} {param.name}")
                assert isinstance(param.type, types.IntRange | types.FloatRange), f"{name} {param.name}"
    assert "run port" in found and "ramp in_flight" in found and "reload at" in found


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["latency", "-c", "200", "-n", "1000"], "--concurrency 200"),  # -n 10 lowers -c to 10 (d61f804)
        (["ramp", "--rates", "10", "--in-flight", "200"], "--in-flight 200"),
        (["ramp", "--concurrency-steps", "8,200"], "--concurrency-steps 200"),
    ],
)
def test_connections_in_flight_beyond_the_local_port_range_are_refused_naming_the_option(
    args: list[str], option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As burst's --clients: more connections in flight than local ports to one server address would fail
    with EADDRNOTAVAIL (and exit 0); refused before anything starts, naming the option given."""
    from accept_order.core import limits

    monkeypatch.setattr(limits, "local_ports", lambda: 100)
    result = run_cli(args)
    assert_one_error_line(result, 2, option, "ip_local_port_range", "use at most 100")
    assert result.stdout == ""


def test_ramp_in_flight_over_the_open_file_limit_names_in_flight() -> None:
    """It blamed --concurrency, an option ramp does not have (and only once the server had started)."""
    line = assert_one_error_line(run_cli(["ramp", "--rates", "10", "--in-flight", "100000000"]), 2, "--in-flight")
    assert "--concurrency" not in line


def test_a_duration_out_of_range_says_its_unit() -> None:
    assert_one_error_line(run_cli(["ramp", "--step", "1000h"]), 2, "--step must be between 0.1 s and 3600 s")
