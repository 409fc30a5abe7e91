"""The worker table calls a threaded server's workers' ids tids: they are threads of one process, not processes.

`latency --server haproxy -w 4` printed 'worker pid 4321 ... 4323 4324 4325' under 'served per worker', where
4323-4325 are threads of HAProxy's process 4321: `ps -p 4323` finds no process. The column is 'tid' where the
kind's workers are threads (HAProxy's nbthread, h2o's event loops), 'pid' elsewhere.

A real run of Debian's HAProxy (3 threads, one connection at a time): the report's column is tid, and its ids are
the haproxy process's threads (psutil, while it runs), only the first of them a process."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import psutil
import pytest
from conftest import run_cli
from rich.console import Console, RenderableType

from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.experiments.order.report import run_report
from accept_order.experiments.sleeps_legend import ids_of
from accept_order.servers.launched.haproxy import haproxy_missing

GOLDEN = Path(__file__).parent / "data" / "golden" / "latency.json"


def text(renderable: RenderableType) -> str:
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def test_threaded_kinds_name_tids_and_the_others_pids() -> None:
    assert ids_of(ServerSpec(kind="haproxy", mode="threads")) == "tid"
    assert ids_of(ServerSpec(kind="h2o", mode="threads")) == "tid"
    assert ids_of(ServerSpec(kind="nginx", mode="epoll")) == "pid"
    assert ids_of(ServerSpec()) == "pid"  # the built-in workers: processes


@pytest.mark.skipif(haproxy_missing() is not None, reason=f"haproxy launched runs: {haproxy_missing()}")
def test_a_haproxy_runs_table_names_its_threads_as_tids() -> None:
    me = psutil.Process()
    threads: list[int] = []

    def on_record(_: object) -> None:
        if not threads:
            (proc,) = [p for p in me.children() if p.name() == "haproxy"]
            threads.extend([proc.pid, *sorted(t.id for t in proc.threads())])

    result = session.run_sequential(
        ServerSpec(kind="haproxy", mode="threads", workers=3, accept_batch=64), SequentialLoad(connections=6), on_record
    )
    pid, tids = threads[0], threads[1:]
    assert [c.pid for c in result.counters] == tids and tids[0] == pid  # the main thread's tid is the pid
    header = next(line for line in text(run_report(result)).splitlines() if line.split()[:2] == ["worker", "tid"])
    assert "pid" not in header.split()


def test_the_affinity_lines_name_the_ids_as_the_table_does(tmp_path: Path) -> None:
    """latency --server haproxy headed its table 'tid' and listed below it 'pid 5716's current affinity list',
    5716 a thread of HAProxy's process: the golden latency run shown as HAProxy's says tid in both places."""
    data = json.loads(GOLDEN.read_text())
    data["server"] = {**data["server"], "server": "haproxy", "mode": "threads"}
    path = tmp_path / "haproxy.json"
    path.write_text(json.dumps(data))
    out = run_cli(["show", str(path)]).stdout
    ids = [c["pid"] for c in data["counters"]]
    assert re.findall(r"^(\w+) (\d+)'s current affinity list", out, re.M) == [("tid", str(i)) for i in ids], out
    assert re.findall(r"^(pid) \d+'s current", run_cli(["show", str(GOLDEN)]).stdout, re.M) == ["pid"] * len(ids)
