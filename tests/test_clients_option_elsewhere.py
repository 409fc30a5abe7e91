"""A client-host option given to a command that drives its load from this host only says so, in one line.

'run --client-hosts c1 --target ...' (the client-host persona's first try at 'run' from several hosts) read
"No such option '--client-hosts'. Did you mean '--host'?": --host is the address the workers listen on, the
opposite of a host to drive them from. run, compare, herd, reload and atlas drive from this host alone; latency,
sweep, ramp and burst take --client-hosts (burst's --clients is its client counts). The tool tells them apart by
their options (--driver without --client-hosts), not by a list of names.
"""

from __future__ import annotations

import pytest
from cli_runs import ran_in_process

from accept_order.cli.app import HOST_OPTIONS

LOADS_HERE = ("run", "compare", "herd", "reload", "atlas")


def error_of(*args: str) -> tuple[int, str]:
    """The status and stderr of `accept-order ARGS`, run in this process: option parsing is all it does."""
    done = ran_in_process(*args)
    return done.returncode, done.stderr


@pytest.mark.parametrize("command", LOADS_HERE)
def test_a_command_that_drives_from_here_says_where_client_hosts_are_taken(command: str) -> None:
    status, err = error_of(command, "--client-hosts", "c1", "--target", "192.0.2.1:80")
    assert status == 2
    assert err == (
        f"accept-order: error: accept-order {command} has no --client-hosts: it drives its load from this host only; "
        "latency, sweep, ramp and burst drive it from client hosts with --client-hosts\n"
    ), err


def test_every_host_option_is_said_so_and_other_commands_and_options_keep_clicks_line() -> None:
    for option in HOST_OPTIONS:
        status, err = error_of("run", option, "x")
        assert status == 2 and err.startswith(f"accept-order: error: accept-order run has no {option}: "), err
    status, err = error_of("run", "--hots", "x")
    assert status == 2 and "No such option '--hots'" in err, err
    status, err = error_of("show", "--clients", "c1", "x.json")  # show drives nothing: click's line stands
    assert status == 2 and "No such option '--clients'" in err, err
