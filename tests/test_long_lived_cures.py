"""What changes the split of load on long-lived connections, per server kind (issue 28 §1): every kind the
registry knows has rows, or one saying it has no setting of its own; a kind's settings are unique; and
every `measure` command gets as far as running (the api call that would start work is replaced by one that
stops the command), so that it names options, modes and servers the CLI really takes."""

from __future__ import annotations

import ast
import os
import shlex
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from conftest import run_cli

from accept_order import api
from accept_order.cli.app import main
from accept_order.core.errors import AcceptOrderError
from accept_order.core.kinds import ServerKind, SideBySide
from accept_order.experiments.inspect import cures
from accept_order.experiments.inspect.cures import COMMAND, NONE_KNOWN, NONE_OF_ITS_OWN, Cure, long_lived_cures
from accept_order.servers.registry import KINDS

REACHED = 97
POOL_OPTIONS = ("--pool", "--requests-per-connection")  # being added to latency by another change


class Reached(AcceptOrderError):
    exit_code = REACHED


def every_answer() -> Iterator[tuple[str, Cure]]:
    for name, kind in [*KINDS.items(), ("unknown", None)]:
        for cure in long_lived_cures(kind, ()):
            yield name, cure


COMMANDS = sorted({(name, cure.command) for name, cure in every_answer() if cure.command is not None})


def missing_options() -> list[str]:
    command = main.get_command(click.Context(main), "latency")
    assert command is not None
    given = {opt for param in command.params for opt in param.opts}
    return [option for option in POOL_OPTIONS if option not in given]


@pytest.fixture
def stopped(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The api functions a latency command starts work through record their name and stop the command."""
    reached: list[str] = []

    def stopper(entry: str) -> Callable[..., Any]:
        def stop(*args: Any, **kwargs: Any) -> Any:
            reached.append(entry)
            raise Reached(f"reached {entry}")

        return stop

    for entry in ("latency", "compare_latency"):
        monkeypatch.setattr(api, entry, stopper(entry))
    return reached


@pytest.fixture
def fill() -> Iterator[Callable[[str], list[str]]]:
    """A command's words with PID and PORT this process's pid and a port it listens on (for --attach)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = str(listener.getsockname()[1])
        words = {"PID": str(os.getpid()), "PORT": port}
        yield lambda line: [words.get(word, word) for word in shlex.split(line)]


def without_pool(args: list[str]) -> list[str]:
    """The command with the pool options left out (what the CLI takes before they exist)."""
    kept: list[str] = []
    skip = False
    for word in args:
        if skip:
            skip = False
        elif word == "--pool":
            continue
        elif word == "--requests-per-connection":
            skip = True
        else:
            kept.append(word)
    return kept


@pytest.mark.parametrize("name, line", COMMANDS)
def test_each_measure_command_runs_as_far_as_the_api(
    name: str, line: str, stopped: list[str], fill: Callable[[str], list[str]]
) -> None:
    missing = missing_options()
    if missing:
        pytest.skip(f"latency has no {' or '.join(missing)} yet (another change adds them)")
    args = fill(line)
    assert args[0] == COMMAND.strip()
    result = run_cli(args[1:])
    assert result.exit_code == REACHED, f"{line}: {result.stderr}"
    assert stopped


@pytest.mark.parametrize("name, line", COMMANDS)
def test_each_measure_command_runs_as_far_as_the_api_without_the_pool_options(
    name: str, line: str, stopped: list[str], fill: Callable[[str], list[str]]
) -> None:
    """Its servers, modes and other options, checked whether or not the pool options exist yet."""
    args = without_pool(fill(line))
    result = run_cli(args[1:])
    assert result.exit_code == REACHED, f"{line}: {result.stderr}"
    assert stopped


def test_the_commands_are_the_whole_of_each_measure_after_its_sentence() -> None:
    for name, cure in every_answer():
        if cure.command is not None:
            assert cure.measure.endswith(cure.command)
            assert cure.measure == cure.command or cure.measure[: -len(cure.command)].endswith(": "), cure
        else:  # no command: a sentence saying why
            assert cure.measure.startswith("not measured: "), (name, cure)


@pytest.mark.parametrize("kind", [*KINDS.values(), None], ids=[*KINDS, "unknown"])
def test_every_kind_has_rows_or_one_saying_it_has_none(kind: ServerKind | None) -> None:
    found = long_lived_cures(kind, ())
    assert found
    settings = [cure.setting for cure in found]
    if NONE_OF_ITS_OWN in settings or NONE_KNOWN in settings:
        assert settings[0] in (NONE_OF_ITS_OWN, NONE_KNOWN)  # said first, and once
        assert settings.count(NONE_OF_ITS_OWN) + settings.count(NONE_KNOWN) == 1
    for cure in found:
        assert cure.setting and cure.what and cure.measure
        assert cure.available == (cure.reason == ""), cure


@pytest.mark.parametrize("kind", [*KINDS.values(), None], ids=[*KINDS, "unknown"])
def test_settings_are_unique_per_kind(kind: ServerKind | None) -> None:
    settings = [cure.setting for cure in long_lived_cures(kind, ())]
    assert len(settings) == len(set(settings)), settings


def test_a_mode_seen_whole_is_left_out_and_one_seen_among_others_may_be_set() -> None:
    nginx = KINDS["nginx"]
    assert "listen ADDRESS:PORT reuseport;" in [c.setting for c in long_lived_cures(nginx, ("epoll",))]
    assert "listen ADDRESS:PORT reuseport;" not in [c.setting for c in long_lived_cures(nginx, ("reuseport",))]
    alike = ("reuseport", "reuseport-cpu", "incoming-cpu")
    row = next(c for c in long_lived_cures(KINDS["builtin"], alike) if c.setting == "--mode reuseport")
    assert "may be set already" in row.what and "cannot tell them apart" in row.what
    # /proc shows fd-pass but not its policy: the row stays, saying it may be set
    row = next(c for c in long_lived_cures(KINDS["builtin"], ("fd-pass",)) if "least-busy" in c.setting)
    assert "may be set already" in row.what


def test_a_row_says_when_its_server_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    nginx = KINDS["nginx"]
    monkeypatch.setattr(type(nginx), "missing", lambda self: "nginx is not installed here")
    found = long_lived_cures(nginx, ())
    assert found and all(not c.available and c.reason == "nginx is not installed here" for c in found)


@pytest.mark.parametrize("installed", [False, True])
def test_envoys_row_is_available_only_where_envoy_is(monkeypatch: pytest.MonkeyPatch, installed: bool) -> None:
    monkeypatch.setattr(cures.shutil, "which", lambda name: "/usr/bin/envoy" if installed else None)
    row = next(c for c in long_lived_cures(None, ()) if "exact_balance" in c.setting)
    assert row.available == installed
    assert row.reason == ("" if installed else "Envoy is not installed here")


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS)
def test_a_kinds_declared_rows_name_modes_it_has(kind: ServerKind) -> None:
    """A row's mode, and the modes it is measured by, are the kind's own: a misspelt one would never be left
    out as set already, and would not be looked up for availability."""
    for row in kind.cures:
        assert row.mode is None or row.mode in kind.modes(), row
        if isinstance(row.measure, SideBySide):
            assert set(row.measure.modes) <= set(kind.modes()), row


def test_a_launched_kind_that_declares_none_has_one_row_saying_so() -> None:
    nginx = type(KINDS["nginx"])
    bare = type("Bare", (nginx,), {"cures": ()})()
    (row,) = long_lived_cures(bare, ())
    assert row.setting == NONE_OF_ITS_OWN
    assert row.command is not None and f"--modes {bare.default_mode()} " in row.command


def test_a_remote_server_has_its_own_row_then_envoys() -> None:
    settings = [cure.setting for cure in long_lived_cures(KINDS["remote"], ())]
    assert settings[0] == NONE_OF_ITS_OWN and "exact_balance" in settings[-1]
    attached = [cure.setting for cure in long_lived_cures(KINDS["attached"], ())]
    assert attached[0] == NONE_KNOWN and "exact_balance" in attached[-1]


def test_no_experiment_imports_a_kinds_module() -> None:
    """Each kind's rows are found through the registry: experiments/ imports servers/registry.py, never the
    module of a kind (servers/launched/, builtin, remote, attached)."""
    folder = Path(cures.__file__).parents[1]
    kinds = {"builtin", "remote", "attached"}
    found = []
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                parts = [*node.module.split("."), *(alias.name for alias in node.names)]
                if "servers" in parts and ("launched" in parts or kinds & set(parts[parts.index("servers") :])):
                    found.append(f"{path.relative_to(folder)}: {node.module}")
    assert found == []
