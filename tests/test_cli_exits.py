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
