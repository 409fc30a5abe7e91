"""--attach given to a command that drives a load and has none says which commands drive a running server, in one
line: 'ramp --attach <gunicorn's pid> --port 8000' (the first-hour persona, wanting their own gunicorn's breaking
point) read "No such option '--attach'. Did you mean '--accept-batch'?", which says nothing of where --attach is.
Commands with --target are told it too, with what its replies must read; commands that drive nothing keep click's
line. The commands that attach are read from their options: a command given --attach later is named without an edit.
"""

from __future__ import annotations

import pytest
from cli_runs import ran_in_process

ELSEWHERE = ("ramp", "sweep", "burst")  # they drive a server elsewhere by --target
HERE_ONLY = ("compare", "herd", "reload", "atlas")


def error_of(*args: str) -> tuple[int, str]:
    """The status and stderr of `accept-order ARGS`, run in this process: option parsing is all it does."""
    done = ran_in_process(*args)
    return done.returncode, done.stderr


RUNNING = "a server already running is driven by run and latency --attach, and read by inspect and observe\n"


@pytest.mark.parametrize("command", ELSEWHERE)
def test_a_load_with_target_says_where_attach_is_and_what_target_needs(command: str) -> None:
    status, err = error_of(command, "--attach", "1", "--port", "8000")
    assert status == 2
    assert err == (
        f"accept-order: error: accept-order {command} has no --attach: it starts the server it measures, or drives "
        f"one elsewhere by --target, whose replies must name their worker ('worker PID'); {RUNNING}"
    ), err


@pytest.mark.parametrize("command", HERE_ONLY)
def test_a_load_without_target_says_where_attach_is(command: str) -> None:
    status, err = error_of(command, "--attach", "1")
    assert status == 2
    assert (
        err
        == f"accept-order: error: accept-order {command} has no --attach: it starts the server it measures; {RUNNING}"
    )


def test_a_command_that_drives_nothing_keeps_clicks_line() -> None:
    status, err = error_of("show", "--attach", "1", "x.json")
    assert status == 2 and "No such option '--attach'" in err and "\n" == err[-1] and err.count("\n") == 1, err
