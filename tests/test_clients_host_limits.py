"""A client host's own open-file limit (loads/hosts/load_side.py): an ssh session often starts with a soft limit of
1024 under a hard one far above it. The host makes room for its share as `burst` does here (experiments/burst/
run.py make_room), or its connections would fail with EMFILE (counted as the server's failures) or its share be
refused, after the loads before it had run.

The "host" is an execnet popen gateway (a local interpreter in place of ssh) started under a lowered soft limit.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path
from typing import Any

import execnet
import pytest

from accept_order.core.hosts import ClientHosts
from accept_order.core.spec import FD_MARGIN, ConcurrentLoad, ServerSpec
from accept_order.experiments.session import run_latency
from accept_order.loads.hosts import gateways

SOFT = 256  # the host's soft limit: below the share's connections, far below its hard limit
CONCURRENCY = 2 * SOFT


@pytest.fixture
def low_limit_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = tmp_path / "python-low-limit"
    python.write_text(f'#!/bin/sh\nulimit -S -n {SOFT}\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)

    def spec(destination: str, hosts: Any, index: int) -> Any:
        return execnet.XSpec(f"popen//id=host{index}//python={python}")

    monkeypatch.setattr(gateways, "_spec", spec)


def test_a_host_makes_room_for_its_share_under_its_own_hard_limit(low_limit_host: None) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < CONCURRENCY + FD_MARGIN:
        pytest.skip(f"the hard open-file limit ({hard}) is below what the share needs")
    load = ConcurrentLoad(
        connections=2 * CONCURRENCY, concurrency=CONCURRENCY, driver_procs=1, clients=ClientHosts(("c1",))
    )
    result = run_latency(ServerSpec(workers=2, backlog=CONCURRENCY), load)
    assert result.errors == {} and result.ok == 2 * CONCURRENCY  # none failed with EMFILE, nothing refused
    assert [h.ok for h in result.hosts] == [2 * CONCURRENCY]
