"""inspect of a Puma whose workers are all serving: Debian's puma 5.6.5 ('-w 2 -t 1:1', both workers held in the
app's sleep, 2 connections queued) read 'puma, 0 workers', every role 'process', and 'the server has taken its
listeners out of its epolls (Apache's event MPM ...)'. The epoll threads it saw are Puma's reactors, which never had
the listener; each worker's 'puma srv' thread selects on it and accepts, and with its one pool thread busy it waits
for that thread (a futex) instead. Puma's kind names that thread (ServerKind.listener_threads), so its other threads
are no sign of a listener taken out, and the workers read as the master's, busy.

Here Debian's puma with 2 workers of one thread each, whose app sleeps 60 s, and 4 connections: the kernel shows
both workers' 'puma srv' threads in futex (or ppoll), not select, and their reactors in epoll_wait before inspect
looks."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import OutputReader, run_cli, wait_for
from puma_by_hand import TIMEOUT_S, control, puma

FUTEX, PPOLL, EPOLL_WAIT = (
    "202",
    "271",
    "232",
)  # x86_64's syscall numbers, the first field of /proc/PID/task/TID/syscall
# where a Ruby thread waiting for its pool sleeps: a futex, or ppoll where it holds Ruby's signal descriptor, which
# one sleeping thread at a time waits on (Ruby 3.1's native_sleep): 'puma srv' in ppoll failed this wait in 1 of 5 runs
WAITS_FOR_POOL = {FUTEX, PPOLL}
SELECTS = {"23", "270"}  # select, pselect6: what Ruby's IO.select waits in
APP = 'run lambda { |env| sleep 60; [200, {"Content-Length" => "4"}, ["late"]] }\n'
QUEUED = 2  # connections queued on the listener beside the one held in each worker's one thread

pytestmark = [
    pytest.mark.skipif(shutil.which("puma") is None, reason="needs Debian's puma (apt-get install puma)"),
    pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86_64's syscall numbers"),
]


def _threads(pid: int) -> dict[str, str]:
    """Each thread of `pid` by its name, what it waits in (its syscall number), as the kernel says now."""
    calls: dict[str, str] = {}
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            name = (task / "comm").read_text().strip()
            calls[name] = (task / "syscall").read_text().split(" ", 1)[0]
    except OSError:
        return {}
    return calls


@contextmanager
def _puma(directory: Path, workers: int = 2, *extra: str) -> Iterator[tuple[subprocess.Popen[str], OutputReader, int]]:
    """Puma with `workers` of one thread each (0: single mode, its one process serving; `extra`: more options), its
    log and its port, until the block ends (its session killed)."""
    with puma(directory, APP, "-w", str(workers), "-t", "1:1", *extra) as started:
        yield started


def _workers(log: OutputReader) -> list[int]:
    booted = r"Worker \d \(PID: (\d+)\) booted"
    log.wait_for(f"(?s){booted}.*{booted}", TIMEOUT_S)
    return [int(pid) for pid in re.findall(booted, log.text)]


@contextmanager
def _held(port: int, workers: list[int]) -> Iterator[None]:
    """QUEUED connections more than `workers` have threads, each sending its request, once each worker's server
    thread waits in select; the block runs when the kernel shows each waiting for its busy pool instead, and the
    connections are closed as it ends."""
    clients: list[socket.socket] = []
    try:
        _hold(port, workers, clients)
        yield
    finally:
        for client in clients:
            client.close()


def _hold(port: int, workers: list[int], clients: list[socket.socket]) -> None:
    wait_for(
        lambda: [_threads(pid).get("puma srv") for pid in workers],
        lambda calls: set(calls) <= SELECTS,
        TIMEOUT_S,
        "the workers' server threads in select, on the listener",
    )
    for _ in range(len(workers) + QUEUED):
        client = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        client.sendall(b"GET / HTTP/1.0\r\n\r\n")
        clients.append(client)
    wait_for(
        lambda: [_threads(pid) for pid in workers],
        lambda threads: all(
            t.get("puma srv") in WAITS_FOR_POOL and t.get("puma reactor") == EPOLL_WAIT for t in threads
        ),
        TIMEOUT_S,
        "the workers' server threads waiting for their busy pool (futex or ppoll), their reactors in epoll_wait",
    )


@pytest.fixture
def puma_busy(tmp_path: Path) -> Iterator[tuple[int, list[int]]]:
    with _puma(tmp_path) as (proc, log, port):
        workers = _workers(log)
        with _held(port, workers):
            yield proc.pid, workers


def _worker_rows(out: str) -> dict[int, list[str]]:
    """'How each worker waits' rows by pid: w0 PID TID ROLE ..."""
    return {
        int(line.split()[1]): line.split()
        for line in out.splitlines()
        if re.match(r"w\d+$", (line.split() or [""])[0]) and len(line.split()) > 3
    }


def test_inspect_names_the_busy_workers_of_a_puma_all_serving(puma_busy: tuple[int, list[int]]) -> None:
    master, workers = puma_busy
    result = run_cli(["inspect", str(master), "--samples", "1"])
    out = result.output
    assert result.exit_code == 0, out
    assert f"puma, master pid {master}, 2 workers" in out.splitlines()[0], out
    assert "taken its listeners out" not in out, out
    assert "no thread waits on a listener at this moment (all busy?)" in out, out
    rows = _worker_rows(out)
    assert sorted(rows) == sorted(workers), out
    for pid in workers:
        server_thread = next(t.name for t in Path(f"/proc/{pid}/task").iterdir() if _comm(t) == "puma srv")
        assert rows[pid][2:4] == [server_thread, "busy"], out


def test_inspect_names_the_busy_process_of_a_puma_in_single_mode(tmp_path: Path) -> None:
    """Puma's default (no -w): its one process accepts and serves, with no master. All busy it read 'puma, 0
    workers', its role 'process', and no worker's row: the busy rule looked for workers under a master."""
    with _puma(tmp_path, workers=0) as (proc, _, port), _held(port, [proc.pid]):
        result = run_cli(["inspect", str(proc.pid), "--samples", "1"])
    out = result.output
    assert result.exit_code == 0, out
    assert out.splitlines()[0].endswith("puma, 1 worker"), out
    assert "taken its listeners out" not in out, out
    assert "no thread waits on a listener at this moment (all busy?)" in out, out
    rows = _worker_rows(out)
    assert list(rows) == [proc.pid] and rows[proc.pid][3] == "busy", out


def _ctl_selects(pid: int) -> None:
    wait_for(lambda: _threads(pid).get("puma ctl"), lambda call: call in SELECTS, TIMEOUT_S, "'puma ctl' in select")


def test_inspect_takes_no_control_server_for_a_worker_of_a_puma_all_serving(tmp_path: Path, free_port: int) -> None:
    """The master's 'puma ctl' thread, the only one waiting on a listener while both workers served, read 'puma, 3
    workers', the master as w0 'listens', and 'Mechanism: select ... only one worker waits for connections: it takes
    every one', of a master that accepts none on the app's port."""
    with _puma(tmp_path, 2, *control(free_port)) as (proc, log, port):
        workers = _workers(log)
        with _held(port, workers):
            _ctl_selects(proc.pid)
            result = run_cli(["inspect", str(proc.pid), "--samples", "1"])
    out = result.output
    assert result.exit_code == 0, out
    assert out.splitlines()[0].endswith(f"puma, master pid {proc.pid}, 2 workers"), out
    assert "no thread waits on a listener at this moment (all busy?)" in out, out
    rows = _worker_rows(out)
    assert sorted(rows) == sorted(workers) and {row[3] for row in rows.values()} == {"busy"}, out


def test_inspect_reads_a_single_mode_puma_with_a_control_server_as_one_worker(tmp_path: Path, free_port: int) -> None:
    """At rest its 'puma ctl' thread, selecting on the control port, read as a second worker: 'puma, 2 workers', and
    'herds: yes' with the cluster's Why ('every Puma worker inherits the master's listening socket')."""
    with _puma(tmp_path, 0, *control(free_port)) as (proc, _, _):
        wait_for(lambda: _threads(proc.pid).get("puma srv"), lambda call: call in SELECTS, TIMEOUT_S, "'puma srv'")
        _ctl_selects(proc.pid)
        result = run_cli(["inspect", str(proc.pid), "--samples", "1"])
    out = result.output
    assert result.exit_code == 0, out
    assert out.splitlines()[0].endswith("puma, 1 worker"), out
    assert "herds: no" in out and list(_worker_rows(out)) == [proc.pid], out


def _comm(task: Path) -> str:
    try:
        return (task / "comm").read_text().strip()
    except OSError:
        return ""


def test_inspect_reads_a_puma_at_rest_as_select(tmp_path: Path) -> None:
    with _puma(tmp_path) as (proc, log, _):
        workers = _workers(log)
        wait_for(
            lambda: [_threads(pid).get("puma srv") for pid in workers],
            lambda calls: set(calls) <= SELECTS,
            TIMEOUT_S,
            "both workers' server threads in select, on the listener",
        )
        result = run_cli(["inspect", str(proc.pid), "--samples", "1"])
    out = result.output
    assert result.exit_code == 0, out
    assert f"puma, master pid {proc.pid}, 2 workers" in out.splitlines()[0], out
    assert "Mechanism: select" in out, out
    assert re.search(r"2 workers sleep in p?select6?\(\) holding the listener", out), out
    assert sorted(_worker_rows(out)) == sorted(workers), out
