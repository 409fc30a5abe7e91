"""Review of latency --attach's queue reading (f9935ac, 28d9bf2): HAProxy of `nbthread 2` with `bind ... shards
by-thread` has 2 SO_REUSEPORT listeners, each thread's epoll watching one (the process's fdinfo), and was modelled
'shared (all) assumed: which of its 2 listeners each worker waits on was not read' though its epolls were read:
threads share one fd table, so the per-process reading held both listeners for its one pid. Each epoll is now kept
(evidence listeners_watched.loops) and a process's threads, counted as the model's servers, are read by them.
Workers that all wait on the same few of the listeners no longer read 'all wait on each of its N listeners', and a
reading whose indices name no listener is not taken."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import child_processes, gone, run_cli, wait_for
from python_processes import pythons
from test_attach import accepts
from test_attached_listener_queues_model import (
    STOP_TIMEOUT_S,
    WORKERS,
    _config,
    _epoll_watches,
    _held,
    _kernel_listeners,
    attached,
)
from test_attached_threads_model import attached as threaded_haproxy

from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_queues import Queues, attached_queues, queues_text
from accept_order.experiments.latency.model_servers import as_served
from accept_order.experiments.latency.result import LatencyResult
from accept_order.results import envelope

START_TIMEOUT_S = 10.0


def threads_queues(result: LatencyResult) -> Queues | None:
    """The queues read of a process's threads as the model counts them (2 servers: model_servers.as_served)."""
    served = as_served(result)
    assert served is not None and served.server.workers == 2, served
    return attached_queues(served)


def haproxy_of(watched: dict[str, Any] | None) -> LatencyResult:
    """One HAProxy process of 2 threads (the model's 2 servers) with 2 listeners, and the reading `watched`."""
    one = threaded_haproxy("haproxy")
    rows = [{"address": "127.0.0.1", "port": 18432, "queue": 0, "backlog": 4096, "inode": i} for i in range(2)]
    evidence: dict[str, Any] = {**one.evidence, "listeners": {"start": rows}}
    if watched is not None:
        evidence["listeners_watched"] = watched
    return replace(one, evidence=evidence)


def test_a_process_whose_threads_each_watch_a_listener_is_modelled_as_the_kernels_hash() -> None:
    shards = haproxy_of({"listeners": 2, "workers": [[0, 1]], "held": [[0, 1]], "loops": [[[0], [1]]]})
    model = predict(shards)
    assert model is not None and model.workers == 2 and model.discipline == "hash", model  # was shared
    said = queues_text(replace(shards, model=model))
    assert said is not None and said.startswith("Model: queue hash: each of its 2 threads waits on a listener of its")
    assert "its thread idle or not" in said and "assumed" not in said, said
    # what /proc cannot show of the chooser: reuseport-cpu's BPF program served 1500/1500 by the client's CPU
    assert "a BPF program on the group or SO_INCOMING_CPU marks would steer it instead, and /proc shows" in said
    # a file from before the epolls were kept one by one: not read, as said of any server
    old = threads_queues(haproxy_of({"listeners": 2, "workers": [[0, 1]], "held": [[0, 1]]}))
    assert old is not None and old.assumed and old.discipline == "shared", old
    assert "which of its 2 listeners each worker waits on was not read" in old.said, old
    # epolls that do not pair with the threads (one watching both): read, and not known which thread takes which
    one = threads_queues(haproxy_of({"listeners": 2, "workers": [[0, 1]], "held": [[0, 1]], "loops": [[[0, 1]]]}))
    assert one is not None and one.assumed and one.discipline == "shared", one
    assert "threads share one fd table" in one.said and "not read" not in one.said, one


def test_workers_waiting_on_some_of_the_listeners_are_not_said_to_wait_on_each() -> None:
    some = attached_queues(attached({"listeners": 4, "workers": [[0]] * 4}))
    assert some is not None and some.assumed and some.discipline == "shared", some
    assert "wait on each of" not in some.said and "the same 1 of its 4 listeners" in some.said, some
    every = attached_queues(attached({"listeners": 2, "workers": [[0, 1]] * 4}, rows=2))
    assert every is not None and not every.assumed and "all wait on each of its 2 listeners" in every.said, every


@pytest.mark.parametrize("workers", [[[4], [5], [6], [7]], [[-1], [-2], [-3], [-4]], [[True], [1], [2], [3]]])
def test_a_reading_whose_indices_name_no_listener_is_not_taken(workers: list[list[Any]]) -> None:
    queues = attached_queues(attached({"listeners": 4, "workers": workers}))
    assert queues is not None and queues.discipline == "shared" and queues.assumed, queues
    assert "was not read" in queues.said, queues


# -- Debian's HAProxy, shards by thread -------------------------------------------------------------------------

SHARDS_CFG = """global
    nbthread 2
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend f
    bind 127.0.0.1:{port} shards by-thread
    http-request return status 200 content-type text/plain string "ok"
"""


def _epolls_watching(pid: int, port: int) -> list[set[int]]:
    """The witness: the LISTEN sockets on `port` (/proc/net/tcp, state 0A) each of the process's epolls watches
    (their fdinfo), for the epolls watching any."""
    listeners = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cells = line.split()
        if cells[3] == "0A" and int(cells[1].rsplit(":", 1)[1], 16) == port:
            listeners.add(int(cells[9]))
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[eventpoll]":
            fdinfo = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
            watched = {int(i, 16) for i in re.findall(r"\bino:([0-9a-f]+)", fdinfo)} & listeners
            found.append(watched) if watched else None
    return found


def test_latency_attach_to_haproxy_sharded_by_thread_models_a_queue_per_thread(tmp_path: Path, free_port: int) -> None:
    binary = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
    if binary is None:
        pytest.skip("needs haproxy (Debian's package)")
    config = tmp_path / "haproxy.cfg"
    config.write_text(SHARDS_CFG.format(port=free_port))
    server = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(
            lambda: (server.poll(), accepts(free_port)), lambda s: s[0] is not None or s[1], START_TIMEOUT_S, "haproxy"
        )
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        epolls = _epolls_watching(server.pid, free_port)
        assert len(epolls) == 2 and all(len(e) == 1 for e in epolls) and len(epolls[0] | epolls[1]) == 2, epolls
        out = tmp_path / "latency.json"
        args = ["latency", "--attach", str(server.pid), "--port", str(free_port), "--protocol", "http"]
        result = run_cli([*args, "-n", "300", "-c", "4", "--json", str(out)], columns=400)
        assert result.exit_code == 0, result.output
        doc = json.loads(out.read_text())
        assert sorted(map(sorted, doc["evidence"]["listeners_watched"]["loops"][0])) == [[0], [1]], doc["evidence"]
        assert doc["model"]["workers"] == 2 and doc["model"]["discipline"] == "hash", doc["model"]  # was shared
        assert "Model: queue hash: each of its 2 threads waits on a listener of its own" in result.stdout
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr is not None:
            server.stderr.close()


def test_a_file_whose_reading_names_no_listener_is_refused_in_one_line(tmp_path: Path) -> None:
    """Unchecked, `show` printed the saved model's 'hash' beside the note read again: 'queue hash assumed: which
    of its 4 listeners each worker waits on was not read ... taken as one shared queue'; merge took it."""
    result = attached({"listeners": 4, "workers": [[0], [1], [2], [3]]})
    document = replace(result, model=predict(result)).to_dict()
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    envelope.save(good, "latency", document)
    document["evidence"]["listeners_watched"]["workers"] = [[4], [5], [6], [7]]
    envelope.save(bad, "latency", document)
    shown = run_cli(["show", str(good)], columns=400)
    assert shown.exit_code == 0 and "Model: queue hash: each of its 4 workers" in shown.output, shown.output
    for command in (["show", str(bad)], ["merge", str(bad), str(good), "--json", str(tmp_path / "merged.json")]):
        refused = run_cli(command, columns=400)
        assert refused.exit_code == 1, refused.output
        assert "evidence.listeners_watched.workers[0][0]: is 4, but there are 4 listeners" in refused.output
        assert "Traceback" not in refused.output and len(refused.output.strip().splitlines()) == 1, refused.output


def test_workers_of_which_some_watch_the_one_listener_they_all_hold_are_an_accept_mutex() -> None:
    """nginx's accept_mutex on: the lock holder's epoll watches the listener, the others hold it without; its holder
    served 2000/0/0/0 here, which one shared queue spread over 4 workers ('shared (all)')."""
    result = attached({"listeners": 1, "workers": [[], [0], [], []], "held": [[0]] * 4}, rows=1)
    model = predict(result)
    assert model is not None and model.discipline == "holder", model  # was shared, then favoured
    said = queues_text(replace(result, model=model))
    assert said is not None and "1 of its 4 workers' epolls watched its one listener" in said, said
    assert "an accept mutex's sign" in said, said
    # every worker watching it (EPOLLEXCLUSIVE, accept_mutex off), or none (blocking accept): one shared queue
    for each in ([[0]] * 4, [[]] * 4):
        queues = attached_queues(attached({"listeners": 1, "workers": each, "held": [[0]] * 4}, rows=1))
        assert queues is not None and queues.discipline == "shared", (each, queues)


def test_a_hand_started_nginx_with_accept_mutex_on_is_modelled_with_its_lock_holder(
    tmp_path: Path, free_port: int
) -> None:
    binary = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
    if binary is None:
        pytest.skip("needs nginx (Debian's package)")
    config = _config(tmp_path, free_port, reuseport=False).replace("accept_mutex off", "accept_mutex on")
    (tmp_path / "conf").write_text(config)
    proc = subprocess.Popen(
        [binary, "-e", str(tmp_path / "error.log"), "-p", str(tmp_path), "-c", str(tmp_path / "conf")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    try:

        def started() -> tuple[int | None, list[int], bool]:
            kids = sorted(p.pid for p in child_processes(proc.pid)) if proc.poll() is None else []
            return proc.poll(), kids, proc.poll() is None and accepts(free_port)

        state = wait_for(
            started, lambda s: s[0] is not None or (len(s[1]) == WORKERS and s[2]), START_TIMEOUT_S, "nginx"
        )
        assert state[0] is None, (tmp_path / "error.log").read_text()
        workers = state[1]
        listeners = _kernel_listeners(free_port)
        assert len(listeners) == 1, listeners
        # the witness: the lock holder's epoll watches the listener, the others' not (their fdinfo), all hold it
        watching = wait_for(
            lambda: sum(1 for pid in workers if _epoll_watches(pid, listeners)),
            lambda n: 0 < n < WORKERS,
            START_TIMEOUT_S,
            "the accept lock's holder watching the listener",
        )
        assert all(_held(pid, listeners) == listeners for pid in workers), watching
        out = tmp_path / "latency.json"
        args = ["latency", "--attach", str(proc.pid), "--port", str(free_port), "--protocol", "http"]
        result = run_cli([*args, "-n", "300", "-c", "4", "--json", str(out)], columns=400)
        assert result.exit_code == 0, result.output
        doc = json.loads(out.read_text())
        read = sum(1 for w in doc["evidence"]["listeners_watched"]["workers"] if w)  # the lock may have moved since
        assert doc["model"]["discipline"] == ("holder" if 0 < read < WORKERS else "shared"), (read, doc["model"])
        assert read == 0 or "an accept mutex's sign" in result.stdout, result.stdout
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                for pid in workers:
                    os.kill(pid, signal.SIGKILL)
                proc.kill()
                proc.wait(STOP_TIMEOUT_S)
        wait_for(lambda: gone(workers), bool, STOP_TIMEOUT_S, "nginx's workers to exit")


WORKER = """import select, sys
fd, now = int(sys.argv[1]), sys.argv[2] == "now"
loop = select.epoll()
if now:
    loop.register(fd, select.EPOLLIN)
print("ready", flush=True)
if not now:
    sys.stdin.readline()  # told to start its event loop, as an nginx worker a moment after the fork
    loop.register(fd, select.EPOLLIN)
    print("watching", flush=True)
sys.stdin.readline()
"""


def test_a_young_worker_not_yet_watching_the_listener_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read at once, nginx (accept_mutex off, just started) had a worker whose epoll did not yet watch the listener
    they all hold, which reads as an accept mutex's holder; the reading waits for the young worker."""
    import socket
    import threading

    from accept_order.servers import attached_epolls

    listener = socket.create_server(("127.0.0.1", 0))
    inode = os.fstat(listener.fileno()).st_ino
    fd = str(listener.fileno())
    first_read = threading.Event()
    reads = []

    def counted(pids: list[int], listeners: set[int]) -> dict[str, Any]:
        reads.append(read := read_watched(pids, listeners))
        first_read.set()
        return read

    read_watched = attached_epolls.read_watched
    monkeypatch.setattr(attached_epolls, "read_watched", counted)
    found: list[dict[str, Any]] = []
    shared = (listener.fileno(),)
    with listener, pythons((WORKER, fd, "now"), (WORKER, fd, "later"), pass_fds=shared) as workers:
        assert all(w.stdout is not None and w.stdout.readline() == "ready\n" for w in workers)
        reader = threading.Thread(
            target=lambda: found.append(attached_epolls.watched([w.pid for w in workers], {inode}))
        )
        reader.start()
        assert first_read.wait(START_TIMEOUT_S), "no reading"
        late = workers[1]
        assert late.stdin is not None and late.stdout is not None
        late.stdin.write("\n")
        late.stdin.flush()
        assert late.stdout.readline() == "watching\n"
        reader.join(START_TIMEOUT_S)
        assert not reader.is_alive(), "the reading did not end"
        assert reads[0]["listeners_watched"]["workers"] == [[0], []], reads[0]  # the race the wait is for
        assert found == [
            {"listeners_watched": {"listeners": 1, "workers": [[0], [0]], "held": [[0], [0]], "loops": [[[0]], [[0]]]}}
        ]
