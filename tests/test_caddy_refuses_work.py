"""--work and --work-iters are refused for Caddy, whose Caddyfile answers with `respond` and burns nothing.

'latency --server nginx,...,caddy -w 2 --pool -c 8 --requests-per-connection 0 --work 1ms --duration 1s' headed
Caddy's run 'work 1 ms busy loop' beside the others, and its row served 6,924 requests against 448-991 for the
servers that burned the work: the workers' CPU per request (the kernel's, /proc) was 0.106 ms for Caddy, 0.87 to
1.33 ms for the nine others. A comparison read Caddy ten times as fast for a work it never did. Caddy 2.6 has no
handler that could burn it, so the option is refused in one line (exit 2) before anything starts, as
--accept-batch is.

The witness that Caddy burns nothing: Debian's Caddy launched as latency launches it, without --work, one request
at a time: the CPU the kernel counted for its process over the requests is below a millisecond each, the least a
--work 1ms request would add. Its own cost a request, a new connection each, is ~0.3 ms here (0.34 at 200 requests,
0.30 at 1,000: not its start) and rises with the machine's load (0.59 in a fresh-clone CI at load 2-3, the Go
runtime's threads spinning for work), so the bound is the work's, not a fraction of it."""

from __future__ import annotations

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.servers.launched.caddy import caddy_missing

REQUESTS = 200


@pytest.mark.parametrize(
    "args",
    [
        ["latency", "--server", "caddy", "--work", "1ms", "-n", "10"],
        ["latency", "--server", "nginx,caddy", "--work-iters", "1000", "-n", "10"],
        ["run", "--server", "caddy", "--work", "200us", "-n", "3"],
    ],
)
def test_work_for_caddy_is_refused_before_anything_starts(args: list[str]) -> None:
    result = run_cli(args)
    assert_one_error_line(result, 2, "--work and --work-iters do not apply to caddy")
    assert result.stdout == "", result.stdout


@pytest.mark.skipif(caddy_missing() is not None, reason=f"Caddy launched runs: {caddy_missing()}")
def test_caddy_without_work_burns_less_than_a_millisecond_a_request() -> None:
    result = session.run_sequential(ServerSpec(kind="caddy", mode="netpoller"), SequentialLoad(connections=REQUESTS))
    assert result.failed == 0 and result.served == REQUESTS
    (counters,) = result.counters
    assert counters.cpu_s is not None and counters.cpu_s / REQUESTS < 0.001, counters.cpu_s
