"""How many connections a server's worker accepts each time it wakes, by the kernel's count: its workers stopped
(SIGSTOP) while connections queue, bpftrace attached, the workers let go, every connection answered, and bpftrace's
count of accepts between a worker's waits read. Shared by the tests that hold a mode's words or its own batch
(ModeInfo.own_batch) to that count; each starts its server its own way (uvicorn by hand: `started_uvicorn`).
Imported by name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest
from conftest import OutputReader, wait_for

from accept_order.probes.accepts import ATTACH_TIMEOUT_S, KICK_S, ensure_tracefs
from accept_order.probes.bpftrace_messages import ATTACHED_ENV

BPFTRACE = shutil.which("bpftrace")
REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
UVICORN_APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"3")]})
    await send({"type": "http.response.body", "body": b"ok\\n"})
"""


def program(
    workers: list[int], accepts: Sequence[str] = ("accept4",), waits: Sequence[str] = ("epoll_wait", "epoll_pwait")
) -> str:
    """Per wakeup (one of the `waits` entered again), how many of the `accepts` calls a worker's thread got
    (@runs[accepts] = wakeups); the accepts that failed after one that succeeded in the same wakeup (@eagain: the loop
    asked again and found the queue empty), and those that failed first (@missed: another worker, woken for the
    same connection, took it; two workers waiting on one listener both wake, more often on a busy machine)."""
    pred = " || ".join(f"pid == {w}" for w in workers)
    exits = ", ".join(f"tracepoint:syscalls:sys_exit_{call}" for call in accepts)
    enters = ", ".join(f"tracepoint:syscalls:sys_enter_{call}" for call in waits)
    return (
        f"{exits} /{pred}/ {{ if (args->ret >= 0) {{ @run[tid]++; }}"
        " else if (@run[tid] > 0) { @eagain = count(); } else { @missed = count(); } }\n"
        f"{enters} /{pred}/ {{ if (@run[tid] > 0) {{ @runs[@run[tid]] = count(); }} @run[tid] = 0; }}\n"
        # the maps printed by END itself, between its sentinels: the test reads them (see counted_after_queueing)
        'END { printf("begin\\n"); clear(@run); print(@runs); print(@eagain); print(@missed); printf("done\\n"); }\n'
    )


def counted_after_queueing(
    workers: list[int], address: tuple[str, int], queued: int, script: str, reply: bytes, timeout_s: float = 10
) -> str:
    """bpftrace's output of `script` over the workers let go with `queued` connections waiting for them at
    `address` (each answered with a reply starting `reply`), queued once every thread of the workers has stopped.
    The workers are let go whatever happens.

    bpftrace 0.17 twice in fresh-clone CI runs did not run END within 30 s of SIGINT (the machine busy): it acts on
    SIGINT only when the signal interrupts its epoll_wait (probes/bpftrace_readings.py), so it is sent SIGUSR1 every
    KICK_S until END has run, as the tool's stop() does; should END still not come, the witness is taken once more,
    afresh, and a second such bpftrace fails the test."""
    try:
        return _counted_once(workers, address, queued, script, reply, timeout_s)
    except pytest.fail.Exception:
        return _counted_once(workers, address, queued, script, reply, timeout_s)


def _counted_once(
    workers: list[int], address: tuple[str, int], queued: int, script: str, reply: bytes, timeout_s: float
) -> str:
    assert BPFTRACE is not None and ensure_tracefs()[0]
    tracer: subprocess.Popen[str] | None = None
    try:
        for w in workers:
            os.kill(w, signal.SIGSTOP)
        wait_for(lambda: all(all_stopped(w) for w in workers), bool, timeout_s, "every thread of the workers stopped")
        clients = [socket.create_connection(address, timeout=timeout_s) for _ in range(queued)]
        env = {**os.environ, ATTACHED_ENV: "1"}
        # stderr too: bpftrace 0.17 names the env var there once every probe is attached
        argv = [BPFTRACE, "-B", "line", "-e", script]
        tracer = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
        assert tracer.stdout is not None
        reader = OutputReader(tracer.stdout)
        reader.wait_for(re.escape(ATTACHED_ENV), ATTACH_TIMEOUT_S)
        for w in workers:
            os.kill(w, signal.SIGCONT)
        for c in clients:
            c.sendall(REQUEST)
            assert c.recv(100).startswith(reply)
            c.close()
        tracer.send_signal(signal.SIGINT)
        # END has printed the maps once 'done' is out: read up to it, not to bpftrace's exit, which only detaches.
        # Each SIGUSR1 that lands first prints the maps too, before END's 'begin': only END's own are read.
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while not re.search(r"(?m)^done$", reader.text):
            try:
                reader.wait_for(r"(?m)^done$", KICK_S)
            except pytest.fail.Exception:
                if time.monotonic() > deadline or reader.closed:
                    raise
                tracer.send_signal(signal.SIGUSR1)
        return reader.text.split("\ndone\n", 1)[0].rsplit("\nbegin\n", 1)[-1]
    finally:
        if tracer is not None and tracer.poll() is None:
            tracer.kill()
            tracer.wait()
        for w in workers:
            try:
                os.kill(w, signal.SIGCONT)
            except ProcessLookupError:
                pass


def all_stopped(pid: int) -> bool:
    """Every thread of `pid` stopped ('T' in its stat): a group stop is not done when kill() returns, and a thread
    still running accepts connections before bpftrace is there to count them (HAProxy's 2 threads: a run counted 3 of
    40; tests/test_accepts_per_wakeup_stopped.py)."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            continue  # a thread that exited meanwhile
    return bool(states) and all(state in ("T", "t") for state in states)


def runs_of(out: str) -> dict[int, int]:
    """Accepts in one wakeup -> how many wakeups took that many, from bpftrace's output."""
    return {int(k): int(v) for k, v in re.findall(r"^@runs\[(\d+)\]: (\d+)$", out, re.MULTILINE)}


def eagains_of(out: str) -> int:
    """The accepts that failed after one that succeeded in the same wakeup (EAGAIN: the loop asked again and found
    the queue empty), from bpftrace's output."""
    return int((re.findall(r"^@eagain: (\d+)$", out, re.MULTILINE) or ["0"])[0])


def answers(port: int, reply: bytes) -> bool:
    """Whether the server on 127.0.0.1:`port` answers REQUEST with a reply starting `reply`: a reply, not only a
    handshake (a kernel's listen queue completes that before any worker runs)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
            probe.sendall(REQUEST)
            return probe.recv(100).startswith(reply)
    except OSError:
        return False


def started_uvicorn(tmp_path: Path, loop: str, port: int) -> tuple[subprocess.Popen[bytes], list[int]]:
    """uvicorn --workers 2 --loop `loop`, started by hand as its mode says, in a session of its own (the caller
    ends it: os.killpg), once both workers answer: (uvicorn, its workers)."""
    (tmp_path / "wakeup_app.py").write_text(UVICORN_APP)
    argv = [sys.executable, "-m", "uvicorn", "--workers", "2", "--loop", loop, "--http", "h11"]
    argv += ["--port", str(port), "--no-access-log", "--app-dir", str(tmp_path), "wakeup_app:app"]
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

    found = wait_for(
        lambda: (answers(port, b"HTTP/1.1 200"), workers()),
        lambda s: s[0] and len(s[1]) == 2,
        30.0,
        "uvicorn's 2 workers",
    )
    return server, found[1]


def counted_uvicorn(tmp_path: Path, loop: str, port: int, queued: int) -> str:
    """bpftrace's output (`program`'s) over uvicorn --loop `loop`'s two workers let go with `queued` connections
    waiting for them; uvicorn ended after."""
    server, workers = started_uvicorn(tmp_path, loop, port)
    try:
        return counted_after_queueing(workers, ("127.0.0.1", port), queued, program(workers), b"HTTP/1.1 200")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


# The tests that read counted_uvicorn_once: one xdist worker runs them all, so each loop is measured once a suite.
UVICORN_COUNTED = pytest.mark.xdist_group("uvicorn-counted")


# counted_uvicorn_once's measurements in this process, by (loop, queued)
_UVICORN_COUNTED: dict[tuple[str, int], str] = {}


def counted_uvicorn_once(tmp_path_factory: pytest.TempPathFactory, loop: str, queued: int) -> str:
    """counted_uvicorn's output for this loop and queue, measured once a process and handed to every test that asks
    (those marked UVICORN_COUNTED): test_uvicorn_accepts_per_wakeup holds the mode's words to it and
    test_model_own_batch the model's batch, each of the same count. A measurement (uvicorn's start, bpftrace's
    program loaded, the queue let go) is 0.8-1.3 CPU-s; a failed one is not kept, and the next test measures again.
    Its app is written under pytest's base temp, as tmp_path's are: pytest keeps the last few runs' and removes
    older ones, where a folder of tempfile's in /tmp stayed for good after a pytest killed outright (SIGKILL, or
    a SIGTERM, which runs no teardown or finally)."""
    key = (loop, queued)
    if key not in _UVICORN_COUNTED:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])  # the probe closed: free again for uvicorn, as free_port's is
        folder = tmp_path_factory.mktemp(f"uvicorn-counted-{loop}")
        _UVICORN_COUNTED[key] = counted_uvicorn(folder, loop, port, queued)
    return _UVICORN_COUNTED[key]
