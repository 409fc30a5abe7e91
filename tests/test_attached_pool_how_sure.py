"""A pool's verdicts at a server this tool did not start do not send the reader to options that refuse it.

'latency --attach PID --port 18500 --protocol http --pool -c 8 --requests-per-connection 0' at gunicorn 27 (gthread,
2 workers; its access log's pid per request the witness, 3,839 and 8,938 as the report's rows) ended 'How sure: one
run: its split is one draw of its 8 connections ...; --repeat says in how many runs it holds, --modes puts other
accept modes beside it' and 'one run: --repeat says whether another run's first requests reach its tail', where both
options refuse --attach and --target ('--repeat starts the server for every run: not with --attach or --target', exit
2). The same command run again split the pool 4/4 where it had read 1/7 (log 6,662 and 5,936): it is what says whether
a split holds there, and the verdicts now say so. A server the tool starts reads as before."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import run_cli
from test_merged_pools_how_sure import _later_tail
from test_small_sentences_held_nothing import pool_run

from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.first_requests import fill_verdict
from accept_order.experiments.latency.kept_tail import kept_tail_verdict
from accept_order.experiments.latency.result import LatencyResult

ATTACHED = ServerSpec(kind="attached", mode="attached", workers=2, port=18500, attach=(4242,), protocol="http")
REMOTE = ServerSpec(kind="remote", mode="remote", workers=2, host="192.0.2.7", port=18500, protocol="http")
AGAIN = "another run of this command says whether"


def _elsewhere(result: LatencyResult, server: ServerSpec) -> LatencyResult:
    return dataclasses.replace(result, server=server)


@pytest.mark.parametrize("server", [ATTACHED, REMOTE], ids=["attached", "target"])
def test_a_pool_verdict_elsewhere_names_the_command_run_again(server: ServerSpec) -> None:
    started = pool_run("epoll", (7, 1), 9000)
    said = kept_tail_verdict(started) or ""
    assert said.endswith("; --repeat says in how many runs it holds, --modes puts other accept modes beside it"), said
    there = kept_tail_verdict(_elsewhere(started, server)) or ""
    assert there.startswith("Verdict: worker 0 held 7 of the 8 connections"), there
    assert "--repeat says" not in there and "--modes puts" not in there, there
    assert there.endswith(
        f"; {AGAIN} it holds (--repeat and --modes start the server they measure: not with --attach or --target)"
    ), there


@pytest.mark.parametrize("server", [ATTACHED, REMOTE], ids=["attached", "target"])
def test_the_steady_states_line_elsewhere_names_the_command_run_again(server: ServerSpec) -> None:
    started = fill_verdict(_later_tail()) or ""
    assert started.endswith("one run: --repeat says whether another run's first requests reach its tail."), started
    there = fill_verdict(_elsewhere(_later_tail(), server)) or ""
    assert there.startswith("The tail is the steady state, not the fill"), there
    assert there.endswith(
        f"one run: {AGAIN} its first requests reach its tail (--repeat starts the server it measures: not with "
        "--attach or --target)."
    ), there


def test_the_options_the_verdicts_no_longer_name_refuse_a_server_not_started() -> None:
    """What the sentences above rest on: --repeat and --modes refuse --attach and --target before anything runs."""
    pool = ["--protocol", "http", "--pool", "-c", "2", "--requests-per-connection", "0"]
    for where in (["--attach", "1", "--port", "80"], ["--target", "127.0.0.1:80"]):
        for option in (["--repeat", "2"], ["--modes", "epoll,reuseport"]):
            args = ["latency", *where, *(pool if where[0] == "--attach" else pool[2:]), *option]
            result = run_cli(args)
            assert result.exit_code == 2 and "not with --" in result.stderr, (args, result.output)
