"""'latency -m blocking --pool -c 8 -w 2' spent 20.05 s in pool-fill timeouts (2 of 8 opened) before it
reported, though the plan knew it: a built-in mode whose worker serves a kept connection to its end before it
accepts another (ModeInfo.multiplexes False: blocking, epoll-shared) holds one connection per worker, and a
pool's connections send nothing more until every one is answered. A pool beyond the workers is refused in one
line, exit 2, before anything starts. Without a pool, connections kept for the whole load
(--requests-per-connection 0) end with it and free their workers, so those runs run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli
from nothing_starts import nothing_starts  # noqa: F401 - the fixture

from accept_order.core.spec import DEFAULT_KIND, ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.kept_report import kept_lines
from accept_order.experiments.latency.result import LatencyResult
from accept_order.servers.held_whole_run import refuse_unanswered
from accept_order.servers.registry import server_kind

NEVER = "would never be answered"


LOAD = ["-n", "100", "-w", "2"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["latency", "-m", "blocking", "--pool", "--requests-per-connection", "0", "-c", "8", *LOAD],
         "--pool --requests-per-connection 0 -c 8: each of mode blocking's 2 workers serves a kept connection to its "
         "end before it accepts another, so 6 of the 8 connections would never be answered: give -c 2 or fewer, -w 8, "
         "or a mode that waits on its kept connections (epoll, epoll-herd)"),
        (["latency", "-m", "blocking", "--pool", "--requests-per-connection", "10", "-c", "3", *LOAD],
         "--pool -c 3: each of mode blocking's 2 workers"),
        (["latency", "-m", "epoll-shared", "--pool", "--requests-per-connection", "0", "-c", "8", *LOAD],
         "--pool --requests-per-connection 0 -c 8: each of mode epoll-shared's 2 workers"),
        # several modes: refused before the first (epoll, which could run) starts; --repeat too
        (["latency", "--modes", "epoll,blocking", "--pool", "--requests-per-connection", "0", "-c", "8", *LOAD],
         NEVER),
        (["latency", "--modes", "epoll,blocking", "--repeat", "2", "--pool", "--requests-per-connection", "0",
          "-c", "8", *LOAD], NEVER),
        (["sweep", "--accept-batch", "1,0", "-m", "blocking", "--pool", "--requests-per-connection", "5", "-c", "8",
          *LOAD], "--pool -c 8: each of mode blocking's 2 workers"),
        (["ramp", "-m", "blocking", "--pool", "--requests-per-connection", "0", "-w", "2", "--concurrency-steps",
          "1,8"], "--concurrency-steps 8: each of mode blocking's 2 workers"),
    ],
)  # fmt: skip
def test_whole_run_connections_beyond_one_per_worker_are_refused(
    nothing_starts: list[Any],  # noqa: F811 - the fixture imported above
    args: list[str],
    said: str,
) -> None:
    assert_one_error_line(run_cli(args), 2, said)
    assert nothing_starts == []


def test_only_what_every_one_per_worker_builtin_mode_cannot_answer_is_refused() -> None:
    """Each built-in mode: refused exactly where it serves one connection at a time and the load's pool is
    to hold more than its workers; a load without a pool (its connections end, after K or with the load), a
    pool within the workers, or a mode that waits on its kept connections, runs."""
    modes = server_kind(DEFAULT_KIND).modes()
    one_each = {name for name, info in modes.items() if not info.multiplexes}
    assert one_each == {"blocking", "epoll-shared"}  # a new such mode is refused by the same rule
    whole = ConcurrentLoad(concurrency=8, requests_per_connection=0, pool=True)
    for name in modes:
        spec = ServerSpec(mode=name, workers=2)
        if name in one_each:
            with pytest.raises(Exception, match=NEVER):
                refuse_unanswered([spec], whole)
            with pytest.raises(Exception, match=NEVER):
                refuse_unanswered([spec], ConcurrentLoad(concurrency=3, requests_per_connection=4, pool=True))
        else:
            refuse_unanswered([spec], whole)
        refuse_unanswered([spec], ConcurrentLoad(concurrency=8, requests_per_connection=5))  # closed after 5
        refuse_unanswered([spec], ConcurrentLoad(concurrency=8, requests_per_connection=0))  # end with the load
        refuse_unanswered([spec], ConcurrentLoad(concurrency=50, requests_per_connection=0, rate=200.0))  # open
        refuse_unanswered([spec], ConcurrentLoad(concurrency=2, requests_per_connection=0, pool=True))  # 1/worker
        refuse_unanswered([ServerSpec(mode=name, workers=8)], whole)
    refuse_unanswered([ServerSpec(kind="apache", mode="prefork", workers=2)], whole)  # its own rules end them


@pytest.mark.parametrize(
    "args",
    [
        # a closed loop by count: the held connections end with the last requests, and the workers then
        # take the queued ones (25f9759 said 2 of these 3 connections 'would never be answered')
        ["latency", "-m", "epoll-shared", "--requests-per-connection", "0", "-c", "3", "-w", "2", "-n", "60"],
        # an open loop: connections open as requests find the open ones busy, at most -c (50)
        ["latency", "-m", "blocking", "--requests-per-connection", "0", "--rate", "200", "-c", "50", "-w", "2",
         "-n", "100"],
    ],
)  # fmt: skip
def test_connections_kept_without_a_pool_end_with_the_load_and_run(tmp_path: Path, args: list[str]) -> None:
    """Every request answered, by the replies and by the workers' own counts (the server's witness), and every
    connection opened was accepted by a worker."""
    out = tmp_path / "run.json"
    result = run_cli([*args, "--timeout", "30s", "--json", str(out)])
    assert result.exit_code == 0, result.output
    run = LatencyResult.from_dict(json.loads(out.read_text()))
    asked = int(args[args.index("-n") + 1])
    assert run.histogram.count == asked and not run.errors and sum(run.served) == asked  # by the replies
    assert sum(c.requests or 0 for c in run.counters) == asked  # by the workers' own counts
    assert sum(c.accepts or 0 for c in run.counters) == sum(run.connections) >= 2  # every one opened, accepted
    said = " ".join(str(line) for line in kept_lines(run))  # the report says so, not 'never answered'
    assert "never answered" not in said and "held ones waited in the accept queue" in said
