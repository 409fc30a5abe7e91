"""A Ctrl-C in the first second of 'latency --clients c1,c2 --target server:8080' (the command still starting)
ended with 'accept-order: error: interrupted; all workers stopped', of a server the tool never started (a
production one, for a platform engineer). From the moment --target or --attach is read, the stop's line says
the server was not touched."""

from __future__ import annotations

import pytest

from accept_order.cli.app import STOPPED_META, main

TARGET, ATTACH = ["--target", "192.0.2.1:8080"], ["--attach", "12345", "-p", "8080"]


@pytest.mark.parametrize(
    ("command", "args"),
    [*((c, TARGET) for c in ("latency", "burst", "ramp", "sweep", "run")), *((c, ATTACH) for c in ("latency", "run"))],
)
def test_a_server_named_by_target_or_attach_is_never_said_stopped(command: str, args: list[str]) -> None:
    group = main.make_context("accept-order", [command, "--help"], resilient_parsing=True)
    sub = group.command.get_command(group, command)  # type: ignore[attr-defined]
    assert args[0] in {o for p in sub.params for o in p.opts}, f"{command} has no {args[0]}"
    ctx = sub.make_context(command, list(args), parent=group)
    assert ctx.meta[STOPPED_META] == "the server was not touched"


def test_a_server_the_tool_starts_keeps_the_workers_line() -> None:
    group = main.make_context("accept-order", ["latency", "--help"], resilient_parsing=True)
    sub = group.command.get_command(group, "latency")  # type: ignore[attr-defined]
    assert STOPPED_META not in sub.make_context("latency", ["-w", "2"], parent=group).meta
