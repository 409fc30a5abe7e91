"""The workers' busy time (probes/busy_waits.py) counts a wait on an accept lock as a wait for a connection, a poll
on an upstream as a wait while serving, and the report's 'their CPU per connection' is their CPU per connection.

uWSGI's --thunder-lock (and Apache prefork's accept mutex with two Listens) has every idle worker but one asleep in
futex(FUTEX_LOCK_PI) on a process-shared lock taken before the wait for a connection. Counted busy, 'latency --server
uwsgi --mode thunder-lock -w 3 -n 2000 -c 8' (an app that returns at once; load 4, Linux 6.18, 2 vCPUs) read '72% of
it asleep off the CPU while serving, in futex, as a handler waiting on a database or upstream is' and was modelled on
0.30 ms a connection, its CPU 0.13 ms. And an attached gunicorn whose app slept 2 ms read 'their CPU per connection
(mean 1.71 ms)' where its workers' CPU was 0.38 ms a connection: the figure was stretched by their 22% of a CPU.
Every poll and select was taken for a wait on the listener: an attached gunicorn (3 sync workers) whose app waited
2 ms for an upstream's reply on a Python socket with a timeout (a poll, as libpq's waits are) read no wait while
serving and was modelled on its CPU, 0.47 ms stretched by its 17% of a CPU to 3.3 ms, p50 20.7 against 37.9 ms
measured; its polls' sets read, 6.6 ms of busy time, 43% in poll, p50 39.3 against 42.4 (load 9, 2 vCPUs)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from busy_looks import attached_latency, looked
from cli_runs import run_cli
from gunicorn_by_hand import HandGunicorn, gunicorn_by_hand
from python_processes import pythons
from test_attached_listener_queues_model import attached
from test_model_busy_service import _waiting
from test_model_says_its_servers import COUNTED, NONE_HELD
from waiting import wait_for

from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_queues import queues_text
from accept_order.experiments.latency.model_report import model_report
from accept_order.experiments.latency.model_servers import servers_text
from accept_order.probes import busy_waits
from accept_order.probes.busy_waits import BusySampler
from accept_order.probes.proc_waits import EPOLL_WAITS, POLLS, SELECTS, syscall_names
from accept_order.servers.launched.uwsgi import UwsgiServer, uwsgi_missing
from accept_order.servers.registry import checked

TIMEOUT_S = 30.0


def test_the_cpu_said_beside_busy_time_is_the_workers_cpu_not_stretched() -> None:
    """100 µs of CPU a connection, the workers on a CPU a quarter of the time they were runnable: the report says
    0.10 ms, what they used, not the 0.40 ms a model of their CPU would have stretched it to."""
    plain = attached(None, rows=1)
    evidence = {**plain.evidence, "busy_waits": _waiting(400, 100, 200), "cpu_waits": {"run_s": 1.0, "waited_s": 3.0}}
    slept = replace(plain, evidence=evidence)
    model = predict(slept)
    assert model is not None and model.service_source == "busy", model
    assert model.cpu_mean_ms == pytest.approx(0.1), model
    lines = [str(getattr(part, "plain", "")) for part in model_report([replace(slept, model=model)])]
    assert any("which their CPU per connection (mean 0.10 ms) leaves out" in line for line in lines), lines
    # what they waited for is not read: Apache prefork's polls for its clients' requests and closes read 'as a
    # handler waiting on a database or upstream is'
    said = "in clock_nanosleep (waiting for something: a database, an upstream, the client; the calls do not say which)"
    assert any(said in line for line in lines), lines


def test_a_call_not_in_the_table_is_named_by_its_number() -> None:
    """A worker asleep in a call the table does not name: its number, not Apache's '?' ('in poll, ?, as a ...')."""
    proc = subprocess.Popen(["sleep", "60"])
    try:
        sampler = BusySampler([proc.pid], read=lambda path: b"99999 0x3 0x0 0x0 0x0 0x0 0x0 0x7ffc 0x7f00\n")
        sampler.start(thread=False)
        assert sampler.look()
        read = sampler.stop()
    finally:
        proc.kill()
        proc.wait()
    assert read is not None and read["workers"][0]["waits"] == {"syscall 99999": 1}, read


def test_workers_of_several_threads_are_said_to_be_pools_only_where_they_are() -> None:
    """Node's workers are each a process of 7 threads, one of which (its event loop) runs every request: 'latency
    --server node -w 3' read that they compute one at a time under one lock (Ruby's, CPython's) and that a pool
    overlaps a handler's waits. Puma's pool is still said so; HAProxy's threads are its workers, nothing to say."""
    plain = attached(None, rows=1)

    def said(kind: str, workers: int = 4) -> str | None:
        read = [{"pid": 4243 + i, "threads": 7, "looks": 0, "idle": 0, "waits": {}} for i in range(workers)]
        server = ServerSpec(kind=kind, mode="sched-rr" if kind == "node" else "default", workers=workers)
        busy = {**plain.evidence, "busy_waits": {"span_s": 1.0, "workers": read}}
        return servers_text(replace(plain, server=server, evidence=busy))

    node = said("node")
    assert node == (
        "Model: its 4 workers are the servers counted, one each: each is a process of 7 threads, one of which runs "
        "every request (its event loop), the others none."
    ), node
    puma = said("puma")
    assert puma is not None and "Puma's pool of up to 5 threads" in puma and "under one lock" in puma, puma
    # HAProxy's and h2o's workers are threads (their tids), each read in a process of several: 'its 2 workers are
    # the servers counted, ..., though each is a process of 2 threads' was said of them
    assert said("haproxy") is None and said("h2o") is None
    # Caddy's one process: 'its 1 workers'; and Go's threads compute at once, under no lock
    caddy = said("caddy", workers=1)
    one = "Model: its one worker is the server counted, one request at a time, though it is a process of 7 threads"
    assert caddy is not None and caddy.startswith(one), caddy
    assert "threads that compute at once (C's, Go's)" in caddy, caddy


def test_a_master_that_hands_on_is_said_to_take_every_connection_only_where_its_workers_took_none() -> None:
    """Workers holding no listener as the run started, whose master the kernel counted 1,000 accepts of: where the
    kernel counted 40 by them too, the sentence said 'the kernel counted 1,000 accepts by it and none by them'."""
    plain = attached(NONE_HELD, rows=1)
    counts = {**COUNTED["counts"], "4243": 40}  # type: ignore[dict-item]
    kernel = {**COUNTED, "counts": counts, "master_accepted": 1000}
    fed = replace(plain, evidence={**plain.evidence, "accept_counts": kernel})
    model = predict(fed)
    assert model is not None and model.discipline == "round-robin", model
    said = queues_text(replace(fed, model=model))
    assert said is not None and said.startswith("Model: queue round-robin assumed:"), said
    assert "accepts connections (the kernel counted 1,000 accepts by it and 40 by them)" in said, said


def _syscall(pid: int) -> str:
    """The call a blocked task waits in, by name, as the kernel shows it (/proc/PID/syscall's first field)."""
    number = Path(f"/proc/{pid}/syscall").read_text().split()[0]
    return "running" if number == "running" else syscall_names().get(int(number), number)


def test_workers_waiting_on_uwsgis_thunder_lock_are_idle() -> None:
    """An idle thunder-locked uWSGI: the kernel shows one worker in epoll_wait and the others in futex on the lock;
    every look at each reads idle, none a sleep while serving."""
    if uwsgi_missing():
        pytest.skip(f"uWSGI launched runs: {uwsgi_missing()}")
    with UwsgiServer(checked(ServerSpec(kind="uwsgi", mode="thunder-lock", workers=3))) as server:
        pids = list(server.pids)
        waits = wait_for(lambda: sorted(_syscall(p) for p in pids), lambda w: "running" not in w, TIMEOUT_S, "asleep")
        assert waits == ["epoll_wait", "futex", "futex"], waits  # the witness: where the kernel has them sleep
        read = looked(pids)
        assert sorted(_syscall(p) for p in pids) == waits  # still idle: nothing woke them meanwhile
    assert read is not None
    assert [(w["looks"], w["idle"], w["waits"]) for w in read["workers"]] == [(5, 5, {})] * 3, read


def test_a_thunder_locked_uwsgi_that_computes_keeps_its_cpu_time(tmp_path: Path) -> None:
    """Under load, its workers' waits on the lock are not a handler's sleep: the model keeps their CPU per
    connection (uWSGI's own request log counts what it served)."""
    if uwsgi_missing():
        pytest.skip(f"uWSGI launched runs: {uwsgi_missing()}")
    out = tmp_path / "latency.json"
    args = ["latency", "--server", "uwsgi", "--mode", "thunder-lock", "-w", "3", "-n", "2000", "-c", "8"]
    result = run_cli([*args, "--json", str(out)], columns=400)
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert len(saved["evidence"]["witness"]["requests"]) == 2000, saved["evidence"]["witness"]
    read = saved["evidence"]["busy_waits"]
    assert all(w["threads"] == 1 and w["looks"] > 0 for w in read["workers"]), read
    assert "futex" not in {call for w in read["workers"] for call in w["waits"]}, read
    assert saved["model"]["service_source"] == "cpu", saved["model"]
    assert "asleep off the CPU while serving" not in result.output, result.output


# a worker's own listener, and then a wait on it (select) or on an upstream's reply with a timeout (poll)
WAITER = """
import select, socket, sys, os
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(os.fstat(s.fileno()).st_ino, flush=True)
if sys.argv[1] == "select":
    select.select([s], [], [], 60)
elif sys.argv[1] == "epoll":
    e = select.epoll(); e.register(s); e.poll(60)
else:
    a, b = socket.socketpair(); a.settimeout(60); a.recv(1)
"""


def test_a_poll_on_an_upstream_is_a_wait_while_serving_a_select_on_the_listener_is_not() -> None:
    """Two workers, each holding its listener: one in select on it (between connections), one in a Python socket's
    recv with a timeout (poll on its upstream, while serving). Their sets, read from their memory, tell them apart."""
    with pythons((WAITER, "select"), (WAITER, "poll")) as procs:
        inodes = [int(p.stdout.readline()) for p in procs if p.stdout is not None]
        waits = wait_for(
            lambda: [_syscall(p.pid) for p in procs],
            lambda w: w[0] in SELECTS and w[1] in POLLS,  # the witness: the calls the kernel has them sleep in
            TIMEOUT_S,
            "each in its wait",
        )
        read = looked([p.pid for p in procs], inodes)
        assert [_syscall(p.pid) for p in procs] == waits
    assert read is not None
    expected = [(5, 5, {}), (5, 0, {waits[1]: 5})]
    assert [(w["looks"], w["idle"], w["waits"]) for w in read["workers"]] == expected, read


UPSTREAM_MS = 2
APP = f"""
import socket

upstream, _ = socket.socketpair()
upstream.settimeout({UPSTREAM_MS / 1000})  # a reply awaited with a timeout: Python's socket waits in poll()


def app(environ, start_response):
    try:
        upstream.recv(1)
    except TimeoutError:
        pass
    start_response("200 OK", [("Content-Length", "3")])
    return [b"ok\\n"]
"""


@pytest.fixture
def gunicorn_polling(tmp_path: Path) -> Iterator[HandGunicorn]:
    with gunicorn_by_hand(APP, tmp_path, 3, TIMEOUT_S, "--access-logformat", "%(D)s") as gunicorn:
        yield gunicorn


def test_an_attached_gunicorn_whose_app_polls_an_upstream_is_modelled_by_its_busy_time(
    gunicorn_polling: HandGunicorn, tmp_path: Path
) -> None:
    result, times_us, model = attached_latency(gunicorn_polling, tmp_path)
    assert min(times_us) >= UPSTREAM_MS * 1000, times_us[:5]  # gunicorn's own time for each request
    assert model["service_source"] == "busy" and model["waited_in"].startswith("poll"), model
    # busy from accept to close holds the app's time; the looks' own error is a few percent
    assert model["service_mean_ms"] >= 0.9 * sum(times_us) / len(times_us) / 1000, model
    assert "asleep off the CPU while serving, in poll" in result.output, result.output


def test_a_workers_descriptors_are_read_only_where_it_waits_in_poll_or_select(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker in epoll_wait is idle whatever it holds: its fd table (an attached nginx's may hold thousands of
    connections) is not read at the run's start, and one in poll has its table read once, at its first look."""
    read: list[int] = []
    real = busy_waits._listening
    monkeypatch.setattr(busy_waits, "_listening", lambda pid, listeners: read.append(pid) or real(pid, listeners))
    with pythons((WAITER, "epoll"), (WAITER, "poll")) as procs:
        inodes = [int(p.stdout.readline()) for p in procs if p.stdout is not None]
        wait_for(
            lambda: [_syscall(p.pid) for p in procs],
            lambda w: w[0] in EPOLL_WAITS and w[1] in POLLS,
            TIMEOUT_S,
            "each in its wait",
        )
        reading = looked([p.pid for p in procs], inodes)
    assert read == [procs[1].pid], read
    assert reading is not None and [w["idle"] for w in reading["workers"]] == [5, 0], reading
