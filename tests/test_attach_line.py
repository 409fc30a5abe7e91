"""`--attach` to a forked Python line server that answers "hello" (naming no worker) and closes at once:
pids that do not hold its listener are refused before anything is driven, naming who does; each
connection is attributed to the worker the kernel saw accept it; a worker that exits mid-run ends the
run with what was measured until then kept. The witness is the server's own log of who accepted what."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import OutputReader, assert_one_error_line, gone, run_cli, wait_for

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0

# A forked line server whose reply names no worker: each worker logs "pid client-port" (its own witness,
# written before the reply) then answers "hello" and closes at once. Worker LEAVER exits by itself after
# serving LEAVE_AFTER connections (-1: none does). Every worker dies with the master (PR_SET_PDEATHSIG).
LINE_SERVER = r"""
import ctypes, os, signal, socket, sys
port, workers, leaver, leave_after = (int(a) for a in sys.argv[1:5])
witness = sys.argv[5]
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(128)
log = os.open(witness, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
for index in range(workers):
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
        if os.getppid() == 1:
            os._exit(1)
        served = 0
        while True:
            conn, peer = listener.accept()
            os.write(log, f"{os.getpid()} {peer[1]}\n".encode())
            conn.sendall(b"hello\n")
            conn.close()
            served += 1
            if index == leaver and served == leave_after:
                os._exit(0)
print("ready", flush=True)
sys.stdin.read()
"""


@dataclass
class LineServer:
    master: int
    workers: list[int]  # in the order they were forked: the tool's worker indices
    port: int
    witness: Path

    def accepted(self) -> list[int]:
        """The pids of the workers that accepted each connection, in accept order (the server's own log)."""
        return [int(line.split()[0]) for line in self.witness.read_text().splitlines()]


@pytest.fixture
def line_servers(tmp_path: Path) -> Iterator[Any]:
    """start(workers=3, leaver=-1, leave_after=0) -> LineServer on a free port; all ended at teardown."""
    started: list[tuple[subprocess.Popen[str], list[int]]] = []

    def start(workers: int = 3, leaver: int = -1, leave_after: int = 0) -> LineServer:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        witness = tmp_path / f"accepted-{port}.log"
        proc = subprocess.Popen(
            [sys.executable, "-c", LINE_SERVER, str(port), str(workers), str(leaver), str(leave_after), str(witness)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append((proc, []))
        ready = OutputReader(proc.stdout)  # type: ignore[arg-type]
        ready.wait_for("ready", START_TIMEOUT_S)
        kids = sorted(psutil.Process(proc.pid).children(), key=lambda p: (p.create_time(), p.pid))
        pids = [p.pid for p in kids]
        started[-1][1].extend(pids)
        assert len(pids) == workers
        return LineServer(proc.pid, pids, port, witness)

    try:
        yield start
    finally:
        for proc, pids in started:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.kill()
            proc.wait(STOP_TIMEOUT_S)
            wait_for(lambda pids=pids: gone(pids), bool, STOP_TIMEOUT_S, "the line server's workers to exit")


def kthreadd() -> int:
    try:
        if Path("/proc/2/comm").read_text().strip() == "kthreadd":
            return 2
    except OSError:
        pass
    pytest.skip("pid 2 is not kthreadd here (a PID namespace)")


def pid_1_refused(where: str, held: str) -> list[str]:
    """What --attach 1 is refused with: pid 1 holds no listener, or, where even this root may not read its fd links
    (a sandbox's init: EACCES here), that it cannot tell whether it holds one."""
    hidden = ["cannot tell whether pid 1 (", f"holds the listener on {where}: its open files are not this user's"]
    try:
        fds = os.listdir("/proc/1/fd")
    except PermissionError:
        return hidden
    for fd in fds:
        try:
            os.readlink(f"/proc/1/fd/{fd}")
        except PermissionError:
            return hidden
        except OSError:
            pass  # closed meanwhile
    return ["pid 1 (", f"no listener on {where}", held]


def test_attach_refuses_pids_that_do_not_hold_the_listener(line_servers: Any, unlistened_port: int) -> None:
    """pid 1, kernel threads, a sleep, the right server on the wrong port, one worker of three: each one
    line, exit 1 (what the machine turned out to be, as observe's refusal of such a pid), naming who does hold the
    listener (or that nobody listens there)."""
    server = line_servers()
    where = f"127.0.0.1:{server.port}"
    held = f"it is held by pid {server.master} ("
    cases = [
        (["--attach", "1"], pid_1_refused(where, held)),
        (["--attach", str(kthreadd())], ["pid 2 (kthreadd) and its", f"no listener on {where}", held]),
        (
            ["--attach", str(server.master), "--port", str(unlistened_port)],
            [f"nobody listens on 127.0.0.1:{unlistened_port}"],
        ),
        (
            ["--attach", str(server.workers[1])],
            [f"held by pid {server.master} (", f"not only by pid {server.workers[1]} ("],
        ),
    ]
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        cases.append(
            (["--attach", str(sleeper.pid)], [f"pid {sleeper.pid} (sleep) holds no listener on {where}", held])
        )
        for args, fragments in cases:
            argv = ["run", *args] if "--port" in args else ["run", *args, "--port", str(server.port)]
            assert_one_error_line(run_cli([*argv, "-n", "3"]), 1, "--attach", *fragments)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert server.accepted() == []  # refused before a single connection was made


def test_latency_attach_refuses_another_servers_port(line_servers: Any) -> None:
    """`latency --attach A -p <B's port>` counted B's connections against A's workers (served 300, the
    workers' counts adding up to 0): now refused, naming B."""
    a, b = line_servers(2), line_servers(2)
    result = run_cli(["latency", "--attach", str(a.master), "--port", str(b.port), "-n", "300", "-c", "2"])
    assert_one_error_line(
        result, 1, f"pid {a.master} (", "and its 2 children hold no listener", f"it is held by pid {b.master} ("
    )
    assert a.accepted() == [] and b.accepted() == []


def test_run_attach_line_server_attributed_by_the_kernel(line_servers: Any, tmp_path: Path) -> None:
    """A server that answers "hello" and closes at once: its reply names no worker and the socket is gone
    before its holder can be looked up; each connection is attributed to the worker the kernel saw
    accept it, which is the worker the server itself logged, connection by connection."""
    server = line_servers(3)
    out = tmp_path / "run.json"
    result = run_cli(
        ["run", "--attach", str(server.master), "--port", str(server.port), "-n", "30", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    log = doc["evidence"]["accept_log"]
    if not log["available"]:
        pytest.skip(f"the kernel's accepts cannot be read here: {log['why']}")
    records = doc["records"]
    assert [r["error"] for r in records] == [None] * 30
    assert [r["pid"] for r in records] == server.accepted()
    assert [r["pid"] for r in records] == [server.workers[r["worker"]] for r in records]
    assert "served 30, failed 0, driven 30" in result.stdout
    assert "attributed to the worker the kernel saw accept" in result.stdout


def test_run_attach_worker_exit_keeps_what_was_measured(line_servers: Any, tmp_path: Path) -> None:
    """Worker 1 exits after its second connection: the run stops with one line naming it and when, exit 1,
    and the connections until then are reported and saved, marked interrupted."""
    server = line_servers(3, leaver=1, leave_after=2)
    leaver = server.workers[1]
    out = tmp_path / "run.json"
    result = run_cli(
        ["run", "--attach", str(server.master), "--port", str(server.port), "-n", "40", "--json", str(out)]
    )
    assert result.exit_code == 1, result.output
    last = result.stderr.splitlines()[-1]
    assert re.fullmatch(
        rf"accept-order: error: attached worker 1 \(pid {leaver}\) exited [\d.]+ s into the run; .*", last
    )
    assert "Stopped early: attached worker 1" in result.stdout
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True
    log = doc["evidence"]["accept_log"]
    if not log["available"]:  # the line server's replies name no worker: only the kernel's accepts place them
        pytest.skip(f"the kernel's accepts cannot be read here: {log['why']}")
    assert doc["evidence"]["worker_exit"]["pid"] == leaver and doc["evidence"]["worker_exit"]["worker"] == 1
    served = [r["pid"] for r in doc["records"] if r["error"] is None]
    accepted = server.accepted()
    errors = [(r["pid"], r["worker"], r["error"]) for r in doc["records"] if r["error"] is not None]
    assert accepted.count(leaver) == 2 and served.count(leaver) == 2, (accepted, served, errors)
    assert served == accepted[: len(served)]  # what was kept is what the server saw, in order
    assert len(doc["records"]) < 40


def test_latency_attach_worker_exit_keeps_what_was_measured(line_servers: Any, tmp_path: Path) -> None:
    """The same under latency's closed-loop load: the drivers' tallies until the exit are kept and saved."""
    server = line_servers(3, leaver=1, leave_after=100)
    leaver = server.workers[1]
    out = tmp_path / "latency.json"
    argv = ["latency", "--attach", str(server.master), "--port", str(server.port), "-n", "50000", "-c", "4"]
    result = run_cli([*argv, "--json", str(out)])
    assert result.exit_code == 1, result.output
    last = result.stderr.splitlines()[-1]
    assert re.fullmatch(
        rf"accept-order: error: attached worker 1 \(pid {leaver}\) exited [\d.]+ s into the run; .*", last
    )
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True
    assert doc["evidence"]["worker_exit"]["pid"] == leaver
    assert 100 <= doc["summary"]["count"] < 50000
    counts = doc["evidence"]["accept_counts"]
    if counts["available"]:  # the kernel saw the leaver accept exactly the 100 it served
        assert int(counts["counts"][str(leaver)]) == 100 == server.accepted().count(leaver)
