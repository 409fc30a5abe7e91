"""observe of HAProxy -sf'd twice, the first newcomer soft-stopped before observe read it: still named, with its
accepts, and not said to have exited while it runs on.

observe reads each process its accept watch names once, while it runs (newcomers.py): this server's where it started
after the workers were chosen, in their namespace, holding one of its listeners. A newcomer -sf'd again soon after
its first accept (within a reading, 200 ms, or longer on a busy machine) had closed its listeners when it was read, so
it was taken for another server: its accepts were dropped, and the second newcomer, whose -sf names only it, was
called 'another server's on its port, not its reload' (by hand: 2 runs of 2). One that no longer holds the listener
is now this server's where it takes over from the workers watched (it names one with -sf). And a soft-stopped
newcomer that still runs, finishing a request it holds, was said to have 'exited before the window ended'.

Here observe's reading of newcomers is held back until the second newcomer has taken over (as a busy machine would):
the test decides the order, not a race. The witnesses are HAProxy's replies (each names its pid; one connection a
request), /proc/net/tcp with the fd tables (which process holds the listener), and /proc (the first newcomer runs on,
holding a request to a backend that never answers)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import wait_for
from haproxy_by_hand import answered_by_new
from haproxy_by_hand import started as haproxy_started
from network import pid_answering

from accept_order.experiments.observe import newcomers
from accept_order.experiments.observe.run import observe
from accept_order.servers.launched.base import free_port
from accept_order.servers.launched.haproxy import haproxy_missing

if haproxy_missing():
    pytest.skip(f"a real HAProxy: {haproxy_missing()}", allow_module_level=True)

REQUESTS = 10  # to each process in turn
TIMEOUT_S = 20.0
OBSERVE_CAP_S = 120.0  # the window ends when the driving is done; this only bounds a hang
LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def config(port: int, backend: int) -> str:
    """Two threads answering on `port` with their pid, but /hold, which goes to `backend` (which never answers): a
    request held there keeps a soft-stopped process running, its listeners closed."""
    return f"""global
    nbthread 2
defaults
    mode http
    timeout client 120s
    timeout server 120s
    timeout connect 10s
frontend f
    bind 127.0.0.1:{port}
    http-request return status 200 content-type text/plain lf-string "pid %pid\\n" unless {{ path /hold }}
    default_backend hold
backend hold
    server s 127.0.0.1:{backend}
"""


def holds_listener(pid: int, port: int) -> bool:
    """Whether `pid`'s fd table holds a listening socket on `port` (the kernel's table and the process's fds)."""
    listening = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
            listening.add(f"socket:[{fields[9]}]")
    try:
        held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except OSError:
        return False
    return bool(listening & held)


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


@contextlib.contextmanager
def held_request(port: int, backend: socket.socket) -> Iterator[None]:
    """A request to /hold, open at the backend (which never answers) until the block ends."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        backend.settimeout(TIMEOUT_S)
        with backend.accept()[0]:
            yield


def test_a_newcomer_soft_stopped_before_it_was_read_is_named_and_said_to_run_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port("127.0.0.1")
    backend = socket.create_server(("127.0.0.1", 0))
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, backend.getsockname()[1]))
    started: list[subprocess.Popen[bytes]] = []

    def start(*extra: str) -> int:
        started.append(haproxy_started(path, *extra))
        return started[-1].pid

    # observe reads no newcomer until `read` is set: the first is read after the second has taken over
    read = threading.Event()
    look = newcomers.Newcomers.look
    monkeypatch.setattr(newcomers.Newcomers, "look", lambda self, totals: look(self, totals) if read.is_set() else None)
    served: Counter[int] = Counter()
    news: list[int] = []
    first_runs = [False]
    window, done, kept = threading.Event(), threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def drive(old: int) -> None:
        try:
            if not window.wait(OBSERVE_CAP_S):
                return
            for _ in range(REQUESTS):
                served[pid_answering(port)] += 1
            start("-sf", str(old))
            news.append(answered_by_new(port, {old}, served))
            wait_for(lambda: holds_listener(old, port), lambda held: not held, TIMEOUT_S, "the old one's soft stop")
            for _ in range(REQUESTS):
                served[pid_answering(port)] += 1
            with held_request(port, backend):  # the first newcomer's: it runs on after the second -sf
                start("-sf", str(news[0]))
                news.append(answered_by_new(port, {old, news[0]}, served))
                wait_for(lambda: holds_listener(news[0], port), lambda h: not h, TIMEOUT_S, "the first's soft stop")
                for _ in range(REQUESTS):
                    served[pid_answering(port)] += 1
                read.set()  # observe's next look reads both newcomers: the first holds no listener by now
                first_runs[0] = running(news[0])
                done.set()
                kept.wait(OBSERVE_CAP_S)  # the request held to the window's end, the -sf'd processes alive
        except BaseException as exc:  # said by the test, not lost in the thread
            failed.append(exc)
        finally:
            done.set()

    try:
        old = start()
        wait_for(lambda: _answers(port), bool, TIMEOUT_S, "HAProxy answering")
        with held_request(port, backend):  # the one watched runs on through both reloads
            driver = threading.Thread(target=drive, args=(old,), daemon=True)
            driver.start()
            try:
                result = observe(port=port, duration_s=OBSERVE_CAP_S, on_snapshot=lambda _: window.set(), until=done)
                first_ran_at_end = running(news[0]) if news else False
            finally:
                kept.set()
            driver.join(OBSERVE_CAP_S)
    finally:
        for process in started:
            process.kill()
            process.wait(10)
        backend.close()
    assert not failed, failed
    if not result.traced:
        pytest.skip(f"no kernel count of who accepts: {result.notes}")
    first, second = news
    assert first_runs[0] and first_ran_at_end, "the first newcomer exited: its held request should have kept it"
    assert set(served) == {old, first, second}, served
    reload = result.reloaded
    assert reload is not None, result.notes
    assert reload.pids == (first, second), (reload, news)
    assert reload.takes_over is True, reload  # -sf in turn: the second names the first, which names the one watched
    # each its replies, and the first the held request too (accepted on the port, never answered)
    assert reload.accepts == (served[first] + 1, served[second]), (reload, served)
    assert reload.left == (first,), reload
    said = [note for note in result.notes if note.startswith("haproxy started pids ")]
    assert said and f"pid {first} " in said[0], result.notes
    assert "closed its listener before the window ended, and still ran as it ended" in said[0], said
    assert "exited before the window ended" not in said[0], said


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError):
        return pid_answering(port) > 0
    return False
