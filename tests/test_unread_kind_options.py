"""A setting only some servers or modes read (--policy: the built-in fd-pass mode's; --mutex-delay: the accept-mutex
mode's, built-in and nginx's; --maxconn: HAProxy's) is refused where nothing asked reads it, in one line naming who
reads it and who was asked, before anything starts: `run --server nginx --policy least-busy` ran nginx as always and
said nothing, and `run --server nginx --maxconn 5` spoke of the built-in workers. Commands that run several modes or
servers with one set of settings apply it to those that read it (the others run with its default, and their results
say so) and refuse it only when none of them reads it.

--accept-batch on a mode whose accepts follow no cap (ModeInfo.batches False: the built-in blocking, fd-pass and
io-uring) follows 6f42fc5's rule for the kind options: `run -m blocking --accept-batch 4` ran without a word, where
every launched server refuses it, and `latency --modes epoll,fd-pass --accept-batch 4` saved fd-pass's run with a cap
its acceptor never read. Now a cap no mode asked reads is refused in one line before anything starts (0 and 1, no
cap, are taken, as the launched kinds take them, so a sweep of such a mode over them runs and says so); several modes
keep it where it is read and have their kind's default elsewhere, whichever server is named first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli
from nothing_starts import nothing_starts  # noqa: F401 - the fixture

from accept_order.core.errors import PlanError
from accept_order.core.spec import ServerSpec
from accept_order.experiments.reload.run import plans
from accept_order.servers.registry import checked, variants

BATCH_HINT = "--accept-batch caps what the built-in workers hold"
POLICY = "--policy is the built-in fd-pass mode's"
DELAY = "--mutex-delay is the accept-mutex mode's (the built-in workers' and nginx's)"
CAPS = "--accept-batch caps the connections one wakeup accepts"
NOTHING_TO_SWEEP = "nothing to sweep: sweep runs one cap on accepts per wakeup after another, and "


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", "--server", "nginx", "--policy", "least-busy"], f"{POLICY}; nginx does not read it"),
        (["run", "--mode", "epoll", "--policy", "least-busy"], f"{POLICY}; the built-in epoll mode does not read it"),
        (["run", "--mode", "epoll", "--mutex-delay", "5ms"], f"{DELAY}; the built-in epoll mode does not read it"),
        (
            ["run", "--server", "nginx", "--mode", "reuseport", "--mutex-delay", "5ms"],
            f"{DELAY}; nginx's reuseport mode does not read it",
        ),
        (["run", "--server", "nginx", "--maxconn", "5"], "--maxconn is HAProxy's; nginx does not read it"),
        (
            ["run", "--maxconn", "5"],
            f"--maxconn is HAProxy's; the built-in workers do not read it; {BATCH_HINT}: at most that many "
            "connections each (--accept-batch 1: as many as there are workers)",
        ),
        (["sweep", "--mode", "reuseport", "--policy", "least-busy"], f"{POLICY}; the built-in reuseport mode does"),
        # several modes or servers, none of which reads it
        (
            ["compare", "--modes", "epoll,reuseport", "--policy", "least-busy"],
            f"{POLICY}; the built-in epoll and reuseport modes do not read it",
        ),
        (["herd", "--modes", "epoll,poll", "--mutex-delay", "5ms"], f"{DELAY}; the built-in epoll and poll modes do"),
        (
            ["latency", "--server", "builtin,nginx", "--maxconn", "5"],
            f"--maxconn is HAProxy's; the built-in workers and nginx do not read it; {BATCH_HINT}",
        ),
        (
            ["latency", "--server", "builtin,nginx", "--modes", "accept-mutex,epoll", "--policy", "least-busy"],
            f"{POLICY}; the built-in accept-mutex and epoll modes and nginx do not read it",
        ),
        (["burst", "--modes", "epoll,reuseport", "--policy", "least-busy"], f"{POLICY}; the built-in epoll and"),
        (["ramp", "--modes", "epoll,reuseport", "--mutex-delay", "5ms"], f"{DELAY}; the built-in epoll and reuse"),
        (["reload", "--modes", "epoll,reuseport", "--policy", "least-busy"], f"{POLICY}; the built-in epoll and"),
    ],
)
def test_an_option_nothing_asked_reads_is_refused_in_one_line(
    nothing_starts: list[Any],  # noqa: F811 - the fixture imported above
    args: list[str],
    line: str,
) -> None:
    result = run_cli(args)
    said = assert_one_error_line(result, 2, line)
    assert result.stdout == "" and nothing_starts == []
    if line.endswith("read it"):  # the whole line: the built-in kind's hint only where the built-in workers were asked
        assert said == f"accept-order: error: {line}"


def test_the_python_api_refuses_it_too() -> None:
    with pytest.raises(PlanError, match="^--policy is the built-in fd-pass mode's; nginx does not read it$"):
        checked(ServerSpec(kind="nginx", mode="epoll", policy="least-busy"))
    assert checked(ServerSpec(mode="fd-pass", policy="least-busy")).policy == "least-busy"
    assert checked(ServerSpec(kind="nginx", mode="accept-mutex", mutex_delay_ms=5)).mutex_delay_ms == 5


def test_several_modes_each_keep_what_they_read() -> None:
    """variants (compare, herd, latency/burst/ramp --modes): the option where it is read, its default elsewhere."""
    base = ServerSpec(policy="least-busy", mutex_delay_ms=40)
    specs, _ = variants(base, ["epoll", "fd-pass", "accept-mutex"])
    assert {s.mode: (s.policy, s.mutex_delay_ms) for s in specs} == {
        "epoll": ("round-robin", 500.0),
        "fd-pass": ("least-busy", 500.0),
        "accept-mutex": ("round-robin", 40.0),
    }
    specs, _ = variants(ServerSpec(mutex_delay_ms=40), ["accept-mutex", "epoll"], ["builtin", "nginx"])
    assert {(s.kind, s.mode): s.mutex_delay_ms for s in specs} == {
        ("builtin", "accept-mutex"): 40.0,
        ("builtin", "epoll"): 500.0,
        ("nginx", "accept-mutex"): 40.0,
        ("nginx", "epoll"): 500.0,
    }
    from accept_order.servers.launched.nginx_config import NGINX_MODES, render_config

    nginx = next(s for s in specs if s.kind == "nginx" and s.mode == "accept-mutex")
    config = render_config(
        "/nonexistent",
        NGINX_MODES[nginx.mode],
        host=nginx.host,
        port=1,
        workers=nginx.workers,
        backlog=nginx.backlog,
        multi_accept=False,
        cpus=(),
        work_us=0,
        work_iters=0,
        mutex_delay_ms=nginx.mutex_delay_ms,
    )
    assert "accept_mutex_delay 40ms;" in config and "accept_mutex on;" in config


def test_several_servers_keep_maxconn_for_haproxy_alone() -> None:
    specs, _ = variants(ServerSpec(maxconn=5), ["default"], ["builtin", "haproxy"])
    assert {s.kind: s.maxconn for s in specs} == {"builtin": 0, "haproxy": 5}


def test_reloads_modes_each_keep_what_they_read() -> None:
    specs = {
        spec.mode: spec.policy
        for spec, _ in plans(ServerSpec(policy="least-busy"), ["epoll", "fd-pass"], ["leave"], [0])
    }
    assert specs == {"epoll": "round-robin", "fd-pass": "least-busy"}
    with pytest.raises(PlanError, match="the built-in epoll and reuseport modes do not read it"):
        plans(ServerSpec(policy="least-busy"), ["epoll", "reuseport"], ["leave"], [0])


def test_compare_runs_every_mode_and_the_acceptor_uses_the_policy(tmp_path: Path) -> None:
    """A real compare: each mode ran, and fd-pass's acceptor, which reports the policy it dispatched by, used the one
    asked for; the epoll run's result says the default it ran with."""
    out = tmp_path / "compare.json"
    result = run_cli(["compare", "--modes", "epoll,fd-pass", "--policy", "least-busy", "-n", "6", "--json", str(out)])
    assert result.exit_code == 0, result.output
    runs = {run["server"]["mode"]: run for run in json.loads(out.read_text())["runs"]}
    assert set(runs) == {"epoll", "fd-pass"}
    assert runs["fd-pass"]["evidence"]["acceptor"]["policy"] == "least-busy"
    assert runs["fd-pass"]["server"]["policy"] == "least-busy" and runs["epoll"]["server"]["policy"] == "round-robin"
    assert all(len(run["records"]) == 6 for run in runs.values())  # every connection served, in each mode
    assert sum(runs["fd-pass"]["evidence"]["acceptor"]["passed"]) == 6


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", "-m", "blocking", "--accept-batch", "4"], f"{CAPS}; the built-in blocking mode does not read it"),
        (["latency", "-m", "io-uring", "--accept-batch", "4"], f"{CAPS}; the built-in io-uring mode does not read it"),
        (["serve", "-m", "fd-pass", "--accept-batch", "2"], f"{CAPS}; the built-in fd-pass mode does not read it"),
        # sweep's own caps (1,4,32,0): refused up front, as 0e15abd refuses uvicorn's
        # said as sweep's: none was typed
        (["sweep", "-m", "fd-pass"], f"{NOTHING_TO_SWEEP}{CAPS}; the built-in fd-pass mode does not read it"),
        (
            ["compare", "--modes", "blocking,fd-pass", "--accept-batch", "4"],
            f"{CAPS}; the built-in blocking and fd-pass modes do not read it",
        ),
        (
            ["reload", "--modes", "blocking,io-uring", "--accept-batch", "4"],
            f"{CAPS}; the built-in blocking and io-uring modes do not read it",
        ),
    ],
)
def test_a_cap_no_mode_asked_reads_is_refused_in_one_line(
    nothing_starts: list[Any],  # noqa: F811 - the fixture imported above
    args: list[str],
    line: str,
) -> None:
    result = run_cli(args)
    said = assert_one_error_line(result, 2, line)
    assert said == f"accept-order: error: {line} (0 or 1: no cap)"
    assert result.stdout == "" and nothing_starts == []


def test_no_cap_is_taken_as_the_launched_kinds_take_it() -> None:
    assert checked(ServerSpec(mode="io-uring", accept_batch=1)).accept_batch == 1
    assert checked(ServerSpec(mode="epoll", accept_batch=4)).accept_batch == 4
    with pytest.raises(PlanError, match=f"^{CAPS}; the built-in blocking mode does not read it"):
        checked(ServerSpec(mode="blocking", accept_batch=4))  # the Python API's spec, as the command line's


def test_several_modes_keep_the_cap_where_it_is_read() -> None:
    specs, _ = variants(ServerSpec(accept_batch=4), ["epoll", "fd-pass", "blocking"])
    assert {s.mode: s.accept_batch for s in specs} == {"epoll": 4, "fd-pass": 0, "blocking": 0}
    reloads = {
        spec.mode: spec.accept_batch
        for spec, _ in plans(ServerSpec(accept_batch=4), ["epoll", "io-uring"], ["leave"], [0])
    }
    assert reloads == {"epoll": 4, "io-uring": 0}


def test_the_first_server_named_does_not_refuse_a_cap_another_reads() -> None:
    """`latency --server gunicorn,builtin --accept-batch 4`: gunicorn's own check refused the shared settings, where
    `--server builtin,gunicorn` ran; both now run the cap on the built-in workers alone."""
    from accept_order.cli.specs import first_available, server_spec

    for servers in (["gunicorn", "builtin"], ["builtin", "gunicorn"]):
        options: dict[str, Any] = {"server": servers, "accept_batch": 4, "workers": 2}
        base = server_spec(options, mode=first_available(["default"], servers), varied=True)
        specs, _ = variants(base, ["default"], servers)
        assert {(s.kind, s.mode): s.accept_batch for s in specs} == {("gunicorn", "select"): 0, ("builtin", "epoll"): 4}


# Each command family with such checks, the option typed at its default (round-robin, 500ms, 0): given, so judged as
# any other value is. Before, `run --server nginx --policy round-robin` ran nginx without a word while `--policy
# least-busy` was refused: the checks saw only values other than the default.
@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", "--server", "nginx", "--policy", "round-robin"], f"{POLICY}; nginx does not read it"),
        (["run", "--mode", "epoll", "--mutex-delay", "500ms"], f"{DELAY}; the built-in epoll mode does not read it"),
        (["run", "--server", "nginx", "--maxconn", "0"], "--maxconn is HAProxy's; nginx does not read it"),
        (["serve", "--mode", "epoll", "--policy", "round-robin"], f"{POLICY}; the built-in epoll mode does not"),
        (["sweep", "--mode", "reuseport", "--policy", "round-robin"], f"{POLICY}; the built-in reuseport mode does"),
        (["latency", "--mode", "epoll", "--maxconn", "0"], "--maxconn is HAProxy's; the built-in workers do not"),
        (["ramp", "--mode", "epoll", "--policy", "round-robin"], f"{POLICY}; the built-in epoll mode does not"),
        (["burst", "--policy", "round-robin"], f"{POLICY}; the built-in epoll mode does not read it"),
        (["compare", "--modes", "epoll,reuseport", "--policy", "round-robin"], f"{POLICY}; the built-in epoll and"),
        (["herd", "--modes", "epoll,poll", "--mutex-delay", "500ms"], f"{DELAY}; the built-in epoll and poll modes"),
        (
            ["latency", "--server", "builtin,nginx", "--maxconn", "0"],
            "--maxconn is HAProxy's; the built-in workers and",
        ),
        (["latency", "--modes", "epoll,poll", "--repeat", "2", "--policy", "round-robin"], f"{POLICY}; the built-in"),
        (["burst", "--modes", "epoll,reuseport", "--policy", "round-robin"], f"{POLICY}; the built-in epoll and"),
        (["ramp", "--modes", "epoll,reuseport", "--mutex-delay", "500ms"], f"{DELAY}; the built-in epoll and reuse"),
        (["reload", "--modes", "epoll,reuseport", "--policy", "round-robin"], f"{POLICY}; the built-in epoll and"),
    ],
)
def test_an_option_typed_at_its_default_is_judged_as_any_value(
    nothing_starts: list[Any],  # noqa: F811 - the fixture imported above
    args: list[str],
    line: str,
) -> None:
    result = run_cli(args)
    assert_one_error_line(result, 2, line)
    assert result.stdout == "" and nothing_starts == []


def test_a_default_typed_where_it_is_read_is_taken_and_one_left_alone_is_not_judged() -> None:
    """The Python API's side of it: the fields given are judged whatever their value, the others only when set."""
    assert checked(ServerSpec(mode="fd-pass"), given={"policy"}).policy == "round-robin"
    assert checked(ServerSpec(kind="nginx", mode="epoll")).policy == "round-robin"  # its default, not given
    with pytest.raises(PlanError, match=f"^{POLICY}; nginx does not read it$"):
        checked(ServerSpec(kind="nginx", mode="epoll"), given={"policy"})
    specs, _ = variants(ServerSpec(), ["epoll", "fd-pass"], given={"policy"})
    assert {s.mode: s.policy for s in specs} == {"epoll": "round-robin", "fd-pass": "round-robin"}
    with pytest.raises(PlanError, match="the built-in epoll and reuseport modes do not read it"):
        plans(ServerSpec(), ["epoll", "reuseport"], ["leave"], [0], given={"policy"})


def test_an_option_given_in_the_environment_counts_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """cli/specs.typed: an option's value from its environment variable is given by the user (judged), as one typed;
    its default is not."""
    import click
    from click.testing import CliRunner

    from accept_order.cli.specs import typed

    @click.command()
    @click.option("--policy", envvar="ACCEPT_ORDER_TEST_POLICY", default="round-robin")
    def command(policy: str) -> None:
        click.echo(f"{policy} {typed('policy')}")

    runner = CliRunner()
    assert runner.invoke(command, [], env={"ACCEPT_ORDER_TEST_POLICY": None}).output == "round-robin False\n"
    assert runner.invoke(command, ["--policy", "round-robin"]).output == "round-robin True\n"
    assert runner.invoke(command, [], env={"ACCEPT_ORDER_TEST_POLICY": "round-robin"}).output == "round-robin True\n"
