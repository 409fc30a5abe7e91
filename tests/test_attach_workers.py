"""Attaching a master by pid: which of its children are workers. Every child was counted: nginx with
`worker_processes 2` and a proxy_cache_path read 4 workers (its cache manager and loader among them) under
`latency --attach $(cat nginx.pid)`, and the queueing model counted 4 servers; h2o's one child (a perl backtrace
annotator) was taken for its only worker. A worker holds the listener (or, where the master holds it alone, as
Node's primary under SCHED_RR, is fed over a Unix socketpair), and no kind the registry knows names it a helper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from conftest import gone, wait_for
from test_attach import STOP_TIMEOUT_S, accept_order, accepts, nginx_or_skip

from accept_order.servers.attached_listening import check_listening
from accept_order.servers.attached_workers import worker_pids
from accept_order.servers.registry import HELPERS

START_TIMEOUT_S = 10.0
WORKERS = 2


@dataclass
class CachedNginx:
    master: int
    workers: list[int]  # those that hold the listener
    helpers: list[int]  # its cache manager and cache loader
    port: int


def cached_config(directory: Path, port: int) -> str:
    temps = "".join(f"    {kind}_temp_path {directory}/{kind};\n" for kind in ("proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""daemon off;
master_process on;
worker_processes {WORKERS};
pid {directory}/nginx.pid;
error_log {directory}/error.log notice;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {directory}/client_body;
{temps}    proxy_cache_path {directory}/cache keys_zone=one:1m;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 200 "hi\\n"; }}
    }}
}}
"""


def titles(master: int) -> dict[int, str]:
    found = {}
    for child in psutil.Process(master).children():
        try:
            found[child.pid] = " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture
def cached_nginx(tmp_path: Path, free_port: int) -> Iterator[CachedNginx]:
    """nginx with 2 workers and a cache (a cache manager and a cache loader beside them), started by hand."""
    binary = nginx_or_skip()
    conf = tmp_path / "nginx.conf"
    conf.write_text(cached_config(tmp_path, free_port))
    proc = subprocess.Popen(
        [binary, "-e", str(tmp_path / "error.log"), "-p", str(tmp_path), "-c", str(conf)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    children: list[int] = []
    try:

        def four() -> dict[int, str]:
            if proc.poll() is not None:
                pytest.fail(f"nginx exited with {proc.returncode}: {(tmp_path / 'error.log').read_text()}")
            return titles(proc.pid) if accepts(free_port) else {}

        # the loader exits a minute after it starts: well after these tests. A child just forked still bears the
        # master's title until it sets its own (all four did once, in a CI run): wait for the titles too
        found = wait_for(
            four,
            lambda t: len(t) == WORKERS + 2 and not any("master process" in title for title in t.values()),
            START_TIMEOUT_S,
            "nginx's workers, manager, loader",
        )
        children = sorted(found)
        workers = sorted(pid for pid, title in found.items() if "worker process" in title)
        helpers = sorted(pid for pid, title in found.items() if "cache" in title)
        assert len(workers) == WORKERS and len(helpers) == 2, found
        yield CachedNginx(proc.pid, workers, helpers, free_port)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                for pid in children:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                proc.kill()
                proc.wait(STOP_TIMEOUT_S)
        wait_for(lambda: gone(children), bool, STOP_TIMEOUT_S, "nginx's children to exit")


def test_nginxs_cache_manager_and_loader_are_not_workers(cached_nginx: CachedNginx, tmp_path: Path) -> None:
    assert worker_pids([cached_nginx.master], "127.0.0.1", cached_nginx.port, helpers=HELPERS) == cached_nginx.workers
    out = tmp_path / "run.json"
    port = str(cached_nginx.port)
    done = accept_order(
        "run", "--attach", str(cached_nginx.master), "--port", port, "--protocol", "http", "-n", "12",
        "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["server"]["workers"] == WORKERS, doc["server"]
    assert {r["pid"] for r in doc["records"]} <= set(cached_nginx.workers)
    latency = tmp_path / "latency.json"
    done = accept_order(
        "latency", "--attach", str(cached_nginx.master), "--port", port, "--protocol", "http", "-n", "100",
        "-c", "4", "--json", str(latency),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{WORKERS} workers" in done.stdout.splitlines()[0], done.stdout
    assert f"Model: queueing alone, {WORKERS} workers" in done.stdout, done.stdout
    doc = json.loads(latency.read_text())
    assert doc["server"]["workers"] == WORKERS and len(doc["served"]) == WORKERS, doc["server"]


@dataclass
class Family:
    master: int
    port: int
    roles: list[tuple[str, int]]  # (role, pid) of each child, in the order started

    def of(self, role: str) -> list[int]:
        return sorted(pid for each, pid in self.roles if each == role)


# A master that holds a listener and starts children in the roles given on its command line, each a python that
# sleeps: `worker` holds the listener; `helper` holds nothing; `named` holds it under nginx's cache manager's
# title; `fed` holds one end of a socketpair whose other end the master keeps, and no listener.
MASTER = r"""
import json, os, socket, subprocess, sys, time
listener = socket.create_server(("127.0.0.1", 0))
sleeper = ["-c", "import time; time.sleep(120)"]
roles = []
for role in sys.argv[1:]:
    fds, title = [], sys.executable
    if role in ("worker", "named"):
        fds = [listener.fileno()]
    if role == "named":
        title = "nginx: cache manager process"
    if role == "fed":
        mine, theirs = socket.socketpair()
        fds = [theirs.fileno()]
    child = subprocess.Popen([title, *sleeper], executable=sys.executable, pass_fds=fds)
    roles.append([role, child.pid])
print(json.dumps({"port": listener.getsockname()[1], "roles": roles}), flush=True)
time.sleep(120)
"""


@pytest.fixture
def family() -> Iterator[Callable[..., Family]]:
    started: list[subprocess.Popen[str]] = []

    def start(*roles: str) -> Family:
        proc = subprocess.Popen(
            [sys.executable, "-c", MASTER, *roles], stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        started.append(proc)
        assert proc.stdout is not None
        said = json.loads(proc.stdout.readline())
        return Family(proc.pid, said["port"], [(role, pid) for role, pid in said["roles"]])

    yield start
    for proc in started:
        members = [proc.pid, *(c.pid for c in psutil.Process(proc.pid).children())] if proc.poll() is None else []
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its session: the master and every child it started
        except ProcessLookupError:
            pass
        proc.wait(STOP_TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()
        wait_for(lambda left=members: gone(left), bool, STOP_TIMEOUT_S, "the family to exit")


def test_a_child_that_holds_no_listener_or_is_named_a_helper_is_no_worker(family: Callable[..., Family]) -> None:
    made = family("worker", "helper", "named", "worker")
    workers = worker_pids([made.master], "127.0.0.1", made.port, helpers=HELPERS)
    assert sorted(workers) == made.of("worker"), made.roles
    check_listening("127.0.0.1", made.port, [made.master], workers, helpers=HELPERS)  # the named one holds it too


def test_where_the_master_alone_holds_the_listener_its_fed_children_work(
    family: Callable[..., Family],
) -> None:
    made = family("fed", "helper")
    assert worker_pids([made.master], "127.0.0.1", made.port, helpers=HELPERS) == made.of("fed"), made.roles


def test_a_master_whose_children_all_serve_nothing_is_its_own_worker(family: Callable[..., Family]) -> None:
    """h2o's one child, a perl that annotates backtraces, was its 'worker': the process itself serves."""
    made = family("helper")
    assert worker_pids([made.master], "127.0.0.1", made.port, helpers=HELPERS) == [made.master]


def test_no_port_known_keeps_every_child_but_the_named_helpers(family: Callable[..., Family]) -> None:
    made = family("worker", "named", "helper")
    assert sorted(worker_pids([made.master], helpers=HELPERS)) == sorted(made.of("worker") + made.of("helper"))


def test_a_holding_child_not_among_the_workers_found_is_refused_unless_named_a_helper(
    family: Callable[..., Family],
) -> None:
    """check_listening let any child of the master hold the listener beside the workers found: one that took it
    after they were read (a master's workers starting, found as the master alone) was excused as a 'helper', and
    every connection it took went unseen. Only a child a kind names a helper is excused."""
    from accept_order.core.errors import NotServing

    made = family("worker", "named")
    with pytest.raises(NotServing, match="not only by"):
        check_listening("127.0.0.1", made.port, [made.master], [made.master], helpers=HELPERS)
    check_listening("127.0.0.1", made.port, [made.master], made.of("worker"), helpers=HELPERS)  # named: excused


# A fresh interpreter that imports the attach alone, never the registry: the helpers it is given are left out.
ALONE = """
import json, sys
from accept_order.servers.attached_workers import worker_pids
master, port = int(sys.argv[1]), int(sys.argv[2])
workers = worker_pids([master], "127.0.0.1", port, helpers=sys.argv[3:])
print(json.dumps([workers, "accept_order.servers.registry" in sys.modules]))
"""


def test_the_helpers_are_those_given_whatever_was_imported_before(family: Callable[..., Family]) -> None:
    """worker_pids looked through the ServerKind subclasses imported so far: without the registry imported first
    nginx's cache manager was a worker (this file passed because it imported the registry for that)."""
    made = family("worker", "named")
    titles = [title for title in HELPERS if "cache manager" in title]
    said = subprocess.run(
        [sys.executable, "-c", ALONE, str(made.master), str(made.port), *titles], capture_output=True, text=True
    )
    assert json.loads(said.stdout) == [made.of("worker"), False], said.stderr
    assert worker_pids([made.master], "127.0.0.1", made.port, helpers=()) == sorted(
        made.of("worker") + made.of("named")
    )


def test_the_registry_gives_the_attach_every_kinds_helpers() -> None:
    from accept_order.core.spec import ServerSpec
    from accept_order.servers.registry import KINDS

    assert {"nginx: cache manager process", "nginx: cache loader process"} <= set(HELPERS)
    attached = KINDS["attached"].make(ServerSpec(kind="attached", mode="attached", attach=(1,), port=80))
    assert attached.helper_titles == HELPERS  # type: ignore[attr-defined]
