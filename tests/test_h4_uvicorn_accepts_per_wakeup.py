"""What each uvicorn loop does with a queue of connections when it wakes, against the kernel's own count.

The uvloop mode said its workers accept "until EAGAIN", as asyncio's do. bpftrace on the accept and epoll
tracepoints saw `uvicorn --workers 2 --loop uvloop` (uvloop 0.23) take 100 queued connections in 100 wakeups,
one accept4() each and never one that returned EAGAIN; `--loop asyncio` took them in two wakeups (79 and 21),
each loop ended by EAGAIN (asyncio's _accept_connection). Each mode's words now say what its loop does, and this
test holds them to the kernel's count: uvicorn started by hand as the mode says, its workers stopped while
connections queue, then let go under bpftrace."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import wait_for

from accept_order.probes.accepts import ensure_tracefs
from accept_order.probes.bpftrace_messages import ATTACHED_ENV
from accept_order.servers.launched.uvicorn import UVICORN_MODES, uvicorn_missing, uvloop_missing

BPFTRACE = shutil.which("bpftrace")
QUEUED = 30
APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"3")]})
    await send({"type": "http.response.body", "body": b"ok\\n"})
"""

pytestmark = [
    pytest.mark.skipif(uvicorn_missing() is not None, reason=str(uvicorn_missing())),
    pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None, reason="needs root and bpftrace"),
]


def program(workers: list[int]) -> str:
    """Per wakeup (an epoll wait entered again), how many accepts a worker's thread got; and its EAGAINs."""
    pred = " || ".join(f"pid == {w}" for w in workers)
    return (
        f"tracepoint:syscalls:sys_exit_accept4 /{pred}/ {{ if (args->ret >= 0) {{ @run[tid]++; }}"
        " else { @eagain = count(); } }\n"
        f"tracepoint:syscalls:sys_enter_epoll_wait, tracepoint:syscalls:sys_enter_epoll_pwait /{pred}/"
        " { if (@run[tid] > 0) { @runs[@run[tid]] = count(); } @run[tid] = 0; }\n"
        'END { clear(@run); printf("done\\n"); }\n'
    )


def started(tmp_path: Path, loop: str, port: int) -> tuple[subprocess.Popen[bytes], list[int]]:
    (tmp_path / "h4app.py").write_text(APP)
    argv = [sys.executable, "-m", "uvicorn", "--workers", "2", "--loop", loop, "--http", "h11"]
    argv += ["--port", str(port), "--no-access-log", "--app-dir", str(tmp_path), "h4app:app"]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def workers() -> list[int]:
        # the workers are the children that hold the listening socket (the resource tracker holds none)
        found = []
        for child in psutil.Process(server.pid).children():
            try:
                if any(c.status == psutil.CONN_LISTEN for c in child.net_connections("tcp")):
                    found.append(child.pid)
            except psutil.Error:
                continue
        return found

    def answered() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return s.recv(100).startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    found = wait_for(lambda: (answered(), workers()), lambda s: s[0] and len(s[1]) == 2, 30.0, "uvicorn's 2 workers")
    return server, found[1]


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_each_loops_words_match_what_the_kernel_counts(tmp_path: Path, free_port: int, loop: str) -> None:
    if loop == "uvloop" and uvloop_missing():
        pytest.skip(str(uvloop_missing()))
    assert BPFTRACE is not None and ensure_tracefs()[0]
    server, workers = started(tmp_path, loop, free_port)
    tracer: subprocess.Popen[bytes] | None = None
    try:
        for w in workers:
            os.kill(w, signal.SIGSTOP)
        clients = [socket.create_connection(("127.0.0.1", free_port), timeout=10) for _ in range(QUEUED)]
        tracer = subprocess.Popen(
            [BPFTRACE, "-B", "line", "-e", program(workers)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, ATTACHED_ENV: "1"},
        )
        assert tracer.stdout is not None
        for line in tracer.stdout:  # it names the env var once every probe is attached
            if ATTACHED_ENV.encode() in line:
                break
        for w in workers:
            os.kill(w, signal.SIGCONT)
        for c in clients:
            c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert c.recv(100).startswith(b"HTTP/1.1 200")
            c.close()
        tracer.send_signal(signal.SIGINT)
        out = tracer.communicate(timeout=30)[0].decode()
    finally:
        if tracer is not None and tracer.poll() is None:
            tracer.kill()
            tracer.wait()
        for w in workers:
            try:
                os.kill(w, signal.SIGCONT)
            except ProcessLookupError:
                pass
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    runs = {int(k): int(v) for k, v in re.findall(r"^@runs\[(\d+)\]: (\d+)$", out, re.MULTILINE)}
    eagain = int((re.findall(r"^@eagain: (\d+)$", out, re.MULTILINE) or ["0"])[0])
    assert sum(k * v for k, v in runs.items()) == QUEUED, out
    why = UVICORN_MODES[loop].why
    if loop == "uvloop":  # one accept a wakeup, and it never asks again to find the queue empty
        assert set(runs) == {1} and eagain == 0, out
        assert "one connection per wakeup" in why and "until EAGAIN" not in why, why
    else:  # the queue taken in few wakeups, each ended by an accept that found it empty
        assert max(runs) > 1 and eagain >= 1, out
        assert "until EAGAIN" in why, why
