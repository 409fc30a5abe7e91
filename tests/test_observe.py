"""observe on servers started here: its per-worker counts are the server's own access log, exactly, while
the tool's load generator drives it; untraced, the connections each worker holds are found from /proc; the
command's output, its file and `show` agree; bad input is one line; Ctrl-C and SIGTERM keep the
result and leave no bpftrace behind."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import OutputReader, assert_one_error_line, gone, run_cli

from accept_order.api import observe
from accept_order.core.errors import ServerUnavailable
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.core.target import Target
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.sampling import BUDGET, Holdings, QueueSampler
from accept_order.experiments.session import RunInterrupted
from accept_order.loads.generator import run_load
from accept_order.servers.launched.haproxy import haproxy_missing
from accept_order.servers.launched.nginx_config import nginx_binary
from accept_order.servers.registry import checked, make_target

try:
    nginx_binary()
except ServerUnavailable as exc:
    pytest.skip(f"observe's tests launch nginx: {exc}", allow_module_level=True)

TIMEOUT_S = 20.0  # any one wait here; the observation itself ends as soon as the load has
traced_only = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="counting accepts needs root and bpftrace"
)


@pytest.fixture
def nginx() -> Iterator[Target]:
    target = make_target(checked(ServerSpec(kind="nginx", mode="epoll", workers=3)))
    try:
        target.start()
        yield target
    finally:
        target.close()


def served_by_log(target: Target) -> Counter[int]:
    """After stop: requests per worker (pid, or thread id for HAProxy) in the server's own log."""
    return Counter(pid for pid, _ in target.own_evidence()["witness"]["requests"])


def observed_while_loaded(target: Target, connections: int) -> ObserveResult:
    """observe the target (by port) while the load generator drives `connections` at it, started once the
    probes are attached (the first snapshot) and ending the observation when it is done; then stop."""
    until, loads, errors = threading.Event(), [], []

    def drive() -> None:
        try:
            load = ConcurrentLoad(connections=connections, concurrency=8, driver_procs=2)
            loads.append(run_load(target.address, target.attribution, load, protocol=target.protocol.closing()))
        except Exception as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
        finally:
            until.set()

    driver = threading.Thread(target=drive)

    def first(result: ObserveResult) -> None:
        if not driver.is_alive() and not until.is_set():
            driver.start()

    try:
        result = observe(port=target.address[1], duration_s=TIMEOUT_S, on_snapshot=first, until=until)
    finally:
        driver.join(TIMEOUT_S)
        target.stop()
    assert not errors and until.is_set(), errors or "the load did not finish before the observation ended"
    assert loads[0].failed == 0 and sum(loads[0].served.values()) == connections, loads[0].errors
    return result


@traced_only
def test_nginx_per_worker_accepts_are_its_access_log(nginx: Target) -> None:
    result = observed_while_loaded(nginx, 600)
    logged = served_by_log(nginx)
    assert result.traced and not result.threaded
    assert result.mechanism is not None and result.mechanism.name == "epoll"  # as inspect reads it
    assert [w.pid for w in result.workers] == list(nginx.pids)
    assert {w.pid: w.accepts for w in result.workers} == {pid: logged[pid] for pid in nginx.pids}
    assert sum(i.total for i in result.intervals) == 600  # the share over time adds up to the totals
    assert all(w.cpu_s is not None and w.cpu_s > 0 for w in result.workers if w.accepts)


@traced_only
@pytest.mark.skipif(bool(haproxy_missing()), reason=f"HAProxy: {haproxy_missing()}")
def test_haproxy_threads_are_the_workers() -> None:
    """shards: each thread accepts on its own socket and serves what it accepts, so accepts per thread are
    its log's lines per thread. (threads mode hands connections between threads after accept: only the
    total agrees there, and observe says so.)"""
    target = make_target(checked(ServerSpec(kind="haproxy", mode="shards", workers=2)))
    try:
        target.start()
        result = observed_while_loaded(target, 400)
    finally:
        target.close()
    logged = served_by_log(target)
    assert result.threaded and [w.tid for w in result.workers] == list(target.pids)
    assert result.mechanism is not None and result.mechanism.name == "reuseport"
    assert {w.tid: w.accepts for w in result.workers} == {tid: logged[tid] for tid in target.pids}


def held_connections(address: tuple[str, int], n: int) -> tuple[list[socket.socket], Counter[int]]:
    """n keep-alive HTTP/1.1 connections, each answered (so accepted) and left open; replies per pid."""
    conns, named = [], Counter[int]()
    for _ in range(n):
        conn = socket.create_connection(address, timeout=TIMEOUT_S)
        conns.append(conn)
        conn.sendall(b"GET / HTTP/1.1\r\nHost: observe\r\n\r\n")
        reply = b""
        while not reply.endswith(b"\r\n0\r\n\r\n"):  # the chunked body's last chunk
            chunk = conn.recv(4096)
            assert chunk, f"nginx closed a keep-alive connection: {reply!r}"
            reply += chunk
        named[int(reply.split(b"worker ")[1].split()[0])] += 1
    return conns, named


def test_untraced_finds_the_connections_each_worker_holds(nginx: Target) -> None:
    """Without tracing: connections open across a few samples are each found in their worker's fd table."""
    until, snapshots, lock = threading.Event(), [0], threading.Condition()
    conns: list[socket.socket] = []
    named: Counter[int] = Counter()

    def hold() -> None:
        try:
            got, by_pid = held_connections(nginx.address, 6)
            conns.extend(got)
            named.update(by_pid)
            with lock:
                seen = snapshots[0]
                lock.wait_for(lambda: snapshots[0] >= seen + 3, TIMEOUT_S)  # >= 2 whole intervals held
        finally:
            for conn in conns:
                conn.close()
            until.set()

    holder = threading.Thread(target=hold)

    def snapshot(result: ObserveResult) -> None:
        with lock:
            snapshots[0] += 1
            lock.notify_all()
        if not holder.is_alive() and not until.is_set():
            holder.start()

    try:
        result = observe(
            port=nginx.address[1], duration_s=TIMEOUT_S, interval_s=0.1, trace=False, on_snapshot=snapshot, until=until
        )
    finally:
        holder.join(TIMEOUT_S)
    assert not result.traced and "--no-trace" in result.source
    assert {w.pid: w.seen for w in result.workers} == {pid: named[pid] for pid in nginx.pids}
    assert all(w.accepts is None and w.empty is None for w in result.workers)


def test_without_root_it_says_so_and_samples_proc(nginx: Target, monkeypatch: pytest.MonkeyPatch) -> None:
    from accept_order.probes import accepts

    monkeypatch.setattr(accepts.os, "geteuid", lambda: 1000)
    result = observe(port=nginx.address[1], duration_s=0.2)
    assert not result.traced and result.source.startswith("not traced (not root: loading eBPF programs needs root)")
    assert all(w.accepts is None and w.seen == 0 for w in result.workers)
    assert "approximate: not traced (not root" in "\n".join(rendered_lines(result))


def rendered_lines(result: ObserveResult) -> list[str]:
    from rich.console import Console

    from accept_order.experiments.observe.report import observe_report

    console = Console(width=80, record=True, file=io.StringIO())
    console.print(observe_report(result))
    return console.export_text().splitlines()


def test_cli_idle_server_fits_80_columns_and_shows_again(nginx: Target, tmp_path: Path) -> None:
    path = tmp_path / "observe.json"
    master = nginx.master.pid if nginx.master else 0  # type: ignore[attr-defined]
    done = run_cli(["observe", str(master), "--duration", "0.3s", "--json", str(path)], columns=80)
    assert done.exit_code == 0, done.output
    out = done.stdout
    assert f"nginx, master {master}, port {nginx.address[1]}, 3 workers" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "observing nginx" in done.stderr  # off a terminal: a plain line per interval on stderr
    saved = json.loads(path.read_text())
    assert saved["kind"] == "observe" and [w["pid"] for w in saved["workers"]] == list(nginx.pids)
    shown = run_cli(["show", str(path)], columns=80)
    assert shown.exit_code == 0 and shown.stdout == out  # (plot draws it: test_experiments, from a saved file)


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["observe"], 2, "give the server's PID"),
        (["observe", "1", "--port", "80"], 2, "not both"),
        (["observe", "--port", "9", "--duration", "0"], 2, "duration"),
        (["observe", str(1 << 22)], 1, f"no process {1 << 22}"),
        (["observe", str(os.getpid())], 1, "holds no listening TCP socket"),
    ],
)
def test_bad_input_is_one_line(args: list[str], code: int, fragment: str) -> None:
    assert_one_error_line(run_cli(args), code, fragment)


def test_nobody_on_the_port_is_one_line(unlistened_port: int) -> None:
    assert_one_error_line(
        run_cli(["observe", "--port", str(unlistened_port)]), 1, f"nobody listens on port {unlistened_port}"
    )


def test_interrupted_in_process_keeps_the_result(nginx: Target) -> None:
    """KeyboardInterrupt inside the observation (a snapshot raising it, as a signal would land) comes out
    as RunInterrupted carrying the result so far, marked interrupted."""

    def stop(result: ObserveResult) -> None:
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as caught:
        observe(port=nginx.address[1], duration_s=TIMEOUT_S, on_snapshot=stop)
    result = caught.value.results[0]
    assert result.interrupted and [w.pid for w in result.workers] == list(nginx.pids)


def test_a_ctrl_c_that_stops_the_server_too_keeps_the_mechanism(nginx: Target) -> None:
    """Ctrl-C in the terminal the server runs in stops the server as well: the mechanism inspect read while
    it ran is kept (asked again at the end, it would find nothing to read)."""
    stopped: list[bool] = []

    def snapshot(result: ObserveResult) -> None:
        if result.mechanism is not None and not stopped:  # inspect has read it: now the server stops
            stopped.append(True)
            nginx.stop()
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as caught:
        observe(port=nginx.address[1], duration_s=TIMEOUT_S, interval_s=0.1, trace=False, on_snapshot=snapshot)
    result = caught.value.results[0]
    assert result.interrupted and gone(nginx.pids)
    assert result.mechanism is not None and result.mechanism.name == "epoll"


@pytest.mark.parametrize("slow", [Holdings, QueueSampler])
def test_untraced_the_queue_is_sampled_at_its_own_pace(
    nginx: Target, monkeypatch: pytest.MonkeyPatch, slow: type[Holdings | QueueSampler]
) -> None:
    """Without tracing, who holds what is looked for in every socket of the namespace (slow where there are
    many: made slow here); the listen queue keeps its own pace all the same. Where the queue itself is
    slow to read (another namespace's /proc/PID/net/tcp), every interval still has a reading of it."""
    slow_s = 0.05  # paced to one look every 5 s: longer than the observation
    real = slow.sample

    def slowed(self: Holdings | QueueSampler) -> None:
        real(self)
        time.sleep(slow_s)  # the cost of a namespace with many sockets (nothing is waited for)

    monkeypatch.setattr(slow, "sample", slowed)
    result = observe(port=nginx.address[1], duration_s=1.0, interval_s=0.25, trace=False)
    assert result.intervals and all(i.queue_max is not None for i in result.intervals)
    if slow is Holdings:
        assert result.queue_every_s < slow_s / BUDGET  # paced by its own cost, not the holdings'


def bpftrace_for(pids: list[int]) -> list[int]:
    """bpftrace processes whose program filters on one of `pids` (ours, not another test's)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or ())
        if proc.info["name"] == "bpftrace" and any(f"pid == {pid}" in cmd for pid in pids):
            found.append(proc.pid)
    return found


@traced_only
@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_a_signal_ends_it_with_the_result_saved(nginx: Target, tmp_path: Path, sig: int, code: int, word: str) -> None:
    path = tmp_path / "observe.json"
    cmd = [sys.executable, "-m", "accept_order", "observe", "--port", str(nginx.address[1]), "--json", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = OutputReader(proc.stdout), OutputReader(proc.stderr)  # type: ignore[arg-type]
    try:
        err.wait_for(r"observing nginx", TIMEOUT_S)  # the first line comes once the probes are attached
        assert bpftrace_for(list(nginx.pids))
        proc.send_signal(sig)
        proc.wait(TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err.finish()
    assert (
        err.finish().splitlines()[-1] == f"accept-order: error: {word}; stopped observing (the server was not touched)"
    )
    assert "interrupted after" in out.finish() and json.loads(path.read_text())["interrupted"] is True
    assert not bpftrace_for(list(nginx.pids))
    nginx.check_alive()  # never signalled: every worker still serves
