"""Caddy 2.6 and h2o 2.2 have no setting for their listen() backlog: Go's listen() asks for net.core.somaxconn, h2o's
for 65535 (H2O_SOMAXCONN), which the kernel caps there. 'run --server caddy --backlog 64' (and h2o alike) ran, saved
server.backlog 64, and the same file's listeners, read by netlink, had 4096 (this machine's somaxconn). A --backlog
other than the default is now refused for them before anything starts (core/kinds.py no_backlog); every other
launched kind gave listen() the --backlog asked (200 asked, 200 read by netlink, each kind once by hand)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli
from nothing_starts import nothing_starts  # noqa: F401  (a fixture: registered by its import)

from accept_order.core.spec import DEFAULT_BACKLOG, ServerSpec
from accept_order.experiments.own_settings import servers_said
from accept_order.servers.registry import server_kind

SOMAXCONN = Path("/proc/sys/net/core/somaxconn")


@pytest.mark.parametrize(("kind", "why"), [("caddy", "Go's listen()"), ("h2o", "65535")])
def test_a_backlog_the_server_cannot_be_given_is_refused_before_it_starts(
    nothing_starts: list[Any],  # noqa: F811 - the fixture imported above
    kind: str,
    why: str,
) -> None:
    for command in (["run"], ["latency", "-n", "10"]):
        result = run_cli([*command, "--server", kind, "--backlog", "64"])
        assert_one_error_line(result, 2, f"--backlog does not apply to {kind}", why)
    assert nothing_starts == []


@pytest.mark.parametrize("kind", ["caddy", "h2o"])
def test_the_default_backlog_passes_their_check(kind: str) -> None:
    spec = ServerSpec(kind=kind, mode=server_kind(kind).default_mode(), workers=1)
    assert spec.backlog == DEFAULT_BACKLOG
    server_kind(kind).check(spec)  # no PlanError: the runs without --backlog go on as before


@pytest.mark.skipif(shutil.which("caddy") is None, reason="Debian's caddy is not installed")
def test_caddys_listener_has_the_kernels_limit_not_the_tools_default(tmp_path: Path) -> None:
    """What no_backlog says, by the kernel's own word: the listener's backlog (inet_diag, the evidence's netlink rows)
    is net.core.somaxconn (up to 65535), not the 511 its file holds as the tool's default."""
    path = tmp_path / "caddy.json"
    result = run_cli(["run", "--server", "caddy", "-n", "2", "--json", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(path.read_text())
    rows = [row for row in doc["evidence"]["listeners"]["start"] if row["source"] == "netlink"]
    assert rows and {row["backlog"] for row in rows} == {min(int(SOMAXCONN.read_text()), 65535)}
    assert doc["server"]["backlog"] == DEFAULT_BACKLOG


def test_a_report_says_no_backlog_of_a_kind_that_takes_none() -> None:
    """Reports say a server's backlog from known_backlogs: Caddy's and h2o's are not the spec's (its default)."""
    assert ServerSpec(kind="caddy", mode="netpoller", workers=1).known_backlogs == ()
    assert ServerSpec(kind="h2o", mode="threads", workers=2).known_backlogs == ()
    assert ServerSpec(kind="nginx", mode="epoll", workers=2).known_backlogs == (DEFAULT_BACKLOG,)


def test_a_burst_of_several_servers_says_each_ones_workers_and_backlog() -> None:
    """'burst --server caddy,nginx -w 2' said '1 worker, work 0 ms, backlog 511' of both: Caddy's one process, and a
    backlog its listener never had (netlink: 4096)."""
    caddy = ServerSpec(kind="caddy", mode="netpoller", workers=1)
    nginx = ServerSpec(kind="nginx", mode="epoll", workers=2)
    said = servers_said([caddy, nginx], "0 ms")
    assert said == "1 worker (caddy netpoller), 2 workers (nginx epoll), work 0 ms, backlog 511 (nginx epoll)"
    assert servers_said([nginx, nginx.replace(mode="reuseport")], "0 ms") == "2 workers, work 0 ms, backlog 511"
