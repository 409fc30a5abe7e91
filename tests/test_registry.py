"""One place per experiment and per server kind: the registries are where the rest is read from, and a kind's
or an experiment's name is spelled only where it is defined (issue: 'a new experiment is its folder and one
line'; 'nothing else dispatches on a kind's name')."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

import pytest

import accept_order
from accept_order import api
from accept_order.cli.app import COMMANDS, main
from accept_order.experiments import EXPERIMENTS, PUBLIC, find
from accept_order.experiments.repeat.kinds import REPEATED, find_repeated
from accept_order.servers.registry import KINDS

PACKAGE = Path(accept_order.__file__).parent
FILE_COMMANDS = ("merge", "show", "plot", "modes")  # commands that read result files: no experiment's
# One pytest-xdist worker runs them all: each spelling test reads the whole package, parsed once per process.
pytestmark = pytest.mark.xdist_group("test_registry")


def string_constants(path: Path) -> frozenset[str]:
    return _string_constants(path, path.stat().st_mtime_ns)


@functools.cache
def _string_constants(path: Path, _mtime_ns: int) -> frozenset[str]:
    """Parsed once per file and version: every spelling test reads the whole package (~270 modules)."""
    return frozenset({n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)} - {None})


def files_spelling(word: str, outside: Path, allowed: tuple[Path, ...] = ()) -> list[str]:
    """The package's modules outside `outside` (and `allowed`) that hold the string constant `word`."""
    return sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if not path.is_relative_to(outside) and path not in allowed and word in string_constants(path)
    )


def test_the_commands_are_the_registrys_then_the_file_commands() -> None:
    made = [e.command for e in EXPERIMENTS.values() if e.command]
    assert list(COMMANDS) == [*made, *FILE_COMMANDS]
    for name in COMMANDS:  # each is a click command of that name in cli/NAME.py
        assert main.get_command(None, name).name == name  # type: ignore[arg-type, union-attr]


@pytest.mark.parametrize("kind", EXPERIMENTS)
def test_each_entry_finds_its_experiment_its_functions_and_its_repeat(kind: str) -> None:
    entry = EXPERIMENTS[kind]
    experiment = find(kind)
    assert experiment is not None and experiment.kind == kind
    for name in entry.api:  # defined in the experiment's own api.py, reached as accept_order.NAME and api.NAME
        function = getattr(accept_order, name)
        assert function is getattr(api, name)
        assert inspect.getmodule(function).__name__ == f"accept_order.experiments.{entry.folder}.api"  # type: ignore[union-attr]
    repeated = find_repeated(kind)
    assert (repeated is not None) == (entry.repeated is not None) == (kind in REPEATED)
    if repeated is not None:
        assert repeated.of == kind


def test_the_public_names_are_the_registrys_functions_and_the_types() -> None:
    assert set(PUBLIC) <= set(accept_order.__all__)
    assert {"run", "latency", "observe", "ServerSpec", "RunResult"} <= set(accept_order.__all__)
    with pytest.raises(AttributeError):
        accept_order.nonsense  # noqa: B018


# Kinds whose name is also a plain word the code uses otherwise: "run" (a CSV column, caddy's subcommand),
# "repeat" (the atlas's --repeat setting), "inspect" (where observe's units came from).
PLAIN_WORDS = {"run", "repeat", "inspect"}


@pytest.mark.parametrize("kind", sorted(set(EXPERIMENTS) - PLAIN_WORDS))
def test_an_experiments_kind_is_spelled_in_at_most_two_files_outside_its_folder(kind: str) -> None:
    """The registry's line and its command (cli/NAME.py saves it under its kind)."""
    spelled = files_spelling(kind, PACKAGE / "experiments" / EXPERIMENTS[kind].folder)
    assert len(spelled) <= 2, spelled


def kind_module(name: str) -> Path:
    module = inspect.getmodule(type(KINDS[name]))
    assert module is not None and module.__file__ is not None
    return Path(module.__file__)


@pytest.mark.parametrize("name", KINDS)
def test_a_server_kinds_name_is_spelled_only_in_its_module_and_the_registry(name: str) -> None:
    own = kind_module(name)
    # A launched kind's files are its folder's modules named after it (nginx.py, nginx_config.py).
    outside = [p for p in files_spelling(name, PACKAGE / "no such folder") if not Path(p).stem.startswith(own.stem)]
    # The default kind is spelled where every spec's default is (core/spec.py), its module takes it from there; so is
    # the remote and attached kinds, which the file format's readers below the registry know (results/merge_rows.py;
    # ServerSpec, which holds no backlog of the tool's for a server it did not start, and merge_differs.py).
    allowed = {"servers/registry.py", *(["core/spec.py"] if name in ("builtin", "remote", "attached") else [])}
    assert set(outside) <= allowed, outside


def test_the_spelling_checks_see_a_name_that_is_spelled_elsewhere() -> None:
    """The checks above would pass by reading nothing: a known spelling outside the folder is found."""
    assert files_spelling("latency", PACKAGE / "experiments" / "latency") == [
        "cli/latency.py",
        "experiments/__init__.py",
    ]
    assert "core/spec.py" in files_spelling("builtin", PACKAGE / "servers")


def test_a_specs_label_is_its_kinds_from_a_fresh_interpreter() -> None:
    """The kinds name their servers from a floor above the spec's: the public API and a bare spec import
    must still say `epoll`, `attached pid 123`, `target 10.0.0.1:80` (not `builtin epoll`)."""
    import subprocess
    import sys

    code = (
        "from accept_order import ServerSpec\n"
        "print(ServerSpec().label)\n"
        "print(ServerSpec(kind='attached', mode='attached', attach=(123,), port=80).label)\n"
        "print(ServerSpec(kind='remote', mode='remote', host='10.0.0.1', port=80).label)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == ["epoll", "attached pid 123", "target 10.0.0.1:80"]
    bare = "from accept_order.core.spec import ServerSpec\nprint(ServerSpec(mode='poll').label)\n"
    done = subprocess.run([sys.executable, "-c", bare], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "poll"


def test_a_kinds_own_option_is_made_and_checked_from_its_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new kind's setting is its declaration (core/kind_options.py, beside the spec's field, where --help reads
    it without importing a kind) and the kind naming it: the command line gets the flag, the registry checks it for
    the kind that reads it and refuses it where it says so, and no other file changes."""
    import dataclasses

    import click

    from accept_order.cli.options import kind_options
    from accept_order.core import kind_options as declared
    from accept_order.core.errors import PlanError
    from accept_order.core.kinds import KindOption
    from accept_order.core.spec import ServerSpec
    from accept_order.servers import registry

    reader = KindOption("maxconn", "--maxconn", "made up", low=0, high=9, whose="the made-up kind's")
    builtin = type(KINDS["builtin"])
    monkeypatch.setattr(declared, "DECLARED", (declared.POLICY, declared.MUTEX_DELAY, reader))
    monkeypatch.setattr(registry, "KINDS", {"builtin": builtin(), "made-up": type("MadeUp", (builtin,), {})()})
    monkeypatch.setattr(registry.KINDS["made-up"], "options", (reader,))
    monkeypatch.setattr(registry.KINDS["made-up"], "name", "made-up")
    made = click.command()(lambda **kw: None)
    for option in kind_options(None):
        made = option(made)
    assert "--maxconn" in {flag for p in made.params for flag in p.opts}
    spec = ServerSpec(kind="made-up", mode="blocking", maxconn=5)
    assert registry.checked(spec).maxconn == 5
    with pytest.raises(PlanError, match="--maxconn must be between 0 and 9, got 10"):
        registry.checked(dataclasses.replace(spec, maxconn=10))
    with pytest.raises(PlanError, match="^--maxconn is the made-up kind's; the built-in workers do not read it$"):
        registry.checked(dataclasses.replace(spec, kind="builtin"))


def test_a_command_for_some_kinds_has_only_their_options() -> None:
    from accept_order.cli.options import option_param
    from accept_order.servers.registry import declared_options

    assert [option_param(o) for o in declared_options(["builtin"])] == ["policy", "mutex_delay"]
    assert "maxconn" in [option_param(o) for o in declared_options()]
    reload_flags = {flag for p in main.get_command(None, "reload").params for flag in p.opts}  # type: ignore[arg-type, union-attr]
    assert {"--policy", "--mutex-delay"} <= reload_flags and "--maxconn" not in reload_flags


def test_a_spec_is_checked_once_and_a_run_resolves_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line checks a spec; the run it hands that spec to does not check it again. An equal spec
    made anew is checked anew (what the machine has may have changed)."""
    from accept_order.core.spec import ServerSpec
    from accept_order.servers import registry

    checks: list[ServerSpec] = []
    builtin = type(KINDS["builtin"])
    real = builtin.check
    monkeypatch.setattr(builtin, "check", lambda self, spec: (checks.append(spec), real(self, spec))[1])
    spec = registry.checked(ServerSpec(mode="blocking", workers=2))
    assert registry.checked(spec) is spec and registry.plan(spec).spec is spec
    assert len(checks) == 1
    registry.checked(ServerSpec(mode="blocking", workers=2))
    assert len(checks) == 2
