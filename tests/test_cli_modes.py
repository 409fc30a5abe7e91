"""--mode and --modes (issue 27 §4): a name no server has is refused in one line that names the modes of the
server the command line chose (wherever --server comes) and the nearest name, as commands and options get;
case and `_` for `-` do not matter; the line ends with one hint."""

from __future__ import annotations

import click
import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.cli.app import main
from accept_order.servers.registry import KINDS

BUILTIN = ", ".join(KINDS["builtin"].modes())
NGINX = ", ".join(KINDS["nginx"].modes())


def parsed(args: list[str]) -> dict[str, object]:
    """The parameters `accept-order ARGS` would run with (parsed as click does, nothing run)."""
    root = click.Context(main, info_name="accept-order")
    command = main.get_command(root, args[0])
    assert command is not None
    return command.make_context(args[0], args[1:], parent=root).params


@pytest.mark.parametrize(
    ("args", "listed"),
    [
        (["run", "--mode", "epol"], BUILTIN),
        (["run", "--server", "nginx", "--mode", "epol"], NGINX),
        (["run", "--mode", "epol", "--server", "nginx"], NGINX),  # --server typed after --mode
        (["latency", "--server", "nginx", "--modes", "epol"], NGINX),
    ],
)
def test_a_typo_gets_the_nearest_mode_and_the_chosen_servers_modes(args: list[str], listed: str) -> None:
    result = run_cli(args)
    assert_one_error_line(result, 2, "'epol' is not a mode of", "did you mean 'epoll'?", f"modes: {listed}")
    assert "thunder-lock" not in result.stderr  # not the modes of every server
    assert result.stderr.count("(see ") == 1


def test_a_name_near_another_servers_mode_names_that_server() -> None:
    assert_one_error_line(run_cli(["run", "-m", "thunderlock"]), 2, "did you mean 'thunder-lock' (--server uwsgi)?")


def test_an_unknown_mode_in_a_list_ends_with_one_hint() -> None:
    result = run_cli(["compare", "--modes", "epoll,foo"])
    assert_one_error_line(result, 2, "'foo' is not a mode of builtin.", f"Its modes: {BUILTIN}, or all")
    line = result.stderr.strip()
    assert line.endswith("or all (see 'main compare --help')") and line.count("(see ") == 1, line  # CliRunner: main


@pytest.mark.parametrize(
    ("args", "key", "value"),
    [
        (["run", "--mode", "EPOLL"], "mode", "epoll"),
        (["run", "-m", "io_uring"], "mode", "io-uring"),
        (["run", "--server", "uwsgi", "-m", "Thunder_Lock"], "mode", "thunder-lock"),
        (["compare", "--modes", "Blocking,REUSEPORT"], "modes", ["blocking", "reuseport"]),
    ],
)
def test_case_and_underscores_do_not_matter(args: list[str], key: str, value: object) -> None:
    assert parsed(args)[key] == value


def test_the_same_mode_twice_in_any_case_is_refused() -> None:
    assert_one_error_line(run_cli(["compare", "--modes", "epoll,EPOLL"]), 2, "given more than once: epoll")
