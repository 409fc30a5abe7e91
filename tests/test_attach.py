"""`run --attach` and `latency --attach`: a server the tool did not start (nginx started here by hand,
whose replies never name the worker; the built-in `serve`) is driven, attributed from outside (socket
owner, or the reply when it names the worker) and never signalled. The witnesses are the server's own:
nginx's access log with $pid, serve's tally. (test_attach_line.py: pids that hold no listener, a server
that closes at once, a worker that exits mid-run.)"""

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
from conftest import OutputReader, assert_one_error_line, child_processes, gone, run_cli, wait_for

from accept_order.core.errors import ServerUnavailable
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
            kids = [p.pid for p in child_processes(proc.pid)] if proc.poll() is None else []
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


# Connections of the kernel-count test: every count is compared exactly (the replies', the log's, the kernel's), so
# a thousand over 10 in flight tell a miscount as well as the 3,000 before, for a third of the load's CPU
COUNTED = 1000


def test_latency_attach_counts_from_the_kernel(nginx: Nginx, tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    offset = nginx.log_offset()
    done = accept_order(
        "latency", "--attach", str(nginx.master), "--port", str(nginx.port), "--protocol", "http", "-n", str(COUNTED),
        "-c", "10", "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    assert doc["summary"]["count"] == COUNTED
    assert doc["errors"] == {}
    pids = [c["pid"] for c in doc["counters"]]
    assert sorted(pids) == nginx.workers
    logged = Counter(nginx.logged_pids(offset, COUNTED))
    assert sum(logged.values()) == COUNTED
    check_untouched(nginx)
    counts = doc["evidence"]["accept_counts"]
    if not counts["available"]:
        pytest.skip(f"no kernel accept counts here, so no per-worker comparison: {counts['why']}")
    assert sum(doc["served"]) == COUNTED
    assert doc["served"] == [logged[pid] for pid in pids]
    assert {int(pid): n for pid, n in counts["counts"].items()} == dict(logged)
