"""latency --attach models the queues the attached server's listeners make: nginx 1.22 started by hand with `listen
... reuseport` (4 workers) was modelled 'shared (all)', one queue for all, while the same run's evidence read '4
accept queues (one per socket)'. The model now takes `hash` where each worker's epoll watches a listener of its
own, one shared queue where all watch one, and says where it assumed the shared queue and why
(experiments/latency/model_queues.py; the reading: servers/attached_epolls.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import child_processes, gone, wait_for
from test_attach import ACCEPT_ORDER, accept_order, accepts
from test_cut_short_run_tails import run

from accept_order.core.measures import WorkerCounters
from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_queues import attached_queues, queues_text
from accept_order.experiments.latency.result import LatencyResult

WORKERS = 4
SERVICE_US = 100
EPOLLEXCLUSIVE = 1 << 28
START_TIMEOUT_S = STOP_TIMEOUT_S = 10.0


def attached(watched: dict[str, Any] | None, rows: int = WORKERS) -> LatencyResult:
    """1,000 connections to 4 attached workers, 16 clients, 100 µs of CPU a connection; `watched`: the evidence
    listeners_watched (None: not read), `rows` the listeners the run's start found."""
    r = run("attached", [1000] * 1000)
    server = ServerSpec(kind="attached", mode="attached", workers=WORKERS, port=18771, attach=(4242,), protocol="http")
    counters = tuple(
        WorkerCounters(i, 4243 + i, None, None, None, None, 10, 10, 250 * SERVICE_US / 1e6) for i in range(WORKERS)
    )
    rows_read = [{"address": "127.0.0.1", "port": 18771, "queue": 0, "backlog": 511, "inode": i} for i in range(rows)]
    evidence: dict[str, Any] = {"listeners": {"start": rows_read}}
    if watched is not None:
        evidence["listeners_watched"] = watched
    return replace(
        r,
        server=server.validated(),
        load=replace(r.load, concurrency=16),
        served=(250,) * WORKERS,
        counters=counters,
        evidence=evidence,
    )


def test_a_listener_of_each_workers_own_is_modelled_as_the_kernels_hash() -> None:
    reuseport = attached({"listeners": 4, "workers": [[0], [1], [2], [3]]})
    model = predict(reuseport)
    assert model is not None and model.discipline == "hash", model  # was 'shared' (batch 0: 'shared (all)')
    shared = predict(attached({"listeners": 1, "workers": [[0]] * WORKERS}, rows=1))
    assert shared is not None and shared.discipline == "shared", shared
    # a hash queues connections at busy workers while others idle: its tail is longer than one shared queue's
    assert model.p99_ms > shared.p99_ms, (model, shared)
    said = queues_text(replace(reuseport, model=model))
    assert said is not None and said.startswith("Model: queue hash: each of its 4 workers waits on a listener of its")
    assert "assumed" not in said, said


def test_where_the_reading_cannot_say_the_shared_queue_is_said_assumed() -> None:
    unread = attached(None)  # a file from before the reading, or another user's server
    queues = attached_queues(unread)
    assert queues is not None and queues.assumed and queues.discipline == "shared", queues
    said = queues_text(replace(unread, model=predict(unread)))
    assert (
        said is not None and "queue shared (all) assumed: which of its 4 listeners each worker waits on was not" in said
    )
    one = attached_queues(attached(None, rows=1))  # one listener is one queue whoever waits on it
    assert one is not None and not one.assumed and one.discipline == "shared", one
    every = [[0, 1, 2, 3]] * WORKERS  # nginx's workers hold every reuseport socket: holding says nothing there
    idle = attached_queues(attached({"listeners": 4, "workers": [[0], [], [], []], "held": every}))
    assert idle is not None and idle.assumed and "3 of its 4 workers' epolls watched none" in idle.said, idle
    blocking = {"listeners": 4, "workers": [[]] * WORKERS, "held": [[0], [1], [2], [3]]}  # each accepts on its own
    own = attached_queues(attached(blocking))
    assert own is not None and own.discipline == "hash" and not own.assumed and "4 in no epoll" in own.said, own
    mutex = attached_queues(attached({"listeners": 1, "workers": [[0], [], [], []], "held": [[0]] * 4}, rows=1))
    assert mutex is not None and mutex.discipline == "holder", mutex  # one queue, its lock holder's first
    mixed = attached_queues(attached({"listeners": 4, "workers": [[0, 1], [1], [2], [3]]}))
    assert mixed is not None and mixed.assumed and "(2/1/1/1 each)" in mixed.said, mixed
    # HAProxy of nbthread 2, one process: the model counts its threads (model_servers.py), the note its one listener
    one = attached({"listeners": 1, "workers": [[0]], "held": [[0]]}, rows=1)
    haproxy = {"pid": 4243, "program": "haproxy", "argv": ["haproxy"], "count": 2, "loops": 2, "epolls": 2}
    threads = replace(
        one,
        server=replace(one.server, workers=1),
        counters=one.counters[:1],
        served=(1000,),
        evidence={**one.evidence, "threads": haproxy},
    )
    said = queues_text(replace(threads, model=predict(threads)))
    assert said is not None and "one worker" not in said and "one listener takes its connections" in said, said
    built = run("reuseport", [1000] * 1000)  # the built-in modes' metadata says theirs
    assert attached_queues(built) is None and queues_text(built) is None


# -- Debian's nginx, started here by hand, as the reviewer's was ------------------------------------------------


def _config(directory: Path, port: int, reuseport: bool) -> str:
    return f"""daemon off;
worker_processes {WORKERS};
pid {directory}/nginx.pid;
error_log {directory}/error.log notice;
events {{ worker_connections 1024; accept_mutex off; }}
http {{
    access_log off;
    client_body_temp_path {directory}/body;
    server {{
        listen 127.0.0.1:{port}{" reuseport" if reuseport else ""};
        location / {{ default_type text/plain; return 200 "ok\\n"; }}
    }}
}}
"""


@pytest.fixture(params=[True, False], ids=["reuseport", "accept_mutex-off"])
def nginx(request: pytest.FixtureRequest, tmp_path: Path, free_port: int) -> Iterator[tuple[int, list[int], bool]]:
    """(master, workers, reuseport): nginx of WORKERS workers on free_port, ended here whatever the test did."""
    binary = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
    if binary is None:
        pytest.skip("needs nginx (Debian's package)")
    reuseport: bool = request.param
    (tmp_path / "conf").write_text(_config(tmp_path, free_port, reuseport))
    errlog = tmp_path / "error.log"
    proc = subprocess.Popen(
        [binary, "-e", str(errlog), "-p", str(tmp_path), "-c", str(tmp_path / "conf")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    try:

        def started() -> tuple[int | None, list[int], bool]:
            kids = [p.pid for p in child_processes(proc.pid)] if proc.poll() is None else []
            return proc.poll(), sorted(kids), proc.poll() is None and accepts(free_port)

        def ready(state: tuple[int | None, list[int], bool]) -> bool:
            if state[0] is not None:
                pytest.fail(f"nginx exited with {state[0]}: {errlog.read_text() if errlog.exists() else ''}")
            return len(state[1]) == WORKERS and state[2]

        _, workers, _ = wait_for(started, ready, START_TIMEOUT_S, "nginx's workers and its port")
        yield proc.pid, workers, reuseport
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                for pid in [p.pid for p in psutil.Process(proc.pid).children()]:
                    os.kill(pid, signal.SIGKILL)
                proc.kill()
                proc.wait(STOP_TIMEOUT_S)
        wait_for(lambda: gone(workers), bool, STOP_TIMEOUT_S, "nginx's workers to exit")


def _kernel_listeners(port: int) -> set[int]:
    """The witness: the inodes of the LISTEN sockets on `port` in /proc/net/tcp (state 0A)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cells = line.split()
        if cells[3] == "0A" and int(cells[1].rsplit(":", 1)[1], 16) == port:
            found.add(int(cells[9]))
    return found


def _epoll_watches(pid: int, listeners: set[int]) -> dict[int, bool]:
    """The witness: listener inode -> EPOLLEXCLUSIVE, of those the process's epolls watch (their fdinfo)."""
    watches: dict[int, bool] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:[eventpoll]":
            continue
        for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
            found = re.match(r"tfd:\s*\d+\s+events:\s*([0-9a-f]+).*\bino:([0-9a-f]+)", line)
            if found and int(found[2], 16) in listeners:
                watches[int(found[2], 16)] = bool(int(found[1], 16) & EPOLLEXCLUSIVE)
    return watches


def _held(pid: int, listeners: set[int]) -> set[int]:
    """The witness: the listeners the process's fd table holds (its socket:[INODE] links)."""
    links = (os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    return {inode for link in links if link.startswith("socket:[") and (inode := int(link[8:-1])) in listeners}


def test_a_hand_started_nginx_is_modelled_with_the_queues_its_listeners_make(
    nginx: tuple[int, list[int], bool], free_port: int, tmp_path: Path
) -> None:
    master, workers, reuseport = nginx
    listeners = _kernel_listeners(free_port)
    # each worker adds its listener to its epoll as its event loop starts, after the port accepts (the fixture's
    # readiness): read at once, one worker of 4 watched none in 2 of 6 tries here (load 7)
    watched = wait_for(
        lambda: {pid: _epoll_watches(pid, listeners) for pid in workers},
        lambda seen: all(seen.values()),
        START_TIMEOUT_S,
        "every nginx worker's epoll watching a listener",
    )
    if reuseport:  # 4 queues, each worker's epoll watching one of its own (each holds all 4: ss -ltnp)
        assert len(listeners) == WORKERS and len({inode for w in watched.values() for inode in w}) == WORKERS
        assert all(len(w) == 1 for w in watched.values()), watched
    else:  # one queue, every worker's epoll watching it with EPOLLEXCLUSIVE (accept_mutex off)
        assert len(listeners) == 1 and all(w == {next(iter(listeners)): True} for w in watched.values()), watched
    out = tmp_path / "latency.json"
    done = accept_order(
        "latency", "--attach", str(master), "--port", str(free_port), "--protocol", "http", "-n", "200", "-c", "4",
        "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    assert doc["model"]["discipline"] == ("hash" if reuseport else "shared"), doc["model"]  # reuseport: was shared
    order = sorted(listeners)
    pids = [c["pid"] for c in doc["counters"]]
    expected = [sorted(order.index(inode) for inode in watched[pid]) for pid in pids]
    held = [sorted(order.index(inode) for inode in _held(pid, listeners)) for pid in pids]
    loops = [[sorted(order.index(inode) for inode in watched[pid])] for pid in pids]  # one epoll each
    read = {"listeners": len(listeners), "workers": expected, "held": held, "loops": loops}
    assert doc["evidence"]["listeners_watched"] == read
    shown = subprocess.run(
        [*ACCEPT_ORDER, "show", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "2000"},
    )
    said = "hash: each of its 4 workers waits on a listener of its own" if reuseport else "take from its one listener"
    # one connection a wakeup (batch 1) where none of the kernel's counted accepts came back empty (multi_accept off,
    # nginx's default; EPOLLEXCLUSIVE may still wake one for a connection another took): test_attached_one_per_wakeup
    kernel = doc["evidence"].get("accept_counts", {})
    one = kernel.get("available") and kernel.get("empty") == {} and sum(kernel.get("counts", {}).values()) >= 20
    assert doc["model"]["batch"] == (1 if one else 0), (kernel, doc["model"])
    queue = "hash" if reuseport else "shared" if one else "shared (all)"
    assert f"Model: queue {queue}: " in shown.stdout, shown.stdout
    assert said in shown.stdout, shown.stdout
