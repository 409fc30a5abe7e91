"""sweep's caps where none are given: its own 1,4,32,0, less those the server has no setting for.

`accept-order sweep --server nginx` (the help names nginx's multi_accept as such a cap) stopped at once with
'--accept-batch with nginx is 0 (multi_accept on) or 1 (multi_accept off)', of caps nobody typed: it now runs 1
and 0, multi_accept off and on. A mode that reads no cap is refused as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.cli.sweep_caps import default_caps
from accept_order.core.errors import PlanError
from accept_order.core.spec import ServerSpec
from accept_order.servers.registry import server_kind


def test_the_builtin_batching_modes_keep_every_cap() -> None:
    assert default_caps(ServerSpec(mode="epoll", workers=2)) == [1, 4, 32, 0]
    assert default_caps(ServerSpec(mode="epoll-herd", workers=2)) == [1, 4, 32, 0]


def test_a_mode_that_reads_no_cap_is_still_refused() -> None:
    with pytest.raises(PlanError, match="the built-in blocking mode does not read it"):
        default_caps(ServerSpec(mode="blocking", workers=2))


@pytest.mark.skipif(server_kind("nginx").missing() is not None, reason="needs nginx")
def test_nginx_takes_multi_accept_off_and_on() -> None:
    assert default_caps(ServerSpec(kind="nginx", mode="epoll", workers=2, accept_batch=1)) == [1, 0]


@pytest.mark.skipif(server_kind("nginx").missing() is not None, reason="needs nginx")
def test_sweep_of_nginx_runs_without_caps_given(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    result = run_cli(["sweep", "--server", "nginx", "-w", "2", "-n", "40", "-c", "2", "--json", str(out)])
    assert result.exit_code == 0, result.output
    runs = json.loads(out.read_text())["runs"]
    assert [run["server"]["accept_batch"] for run in runs] == [1, 0]
    assert [sum(run["served"]) for run in runs] == [40, 40]  # every connection answered by a worker, in each


def test_a_cap_given_that_nginx_has_no_setting_for_is_still_refused() -> None:
    result = run_cli(["sweep", "--server", "nginx", "--accept-batch", "1,4", "-n", "20", "-c", "2"])
    if server_kind("nginx").missing() is not None:
        pytest.skip("needs nginx")
    assert_one_error_line(result, 2, "--accept-batch with nginx is 0 (multi_accept on) or 1 (multi_accept off)")
