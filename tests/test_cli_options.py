"""Every command's --help shows only what that command accepts, with the defaults it really uses (issue 20).

The walk below reads each command's click parameters, not a list kept by hand: an option added to a
command's help is tried here without an edit. Each shown option is given to its command (at the default
its help shows, a flag alone, or a sample value where no default is shown), and the command must get as
far as running: the api call that would start work is replaced by one that records its arguments and
stops. An option given at its shown default must change nothing the command would run with.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from conftest import assert_one_error_line, run_cli

from accept_order import api
from accept_order.cli.app import COMMANDS, main
from accept_order.core import netns
from accept_order.core.errors import AcceptOrderError
from accept_order.experiments import documents
from accept_order.render import plots

GOLDEN = Path(__file__).parent / "data" / "golden"
REACHED = 97  # the exit status of a command that got as far as running


class Reached(AcceptOrderError):
    exit_code = REACHED


# Options whose help shows no default: a value each takes (companions it needs follow it); a flag that
# needs a companion.
SAMPLES: dict[str, list[str]] = {
    "--mode": ["--mode", "epoll"],
    "--modes": ["--modes", "epoll"],
    "--workers": ["--workers", "2"],
    "--cpus": ["--cpus", "0"],
    "--accept-batch": ["--accept-batch", "1"],
    "--target": ["--target", "127.0.0.1:9"],
    "--json": ["--json", "{tmp}/out.json"],
    "--connections": ["--connections", "10"],
    "--duration": ["--duration", "1s"],
    "--load-cpus": ["--load-cpus", "0"],
    "--rate": ["--rate", "100"],
    "--title": ["--title", "t"],
    "--rates": ["--rates", "100"],
    "--concurrency-steps": ["--concurrency-steps", "4"],
    "--p99": ["--p99", "20ms"],
    "--p999": ["--p999", "20ms"],
    "--server": ["--server", "builtin"],
    "--port": ["--port", "{port}"],
    "--output": ["-o", "{tmp}/out.png"],
    "--attach": ["--attach", "{pid}", "--port", "{port}"],
    "--table": ["--format", "csv", "--table", "histogram"],
    "--pool": ["--pool", "--requests-per-connection", "0"],  # a pool of one-request connections is refused
    # client hosts: the workers must listen where the hosts reach them (--host), ssh's config must be a file
    "--clients": ["--clients", "c1", "--host", "192.0.2.1"],
    "--client-hosts": ["--client-hosts", "c1", "--host", "192.0.2.1"],
    "--ssh-config": ["--ssh-config", "/etc/passwd", "--clients", "c1", "--host", "192.0.2.1"],
    "--client-python": ["--client-python", "python3", "--clients", "c1", "--host", "192.0.2.1"],
    "--observe-on": ["--observe-on", "srv"],
}
# Where one command needs a companion the others refuse: sweep --target runs the one cap the server has.
SAMPLES_OF: dict[tuple[str, str], list[str]] = {
    ("sweep", "--target"): [*SAMPLES["--target"], "--accept-batch", "1"],
    # burst's --clients counts connections: its hosts are --client-hosts
    ("burst", "--ssh-config"): ["--ssh-config", "/etc/passwd", "--client-hosts", "c1", "--host", "192.0.2.1"],
    ("burst", "--client-python"): ["--client-python", "python3", "--client-hosts", "c1", "--host", "192.0.2.1"],
}
# What a command needs besides the option tried (its arguments); {…} filled per test.
BASE: dict[str, list[str]] = {
    "inspect": ["{pid}"],
    "observe": ["{pid}"],
    "show": [str(GOLDEN / "latency.json")],
    "merge": ["{tmp}/a.json", "{tmp}/b.json"],
    "plot": [str(GOLDEN / "latency.json"), "-o", "{tmp}/out.png"],
}
# An option that replaces the base arguments rather than adding to them (a PID or --port, not both).
INSTEAD_OF_BASE = {("inspect", "--port"), ("observe", "--port")}
# A setting only some kinds or modes read is refused where none asked reads it, at its default too (given is judged):
# tried, and tried without, beside a server and mode that read it.
READ_BY: dict[str, list[str]] = {
    "--policy": ["--mode", "fd-pass"],
    "--mutex-delay": ["--mode", "accept-mutex"],
    "--maxconn": ["--server", "haproxy"],
}
READ_BY_OF: dict[tuple[str, str], list[str]] = {
    **{(name, "--policy"): ["--modes", "fd-pass"] for name in ("compare", "herd", "burst", "reload")},
    **{(name, "--mutex-delay"): ["--modes", "accept-mutex"] for name in ("compare", "herd", "burst", "reload")},
    ("sweep", "--policy"): ["--mode", "fd-pass", "--accept-batch", "1"],  # fd-pass's accepts follow no cap
    ("sweep", "--maxconn"): ["--server", "haproxy", "--accept-batch", "1"],
}
ENTRY_POINTS = (
    "sequential",
    "compare",
    "serve",
    "latency",
    "compare_latency",
    "sweep_accept_batch",
    "herd",
    "reload",
    "burst",
    "ramp",
    "inspect",
    "atlas",
    "observe",
    "repeat",
)


def command(name: str) -> click.Command:
    found = main.get_command(click.Context(main), name)
    assert found is not None
    return found


def shown_options(name: str) -> list[click.Option]:
    return [p for p in command(name).params if isinstance(p, click.Option) and not p.hidden]


def long_name(option: click.Option) -> str:
    return max(option.opts, key=lambda opt: opt.startswith("--"))


def shown_default(name: str, option: click.Option) -> str | None:
    """The default as --help prints it (`[default: 5s; ...]`), or None where it shows none."""
    record = option.get_help_record(click.Context(command(name), info_name=name))
    assert record is not None
    match = re.search(r"\[default: ([^;\]]*)", record[1])
    return match[1] if match and option.show_default else None


def cases() -> Iterator[tuple[str, str]]:
    for name in COMMANDS:
        for option in shown_options(name):
            yield name, long_name(option)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """Every entry point a command starts work through records what it was given, then stops the command."""
    seen: list[tuple[str, list[Any]]] = []

    def stopper(entry: str) -> Callable[..., Any]:
        def stop(*args: Any, **kwargs: Any) -> Any:
            given = [a for a in args if not callable(a)]  # progress callbacks differ from run to run
            given += [(k, v) for k, v in sorted(kwargs.items()) if not callable(v)]
            seen.append((entry, given))
            raise Reached(f"reached {entry}")

        return stop

    for entry in ENTRY_POINTS:
        monkeypatch.setattr(api, entry, stopper(entry))
    monkeypatch.setattr(netns, "enter_private", stopper("enter_private"))  # reload: before its namespace
    monkeypatch.setattr(plots, "require_matplotlib", lambda: None)
    monkeypatch.setattr(documents, "plot_document", stopper("plot_document"))
    return seen


@pytest.fixture
def fill(tmp_path: Path) -> Iterator[Callable[[list[str]], list[str]]]:
    """Fills {tmp}, {pid}, {port} (a port this process listens on, for --attach and --port)."""
    shutil.copy(GOLDEN / "latency.json", tmp_path / "a.json")
    # merge refuses one measurement twice: b is another one (started at another time)
    text = (GOLDEN / "latency.json").read_text()
    (tmp_path / "b.json").write_text(
        re.sub(r'"started_at": "[^"]*"', '"started_at": "2020-01-01T00:00:00+00:00"', text)
    )
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        yield lambda args: [a.format(tmp=tmp_path, pid=os.getpid(), port=port) for a in args]


@pytest.mark.parametrize("name, option", list(cases()))
def test_every_shown_option_is_accepted_at_its_shown_default(
    name: str, option: str, calls: list[tuple[str, list[Any]]], fill: Callable[[list[str]], list[str]]
) -> None:
    param = next(p for p in shown_options(name) if long_name(p) == option)
    default = shown_default(name, param)
    if param.is_flag:
        given = SAMPLES.get(option, [option])
    elif default is not None:
        given = [option, default]
    else:
        assert option in SAMPLES, f"{name} {option} shows no default: add a sample value to SAMPLES"
        given = SAMPLES_OF.get((name, option), SAMPLES[option])
    base = [] if (name, option) in INSTEAD_OF_BASE else BASE.get(name, [])
    base = [*base, *READ_BY_OF.get((name, option), READ_BY.get(option, []))]
    tried = run_cli(fill([name, *base, *given]))
    assert tried.exit_code in (0, REACHED), f"{name} {' '.join(given)}: {tried.stderr}"
    if default is None or param.is_flag:
        return
    # At its shown default the option must change nothing: what runs (or what is shown) is what it is without it.
    ran = list(calls)
    without = run_cli(fill([name, *base]))
    assert without.exit_code == tried.exit_code, without.stderr
    assert (calls[len(ran) :], without.stdout) == (ran, tried.stdout), f"{name} {option} {default}: not the default"


def test_the_walk_sees_what_issue_20_found() -> None:
    """The two options the issue saw offered and then refused are gone from those commands' help."""
    assert "--connections" not in [long_name(o) for o in shown_options("reload")]
    assert "--target" not in [long_name(o) for o in shown_options("reload")]
    for name in ("run", "latency", "sweep", "burst", "ramp"):  # issue 29: the load commands take it too
        assert "--target" in [long_name(o) for o in shown_options(name)]
    assert shown_default("reload", next(o for o in shown_options("reload") if long_name(o) == "--duration")) == "2s"


# -- one way to give durations --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, field, value",
    [
        (["run", "--timeout", "2s"], "timeout_s", 2.0),
        (["run", "--timeout", "500ms"], "timeout_s", 0.5),
        (["run", "--gap", "50ms"], "gap_ms", 50.0),
        (["run", "--gap", "0"], "gap_ms", 0.0),  # 0 needs no unit
        (["run", "--gap-ms", "50"], "gap_ms", 50.0),  # the old spelling, hidden: it names its unit
        (["run", "--gap", "1s"], "gap_ms", 1000.0),
        (["run", "--work", "1ms"], "work_us", 1000),
        (["run", "--work", "200us"], "work_us", 200),
        (["run", "--work", "0"], "work_us", 0),
        (["run", "--work-ms", "2"], "work_us", 2000),
        (["run", "--work-us", "200"], "work_us", 200),
        (["latency", "--timeout", "2s"], "timeout_s", 2.0),
        (["burst", "--timeout", "250ms"], "timeout_s", 0.25),
        (["ramp", "--timeout", "3s"], "timeout_s", 3.0),
    ],
)
def test_durations_take_a_unit_and_an_old_spelling_its_own(
    args: list[str], field: str, value: float, calls: list[tuple[str, list[Any]]]
) -> None:
    result = run_cli(args)
    assert result.exit_code == REACHED, result.stderr
    found = [getattr(a, field) for a in calls[0][1] if hasattr(a, field)]
    assert found == [pytest.approx(value)], calls[0]


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["run", "--work", "1ms", "--work-ms", "1"], ["give --work once", "its old spellings"]),
        (["run", "--gap", "5ms", "--gap-ms", "5"], ["give --gap once"]),
        (["run", "--timeout", "2x"], ["Invalid value for '--timeout'", "not a duration such as 10s, 500ms or 2m"]),
        (["run", "--timeout", "2h"], ["Invalid value for '--timeout'", "out of range: give 1ms to 1h"]),
        (["run", "--gap", "2m"], ["Invalid value for '--gap'", "out of range: give 0 to 1m"]),
        (["run", "--work", "-1ms"], ["Invalid value for '--work'", "not a duration"]),
        (["run", "--timeout", "0"], ["Invalid value for '--timeout'", "'0' is not a positive duration"]),
        # one rule, no guessing (a bare number was ms for --work and --gap, s elsewhere): the unit to add
        (
            ["run", "--work", "2"],
            ["Invalid value for '--work'", "'2' needs a unit: write 2ms for what it used to mean"],
        ),
        (["run", "--gap", "50"], ["Invalid value for '--gap'", "'50' needs a unit: write 50ms"]),
        (["run", "--timeout", "1.5"], ["Invalid value for '--timeout'", "'1.5' needs a unit: write 1.5s"]),
        (["latency", "--duration", "10"], ["Invalid value for '--duration'", "'10' needs a unit: write 10s"]),
        (["ramp", "--p99", "20"], ["Invalid value for '--p99'", "'20' needs a unit"]),
        (["observe", "--interval", "2"], ["Invalid value for '--interval'", "'2' needs a unit"]),
    ],
)
def test_bad_durations_are_one_line(args: list[str], fragments: list[str]) -> None:
    assert_one_error_line(run_cli(args), 2, *fragments)


def test_old_spellings_are_hidden_from_help() -> None:
    for name in ("run", "compare", "latency", "burst", "atlas"):
        shown = run_cli([name, "--help"]).stdout
        for old in ("--work-ms", "--work-us", "--gap-ms", "--servers"):
            assert old not in shown.replace("--server ", ""), f"{name} --help shows {old}"


# -- --server / --servers, --accept-batch: one option, one parser ---------------------------------------


@pytest.mark.parametrize("name", ["run", "serve", "herd", "sweep", "ramp", "compare", "latency", "burst", "atlas"])
@pytest.mark.parametrize("spelling", ["--server", "--servers"])
def test_server_and_servers_are_one_option_in_every_command(
    name: str, spelling: str, calls: list[tuple[str, list[Any]]]
) -> None:
    result = run_cli([name, spelling, "builtin"])
    assert result.exit_code == REACHED, result.stderr


@pytest.mark.parametrize("name", ["run", "serve", "herd", "ramp"])
def test_a_one_server_command_says_so_for_a_list(name: str) -> None:
    assert_one_error_line(
        run_cli([name, "--servers", "builtin,nginx"]), 2, "Invalid value for '--server'", "one server at a time"
    )


@pytest.mark.parametrize("name", ["run", "compare", "latency", "herd", "burst", "ramp", "reload", "sweep"])
def test_accept_batch_is_one_parser_with_one_error_text(name: str) -> None:
    line = assert_one_error_line(run_cli([name, "--accept-batch", "1,x"]), 2, "Invalid value for '--accept-batch'")
    assert "'1,x' is not a list of whole numbers such as 1,4,32,0" in line
    line = assert_one_error_line(run_cli([name, "--accept-batch", "-1"]), 2, "Invalid value for '--accept-batch'")
    assert "every value must be between 0 and" in line


def test_accept_batch_takes_a_list_only_in_sweep(calls: list[tuple[str, list[Any]]]) -> None:
    assert_one_error_line(run_cli(["run", "--accept-batch", "1,4"]), 2, "run takes one value (sweep takes a list)")
    assert run_cli(["sweep", "--accept-batch", "1,4"]).exit_code == REACHED
    assert run_cli(["run", "--accept-batch", "4"]).exit_code == REACHED
    assert [a.accept_batch for a in calls[1][1] if hasattr(a, "accept_batch")] == [4]


# -- install hints --------------------------------------------------------------------------------------


def test_every_install_hint_says_what_works_from_a_clone_too() -> None:
    """A hint naming only `pip install 'accept-order[X]'` fails for whoever cloned the repository (the
    README's way in): each says the clone's `pip install '.[X]'` as well."""
    source = Path(__file__).parent.parent / "src" / "accept_order"
    for path in source.rglob("*.py"):
        for line in path.read_text().splitlines():
            for extra in re.findall(r"pip install 'accept-order\[(\w+)\]'", line):
                assert f"pip install '.[{extra}]'" in line, f"{path.name}: {line.strip()}"
    from accept_order.core.hints import pip_install

    assert pip_install("plot") == "pip install 'accept-order[plot]', or from a clone: pip install '.[plot]'"


# -- unknown counts and legends -------------------------------------------------------------------------


def worker_rows(text: str) -> list[list[str]]:
    """The rows of the per-worker table: lines that start with a worker index and its pid."""
    return [line.split() for line in text.splitlines() if re.match(r"^\s*\d+\s+\d+\s", line)]


def test_a_served_count_nobody_could_count_shows_a_dash_not_zero(tmp_path: Path) -> None:
    """Replies that name no worker and no kernel counts (no bpftrace here): the file holds zeros, the table
    says it does not know."""
    doc = json.loads((GOLDEN / "latency.json").read_text())
    doc["served"] = [0] * len(doc["served"])
    doc["evidence"]["accept_counts"] = {"available": False, "why": "bpftrace not found", "counts": {}}
    path = tmp_path / "uncounted.json"
    path.write_text(json.dumps(doc))
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0, shown.stderr
    rows = worker_rows(shown.stdout)
    assert rows and all(row[2:4] == ["-", "-"] for row in rows), shown.stdout  # served, share
    assert "served per worker: not known" in shown.stdout
    counted = run_cli(["show", str(GOLDEN / "latency.json")])  # the same table where the counts are known
    assert [row[2] for row in worker_rows(counted.stdout)] == [
        str(n) for n in json.loads((GOLDEN / "latency.json").read_text())["served"]
    ]


@pytest.mark.parametrize("cpus", [False, True], ids=["no-preempt-column", "preempt-column"])
def test_the_legend_explains_only_the_columns_shown(cpus: bool) -> None:
    result = run_cli(["run", "-w", "2", "-n", "4", *(["--cpus", "0-1"] if cpus else [])])
    assert result.exit_code == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if re.match(r"^\s*worker\s+pid\s+served", line))
    assert ("preempt" in header.split()) == cpus
    assert ("preempt:" in result.stdout) == cpus, result.stdout
    assert "wakeups: times the wait call returned" in result.stdout


@pytest.mark.parametrize("name", ["run", "serve", "latency", "sweep", "ramp"])
def test_the_mode_option_fits_80_columns_in_help(name: str) -> None:
    """--mode's choices are every server's modes (29): listed in its help line, that line ran to 289 columns."""
    result = run_cli([name, "--help"], columns=80)
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if "--mode " in line)
    assert len(line) <= 80 and "--mode MODE" in line, line
    bad = run_cli([name, "--mode", "nope"])
    assert bad.exit_code == 2 and "blocking" in bad.stderr  # a wrong name still lists the choices


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_commands_help_fits_80_columns(name: str) -> None:
    """Options, help texts and examples alike: a long example continues on the next line with `\\`."""
    result = run_cli([name, "--help"], columns=80)
    assert result.exit_code == 0, result.output
    wide = [line for line in result.stdout.splitlines() if len(line) > 80]
    assert not wide, wide


def test_a_long_example_is_continued_shell_style_and_keeps_its_comment() -> None:
    from accept_order.cli.options import examples

    text = examples("accept-order latency --modes a,b --rate 400 --duration 10s -c 200 --work 2ms --pin  # open loop")
    lines = text.splitlines()[2:]
    assert lines[0] == "  # open loop"
    assert all(len(line) <= 78 for line in lines) and lines[1].endswith(" \\")
    assert " ".join(part.strip().rstrip("\\").strip() for part in lines[1:]) == (
        "accept-order latency --modes a,b --rate 400 --duration 10s -c 200 --work 2ms --pin"
    )
