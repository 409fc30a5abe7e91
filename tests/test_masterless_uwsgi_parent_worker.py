"""uWSGI without --master: the first process is worker 1 (its log: 'spawned uWSGI worker 1 (pid: PARENT)') and forks
the others; every one of them holds the listener and accepts. observe and latency --attach left the parent out of the
workers (a master that holds the listener beside its children), so the table had half the accepts and latency's line
said the master 'serves as a worker too'. A parent seen waiting on the listener while a child waits its turn is one of
the workers now (probes/accept_waits.parent_accepts: SERVES), the oldest.

Witnesses the tool did not produce: uWSGI's own request log (each line names the pid that served it), and /proc."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli, wait_for
from pyuwsgi_started import HOST, TIMEOUT_S, masterless

from accept_order.experiments.observe.server import find_server
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.attached_workers import worker_pids
from accept_order.servers.launched.uwsgi import uwsgi_missing
from accept_order.servers.registry import HELPERS

APP = """import os
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [f"worker {os.getpid()}".encode()]
"""
SERVED = re.compile(r"^\[pid: (\d+)\|app: ", re.MULTILINE)  # uWSGI's request log line

pytestmark = pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI: {uwsgi_missing()}")


@pytest.fixture
def masterless_uwsgi(tmp_path: Path, free_port: int) -> Iterator[tuple[int, int, Path]]:
    """pyuwsgi --processes 2 without a master: (parent, child, its log) once both wait for connections."""
    log = tmp_path / "uwsgi.log"
    options = f"--http-socket {HOST}:{free_port} --wsgi-file app.py --logto {log}"
    with masterless(tmp_path, APP, options) as (parent, child):
        pids = [parent, child]
        wait_for(lambda: [thread_wait(p, p).call for p in pids], lambda now: "running" not in now, TIMEOUT_S, "idle")
        spawned = wait_for(log.read_text, lambda text: "spawned uWSGI worker 2" in text, TIMEOUT_S, "both spawned")
        assert f"spawned uWSGI worker 1 (pid: {parent}," in spawned  # uWSGI's own word: the parent is worker 1
        yield parent, child, log


def test_the_parent_of_a_masterless_uwsgi_is_its_first_worker(
    masterless_uwsgi: tuple[int, int, Path], free_port: int
) -> None:
    parent, child, _ = masterless_uwsgi
    assert worker_pids([parent], HOST, free_port, helpers=HELPERS) == [parent, child]
    for watched in (find_server(pid=parent), find_server(port=free_port)):
        assert watched.workers == (parent, child) and watched.master is None, watched


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_latency_attach_counts_each_workers_accepts_as_uwsgi_logs_them(
    masterless_uwsgi: tuple[int, int, Path], free_port: int, tmp_path: Path
) -> None:
    parent, child, log = masterless_uwsgi
    before = Counter(SERVED.findall(log.read_text()))
    out = tmp_path / "attach.json"
    args = ["--attach", str(parent), "--port", str(free_port), "--protocol", "http", "-n", "300", "-c", "4"]
    result = run_cli(["latency", *args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    counted = {c["pid"]: n for c, n in zip(doc["counters"], doc["served"], strict=True)}
    logged = wait_for(
        lambda: Counter(SERVED.findall(log.read_text())) - before,
        lambda now: sum(now.values()) == 300,
        TIMEOUT_S,
        "uWSGI's log of the 300 requests",
    )
    assert counted == {int(pid): n for pid, n in logged.items()}, (counted, logged)
    assert set(counted) == {parent, child} and all(counted.values()), counted  # both served some
    assert "serves as a worker too" not in result.stdout
