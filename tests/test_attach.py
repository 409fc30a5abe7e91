"""`run --attach` and `latency --attach`: a server the tool did not start (nginx started here by hand,
whose replies never name the worker; the built-in `serve`; a forked Python line server that answers
"hello" and closes) is driven, attributed from outside (socket owner, the kernel's accepts, or the reply
when it names the worker) and never signalled. The witnesses are the server's own: nginx's access log
with $pid, serve's tally, the line server's log of who accepted each connection. Pids that do not hold
the listener are refused before anything is driven; a worker that exits mid-run ends the run with what
was measured until then kept."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import OutputReader, assert_one_error_line, gone, run_cli, wait_for

from accept_order.errors import ServerUnavailable
from accept_order.servers.launched.nginx_config import MODULE_DIR, MODULES, nginx_binary

RUN_TIMEOUT_S = 60
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
LOG_TIMEOUT_S = 5.0
NGINX_WORKERS = 3

_SCRIPT = Path(sys.executable).with_name("accept-order")
ACCEPT_ORDER = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "accept_order"]


def nginx_or_skip() -> str:
    try:
        return nginx_binary()
    except ServerUnavailable as exc:
        pytest.skip(f"needs nginx and its Lua module: {exc}")


@dataclass
class Nginx:
    master: int
    workers: list[int]
    port: int
    directory: Path
    access_log: Path
    error_log: Path

    def log_offset(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def logged_pids(self, offset: int, count: int) -> list[int]:
        """The pids of the access log's lines after `offset`, once there are `count` of them (a line is
        written in the log phase, which may come just after the client has read its answer)."""

        def lines() -> list[str]:
            with open(self.access_log, "rb") as f:
                f.seek(offset)
                return f.read().decode().splitlines()

        got = wait_for(lines, lambda ls: len(ls) >= count, LOG_TIMEOUT_S, f"{count} access log lines")
        return [int(line.split()[0]) for line in got]

    def signals_received(self) -> list[str]:
        """What nginx says it received (at notice level a master logs every signal, SIGCHLD included)."""
        return [line for line in self.error_log.read_text().splitlines() if "signal" in line]


def nginx_config(directory: Path, port: int) -> str:
    modules = "".join(f"load_module {os.path.join(MODULE_DIR, m)};\n" for m in MODULES)
    temps = "".join(f"    {kind}_temp_path {directory}/{kind};\n" for kind in ("proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""{modules}daemon off;
master_process on;
worker_processes {NGINX_WORKERS};
pid {directory}/nginx.pid;
error_log {directory}/error.log notice;
events {{
    worker_connections 1024;
}}
http {{
    log_format by_worker '$pid $remote_port';
    access_log {directory}/access.log by_worker;
    client_body_temp_path {directory}/client_body;
{temps}    server {{
        listen 127.0.0.1:{port};
        location / {{
            default_type text/plain;
            content_by_lua_block {{
                ngx.say("hello, world")
            }}
        }}
    }}
}}
"""


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def nginx(tmp_path: Path, free_port: int) -> Iterator[Nginx]:
    """nginx started by hand, as an operator would: its own directory, config and logs; the tool is told
    only its pid and port. Ended here, whatever the test did."""
    binary = nginx_or_skip()
    directory = tmp_path / "nginx"
    directory.mkdir()
    conf = directory / "nginx.conf"
    conf.write_text(nginx_config(directory, free_port))
    errlog = directory / "error.log"
    proc = subprocess.Popen(
        [binary, "-e", str(errlog), "-p", str(directory), "-c", str(conf)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    try:

        def started() -> tuple[int | None, list[int], bool]:
            kids = [p.pid for p in psutil.Process(proc.pid).children()] if proc.poll() is None else []
            return proc.poll(), sorted(kids), proc.poll() is None and accepts(free_port)

        def ready(state: tuple[int | None, list[int], bool]) -> bool:
            if state[0] is not None:
                pytest.fail(f"nginx exited with {state[0]}: {errlog.read_text() if errlog.exists() else ''}")
            return len(state[1]) == NGINX_WORKERS and state[2]

        _, workers, _ = wait_for(started, ready, START_TIMEOUT_S, "nginx's 3 workers and its port")
        yield Nginx(proc.pid, workers, free_port, directory, directory / "access.log", errlog)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)  # graceful: workers finish, master exits
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                workers = [p.pid for p in psutil.Process(proc.pid).children()]  # killed, it cannot stop them
                for pid in workers:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                proc.kill()
                proc.wait(STOP_TIMEOUT_S)
        wait_for(lambda: gone(workers), bool, STOP_TIMEOUT_S, "nginx's workers to exit")


def in_session(sid: int) -> list[str]:
    """Processes still running in session `sid` (the tool's run started one): what it left behind."""
    left = []
    for proc in psutil.process_iter(["pid", "status", "cmdline"]):
        try:
            if os.getsid(proc.pid) == sid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                left.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])}")
        except (OSError, psutil.Error):
            continue
    return left


def accept_order(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script in a session of its own, so that anything it leaves running can be found."""
    proc = subprocess.Popen(
        [*ACCEPT_ORDER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    wait_for(lambda: in_session(proc.pid), lambda left: not left, 3, "no process left by the run")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def check_untouched(server: Nginx) -> None:
    """Master and the same workers still running (none respawned), and no signal reached nginx."""
    assert alive(server.master)
    assert sorted(p.pid for p in psutil.Process(server.master).children()) == server.workers
    assert all(alive(pid) for pid in server.workers)
    assert server.signals_received() == []


def run_attached(server: Nginx, attach: str, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    offset = server.log_offset()
    # The exact form other checks use: --attach PID --port P --protocol http -n N --json FILE
    done = accept_order(
        "run", "--attach", attach, "--port", str(server.port), "--protocol", "http", "-n", "40", "--json", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert "served 40, failed 0, driven 40" in done.stdout, done.stdout
    doc = json.loads(out.read_text())
    records = doc["records"]
    assert len(records) == 40
    assert [r["error"] for r in records] == [None] * 40
    assert doc["server"]["server"] == "attached"
    # attributed without the server's cooperation (its reply is "hello, world"): nginx's own log agrees
    pids = [r["pid"] for r in records]
    assert pids == server.logged_pids(offset, 40)
    assert [r["pid"] for r in records] == [server.workers[r["worker"]] for r in records]
    check_untouched(server)


def test_run_attach_master_pid(nginx: Nginx, tmp_path: Path) -> None:
    run_attached(nginx, str(nginx.master), tmp_path)


def test_run_attach_worker_pids(nginx: Nginx, tmp_path: Path) -> None:
    run_attached(nginx, ",".join(map(str, nginx.workers)), tmp_path)


def test_run_attach_builtin_serve(free_port: int, tmp_path: Path) -> None:
    serve = subprocess.Popen(
        [*ACCEPT_ORDER, "serve", "--mode", "blocking", "--workers", "3", "--port", str(free_port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    out = OutputReader(serve.stdout)  # type: ignore[arg-type]
    err = OutputReader(serve.stderr)  # type: ignore[arg-type]
    try:
        out.wait_for(r"try: ", START_TIMEOUT_S)
        banner = [int(p) for p in re.findall(r"worker \d+ pid (\d+)", out.text)]
        assert len(banner) == 3, out.text
        result = tmp_path / "run.json"
        done = accept_order(
            "run", "--attach", str(serve.pid), "--port", str(free_port), "--protocol", "line", "-n", "12",
            "--json", str(result),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        records = json.loads(result.read_text())["records"]
        assert [r["error"] for r in records] == [None] * 12
        workers = [r["worker"] for r in records]
        assert workers == [0, 1, 2] * 4  # blocking accept() wakes its sleepers first in, first out
        assert [r["pid"] for r in records] == [banner[w] for w in workers]
        assert serve.poll() is None and all(alive(pid) for pid in banner)  # attached, not stopped
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(STOP_TIMEOUT_S)
    assert serve.returncode == 0, err.finish()
    tally = out.finish()
    match = re.search(r"Sequence: ([\d ]+)", tally)
    assert match, tally
    assert [int(w) for w in match.group(1).split()] == workers


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--attach", "999999999", "--port", "80"], ["--attach", "no process 999999999"]),
        (["--attach", "{pid}"], ["--port"]),
        (["--attach", "{pid}", "--port", "8080", "--server", "nginx"], ["--server"]),
        (["--attach", "{pid}", "--port", "8080", "--workers", "4"], ["--workers"]),
        (["--attach", "abc"], ["--attach", "abc"]),
    ],
    ids=["no-such-process", "no-port", "server", "workers", "not-a-pid"],
)
def test_run_attach_refusals(args: list[str], fragments: list[str]) -> None:
    argv = ["run", *(a.replace("{pid}", str(os.getpid())) for a in args)]
    assert_one_error_line(run_cli(argv), 2, *fragments)


def test_latency_attach_counts_from_the_kernel(nginx: Nginx, tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    offset = nginx.log_offset()
    done = accept_order(
        "latency", "--attach", str(nginx.master), "--port", str(nginx.port), "--protocol", "http", "-n", "3000",
        "-c", "10", "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    assert doc["summary"]["count"] == 3000
    assert doc["errors"] == {}
    pids = [c["pid"] for c in doc["counters"]]
    assert sorted(pids) == nginx.workers
    logged = Counter(nginx.logged_pids(offset, 3000))
    assert sum(logged.values()) == 3000
    check_untouched(nginx)
    counts = doc["evidence"]["accept_counts"]
    if not counts["available"]:
        pytest.skip(f"no kernel accept counts here, so no per-worker comparison: {counts['why']}")
    assert sum(doc["served"]) == 3000
    assert doc["served"] == [logged[pid] for pid in pids]
    assert {int(pid): n for pid, n in counts["counts"].items()} == dict(logged)


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


def test_attach_refuses_pids_that_do_not_hold_the_listener(line_servers: Any, free_port: int) -> None:
    """pid 1, kernel threads, a sleep, the right server on the wrong port, one worker of three: each one
    line, exit 2, naming who does hold the listener (or that nobody listens there)."""
    server = line_servers()
    where = f"127.0.0.1:{server.port}"
    held = f"it is held by pid {server.master} ("
    cases = [
        (["--attach", "1"], ["pid 1 (", f"no listener on {where}", held]),
        (["--attach", str(kthreadd())], ["pid 2 (kthreadd) and its", f"no listener on {where}", held]),
        (["--attach", str(server.master), "--port", str(free_port)], [f"nobody listens on 127.0.0.1:{free_port}"]),
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
            assert_one_error_line(run_cli([*argv, "-n", "3"]), 2, "--attach", *fragments)
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
        result, 2, f"pid {a.master} (", "and its 2 children hold no listener", f"it is held by pid {b.master} ("
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
    assert doc["evidence"]["worker_exit"]["pid"] == leaver and doc["evidence"]["worker_exit"]["worker"] == 1
    served = [r["pid"] for r in doc["records"] if r["error"] is None]
    accepted = server.accepted()
    assert accepted.count(leaver) == 2 and served.count(leaver) == 2
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
