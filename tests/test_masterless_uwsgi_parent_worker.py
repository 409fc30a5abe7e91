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
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import gone, run_cli, wait_for

from accept_order.experiments.observe.server import find_server
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.attached import worker_pids
from accept_order.servers.launched.uwsgi import uwsgi_missing
from accept_order.servers.registry import HELPERS

TIMEOUT_S = 30.0
HOST = "127.0.0.1"
RUN = "import sys, pyuwsgi; sys.exit(pyuwsgi.run())"
APP = """import os
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [f"worker {os.getpid()}".encode()]
"""
SERVED = re.compile(r"^\[pid: (\d+)\|app: ", re.MULTILINE)  # uWSGI's request log line

pytestmark = pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI: {uwsgi_missing()}")


@pytest.fixture
def masterless(tmp_path: Path, free_port: int) -> Iterator[tuple[int, int, Path]]:
    """pyuwsgi --processes 2 without a master: (parent, child, its log) once both wait for connections."""
    (tmp_path / "app.py").write_text(APP)
    log = tmp_path / "uwsgi.log"
    options = f"--processes 2 --http-socket {HOST}:{free_port} --wsgi-file app.py --logto {log}"
    first = subprocess.Popen(
        ["bash", "-c", f"cd {tmp_path} && exec {sys.executable} -c '{RUN}' {options}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    pids: list[int] = []
    try:

        def processes() -> list[int]:
            try:
                return [first.pid, *(p.pid for p in psutil.Process(first.pid).children())]
            except psutil.Error:
                return []

        pids = wait_for(processes, lambda now: len(now) == 2, TIMEOUT_S, "the parent and its one child")
        wait_for(lambda: [thread_wait(p, p).call for p in pids], lambda now: "running" not in now, TIMEOUT_S, "idle")
        spawned = wait_for(log.read_text, lambda text: "spawned uWSGI worker 2" in text, TIMEOUT_S, "both spawned")
        assert f"spawned uWSGI worker 1 (pid: {pids[0]}," in spawned  # uWSGI's own word: the parent is worker 1
        yield pids[0], pids[1], log
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        wait_for(lambda: pids, gone, 10, "the workers end")


def test_the_parent_of_a_masterless_uwsgi_is_its_first_worker(
    masterless: tuple[int, int, Path], free_port: int
) -> None:
    parent, child, _ = masterless
    assert worker_pids([parent], HOST, free_port, helpers=HELPERS) == [parent, child]
    for watched in (find_server(pid=parent), find_server(port=free_port)):
        assert watched.workers == (parent, child) and watched.master is None, watched


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_latency_attach_counts_each_workers_accepts_as_uwsgi_logs_them(
    masterless: tuple[int, int, Path], free_port: int, tmp_path: Path
) -> None:
    parent, child, log = masterless
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
