"""`inspect` names the accept mechanism of a running server from /proc alone.

The self-check: every mode of every server kind this tool launches (those installed here), started as a
run starts it, is named by `inspect` of its pid as the mechanism it was started in. Where /proc cannot
tell two modes apart, the mode's `seen_as` says which one /proc shows, and the test holds inspect to that:
- reuseport-cpu and incoming-cpu look like reuseport (a BPF program or SO_INCOMING_CPU marks on the group
  are not in /proc), and the report says so;
- uWSGI's reuse-port is its default (SO_REUSEPORT on the one shared socket changes nothing /proc shows);
- Node's SCHED_RR is fd-pass (the primary accepts and hands connections over IPC), SCHED_NONE and
  HAProxy's threads are epoll-herd (every waiter's epoll holds the one listener without EPOLLEXCLUSIVE),
  HAProxy's shards are reuseport, uWSGI's thunder lock is accept-mutex (a lock decides who waits).
Then servers started by hand, which this tool knows nothing about: a plain Python blocking-accept server
and nginx from a hand-written config (through the CLI, with --json and show).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OutputReader, assert_one_error_line, run_cli, wait_for
from nginx_by_hand import established_held, nginx_by_hand, syscall_number

from accept_order.core.spec import ServerSpec
from accept_order.experiments.inspect.run import inspect
from accept_order.probes.fd_table import IORING_OP_ACCEPT, parse_epoll_fdinfo, parse_uring_fdinfo
from accept_order.probes.proc_waits import GENERIC, X86_64, parse_fd_set, parse_pollfds, parse_syscall
from accept_order.servers.registry import KINDS, checked, launched_kinds, make_target, runnable

WORKERS = 2
EVERY_MODE = [(kind, mode) for kind in launched_kinds() for mode in KINDS[kind].modes()]


@pytest.mark.parametrize(("kind", "mode"), EVERY_MODE, ids=[f"{k}-{m}" for k, m in EVERY_MODE])
def test_inspect_names_the_mode_a_server_was_started_in(kind: str, mode: str) -> None:
    available, skipped = runnable(kind, [mode])
    if not available:
        pytest.skip(skipped[mode])
    target = make_target(checked(ServerSpec(kind=kind, mode=mode, workers=WORKERS)))
    workers = KINDS[kind].fixed_workers or WORKERS  # Caddy: one process, one waiter
    try:
        target.start()
        master = getattr(target, "master", None)
        # the master where there is one; the built-in workers' parent is this test: a worker's pid then
        pid = master.pid if master is not None else target.pids[-1]
        # A started server's last worker may not wait for connections yet on a busy machine (uvicorn's second
        # worker still importing: one waiter, read as epoll, not epoll-herd): looked at again until all of them do.
        result = wait_for(lambda: inspect(pid=pid, samples=2), lambda r: r.workers >= workers, 60, "the workers")
    finally:
        target.close()
    info = KINDS[kind].mode(mode)
    assert result.mechanism.name == info.mechanism, result.mechanism.evidence
    assert result.workers == workers, result.units
    assert all(row.waited_by for row in result.listeners if row.address == "127.0.0.1"), result.listeners
    if kind != "builtin":
        assert result.recognised == kind and mode in result.mechanism.modes
        assert {c.mode for c in result.changes} == set(KINDS[kind].modes()) - set(result.mechanism.modes)
    if info.mechanism == "reuseport":
        assert any("BPF" in note for note in result.mechanism.unseen)


BLOCKING_SERVER = """
import os, socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
for _ in range(2):
    if os.fork() == 0:
        while True:
            s.accept()[0].close()
print(s.getsockname()[1], flush=True)
os.wait()
"""


@pytest.fixture
def blocking_server() -> Iterator[tuple[int, int]]:
    """(pid, port) of a plain Python server: a parent and two forked children blocked in accept()."""
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKING_SERVER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        port = int(OutputReader(proc.stdout).wait_for(r"(\d+)\n", 10)[1])
        children = wait_for(
            lambda: [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()],
            lambda pids: len(pids) == 2 and all(syscall_number(p) in ("43", "288") for p in pids),
            10,
            "two children blocked in accept",
        )
        assert children
        yield proc.pid, port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_a_hand_started_blocking_server_is_named_blocking(blocking_server: tuple[int, int]) -> None:
    pid, port = blocking_server
    by_pid = inspect(pid=pid, samples=1)
    by_port = inspect(port=port, samples=1)
    for result in (by_pid, by_port):
        assert result.mechanism.name == "blocking" and result.recognised is None
        assert [u.call for u in result.units] == ["accept4", "accept4"]
        assert [p.role for p in result.processes] == ["master", "worker", "worker"]
        assert result.listeners[0].waited_by == ("w0", "w1")
    assert not by_pid.changes and "compare --modes all" in by_pid.measure_all


THREADED_SELECT_SERVER = """
import os, select, socket, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
for _ in range(2):
    if os.fork() == 0:
        r, w = os.pipe()
        p = select.poll()
        p.register(r, select.POLLIN)
        threading.Thread(target=p.poll, daemon=True).start()  # a thread that waits on its pipe only
        while True:
            select.select([s, r], [], [])
            try:
                s.accept()[0].close()
            except BlockingIOError:
                pass
print(s.getsockname()[1], flush=True)
os.wait()
"""


def test_the_sets_of_poll_and_select_are_read(free_port: int) -> None:
    """Each child waits for the listener in select() while a second thread polls a pipe: the sets, read from
    memory (as root), tell the select threads (the workers) from the poll threads (waiting on no listener)."""
    if os.geteuid() != 0:
        pytest.skip("another process's memory is read as root")
    proc = subprocess.Popen(
        [sys.executable, "-c", THREADED_SELECT_SERVER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        OutputReader(proc.stdout).wait_for(r"(\d+)\n", 10)
        wait_for(
            lambda: [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()],
            lambda pids: len(pids) == 2 and all(len(os.listdir(f"/proc/{p}/task")) == 2 for p in pids),
            10,
            "two children with two threads each",
        )
        result = wait_for(lambda: inspect(pid=proc.pid, samples=1), lambda r: r.workers == 2, 10, "two workers")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert result.mechanism.name == "select" and not result.mechanism.unseen
    assert {u.call for u in result.units} <= {"select", "pselect6"}
    assert all(u.on == "its select set (2 fds): the listener" for u in result.units), result.units
    assert all(u.tid == u.pid for u in result.units)  # the main threads select; the poll threads are no workers


NGINX_CONF = """daemon off;
master_process on;
worker_processes 2;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; {events} }}
http {{
    access_log off;
    client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};
    uwsgi_temp_path {d}; scgi_temp_path {d};
    server {{ listen 127.0.0.1:{port}{listen}; location / {{ return 200 "hello\\n"; }} }}
}}
"""


@pytest.fixture
def hand_nginx(free_port: int, request: pytest.FixtureRequest) -> Iterator[int]:
    """nginx from NGINX_CONF; parametrized indirectly with (events, listen's flags) to add to it."""
    events, listen = getattr(request, "param", ("", ""))
    with nginx_by_hand(NGINX_CONF, free_port, 2, 10, events=events, listen=listen) as nginx:
        yield nginx.port


def test_a_hand_configured_nginx_through_the_cli(hand_nginx: int, tmp_path: Path) -> None:
    """At 80 columns every line fits; --json saves what `show` prints again, word for word."""
    saved = tmp_path / "inspect.json"
    result = run_cli(["inspect", "--port", str(hand_nginx), "--json", str(saved)], columns=80)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].startswith(f"accept-order inspect port {hand_nginx}: nginx, master pid")
    assert "Mechanism: epoll (nginx's epoll)" in result.stdout
    assert "accept-order run --server nginx -m reuseport" in result.stdout
    document = json.loads(saved.read_text())
    assert document["kind"] == "inspect" and document["mechanism"]["name"] == "epoll"
    assert [u["wchan"] for u in document["units"]] == ["do_epoll_wait", "do_epoll_wait"]
    shown = run_cli(["show", str(saved)], columns=80)
    assert shown.exit_code == 0 and shown.stdout == result.stdout


@pytest.mark.parametrize("hand_nginx", [("accept_mutex on;", " reuseport")], indirect=True)
def test_nginx_with_reuseport_and_the_mutex_on_is_offered_what_it_lacks(hand_nginx: int) -> None:
    """Issue 26's case: reuseport, and the mutex on, which then changes nothing. Inspect starts from there:
    the listen without reuseport is what the other modes need, and the mutex may be set already."""
    result = inspect(port=hand_nginx, samples=1)
    assert result.mechanism.name == "reuseport" and result.mechanism.modes == ("reuseport",)
    rows = {c.mode: c.settings for c in result.changes}
    assert rows["accept-mutex"][0] == "listen ADDRESS:PORT; (no reuseport)"
    assert rows["accept-mutex"][1] == "accept_mutex on; (no effect with nginx's reuseport: may be set already)"
    assert "accept_mutex off;" not in rows["epoll"] and "accept_mutex on;" not in rows["accept-mutex"]


def test_what_serves_nothing_is_one_line_and_exit_1(unlistened_port: int) -> None:
    assert_one_error_line(run_cli(["inspect", str(1 << 22)]), 1, f"no process {1 << 22}")
    assert_one_error_line(
        run_cli(["inspect", "--port", str(unlistened_port)]), 1, f"nobody listens on port {unlistened_port}"
    )
    idle = subprocess.Popen(["sleep", "30"])
    try:
        wait_for(lambda: Path(f"/proc/{idle.pid}/comm").read_text(), lambda name: name == "sleep\n", 10, "exec")
        assert_one_error_line(run_cli(["inspect", str(idle.pid)]), 1, f"pid {idle.pid} (sleep) holds no listening")
    finally:
        idle.kill()
        idle.wait()


@pytest.mark.parametrize("args", [[], ["1", "--port", "80"], ["--port", "0"], ["nope"], ["1", "--samples", "0"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert_one_error_line(run_cli(["inspect", *args]), 2)


def test_what_proc_says_is_read_for_both_syscall_tables() -> None:
    """The samples are what Linux 6.18 printed here for nginx's epoll, io-uring and a blocked accept4; the
    aarch64 numbers are asm-generic/unistd.h's (accept4 242, epoll_pwait 22, futex 98)."""
    assert parse_syscall("288 0x3 0x7ffe5b089b10 0x0 0x80000 0x0 0x0 0x7ffe 0x7f", X86_64)[:2] == ("accept4", 288)
    assert parse_syscall("242 0x5 0x0 0x0 0x80800 0x0 0x0 0x1 0x2", GENERIC)[0] == "accept4"
    assert parse_syscall("22 0x4 0x1 0x2 0xffffffffffffffff 0x0 0x8 0x1 0x2", GENERIC)[2][0] == 4
    assert parse_syscall("running", X86_64)[0] == "running" and parse_syscall("-1 0x1 0x2", X86_64)[0] == "none"
    fdinfo = (
        "pos:\t0\nflags:\t02\nmnt_id:\t16\nino:\t1038\n"
        "tfd:        9 events: 80000019 data:     5632c80da340  pos:0 ino:40e sdev:10\n"
        "tfd:        6 events: 10000019 data:     7f7c5f08d010  pos:0 ino:bde11d sdev:9\n"
    )
    watches = parse_epoll_fdinfo(fdinfo)
    assert [(w.fd, w.inode, w.exclusive) for w in watches] == [(9, 0x40E, False), (6, 12443933, True)]
    ring = "SqMask:\t0x3f\nPollList:\n  op=13, task_works=0\nCqOverflowList:\nNAPI:\tdisabled\n"
    assert parse_uring_fdinfo(ring) == (IORING_OP_ACCEPT,)


def test_poll_and_select_sets_are_parsed() -> None:
    """struct pollfd {int fd; short events; short revents} and fd_set's bit per descriptor, little-endian."""
    pollfds = b"".join(
        fd.to_bytes(4, "little", signed=True) + events.to_bytes(2, "little") + b"\0\0"
        for fd, events in ((5, 0x1), (-1, 0x1), (7, 0x4), (9, 0x40))
    )
    assert parse_pollfds(pollfds) == (5, 9)  # POLLIN or POLLRDNORM; negative fds are skipped, POLLOUT is not a read
    words = (1 << 3 | 1 << 63).to_bytes(8, "little") + (1 << 1).to_bytes(8, "little")
    assert parse_fd_set(words, 66) == (3, 63, 65)
    assert parse_fd_set(words, 64) == (3, 63)  # bits at or above nfds are not watched


def test_the_connections_each_process_holds_are_procs_count(hand_nginx: int, tmp_path: Path) -> None:
    """Keep-alive connections, each answered (so accepted) and left open: inspect counts them per process
    as /proc does, says so, and offers what changes how their load splits; with none held, it offers none."""
    idle = inspect(port=hand_nginx, samples=1)
    assert all(p.connections_held == 0 for p in idle.processes)
    conns = []
    try:
        for _ in range(5):
            conn = socket.create_connection(("127.0.0.1", hand_nginx), timeout=10)
            conns.append(conn)
            conn.sendall(b"GET / HTTP/1.1\r\nHost: inspect\r\n\r\n")
            reply = b""
            while not reply.endswith(b"hello\n"):
                chunk = conn.recv(4096)
                assert chunk, reply
                reply += chunk
        saved = tmp_path / "inspect.json"
        done = run_cli(["inspect", "--port", str(hand_nginx), "--json", str(saved)], columns=80)
        pids = [p["pid"] for p in json.loads(saved.read_text())["processes"]]
        counted = established_held(hand_nginx, pids)
    finally:
        for conn in conns:
            conn.close()
    assert done.exit_code == 0, done.output
    document = json.loads(saved.read_text())
    assert {p["pid"]: p["connections_held"] for p in document["processes"]} == counted
    assert sum(counted.values()) == 5
    assert {u["pid"]: u["connections_held"] for u in document["units"]} == {
        u["pid"]: counted[u["pid"]] for u in document["units"]
    }
    assert "(5 in all)" in done.stdout and "What changes how the load of long-lived connections" in done.stdout
    assert "keepalive_requests" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    shown = run_cli(["show", str(saved)], columns=80)
    assert shown.exit_code == 0 and shown.stdout == done.stdout
    wait_for(  # nginx closes its ends once it reads the clients' FIN
        lambda: inspect(port=hand_nginx, samples=1).processes,
        lambda rows: all(p.connections_held == 0 for p in rows),
        10,
        "nginx to close the connections",
    )
    quiet = run_cli(["inspect", "--port", str(hand_nginx)], columns=80)
    assert "What changes how the load" not in quiet.stdout
