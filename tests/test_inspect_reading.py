"""One `inspect` look reads each process's fd table once (issue 30): the search for the server, the
processes fed over Unix sockets, the connections held and every sample are answered from the look's
`FdTables`. What moves between samples is read again at each: what an epoll watches (its fdinfo) and the
descriptor a thread waits on (it may be newer than the table). Checked against the kernel: a hand-started
nginx holding this test's keep-alive connections, and a process of the test's own whose epoll changes
between two samples."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OutputReader, wait_for
from nginx_by_hand import nginx_by_hand

from accept_order.experiments.inspect.run import inspect
from accept_order.experiments.inspect.sample import take
from accept_order.probes.fd_table import FdTables, OpenFile, parse_epoll_fdinfo
from accept_order.probes.serving import find_server

HELD = 40
TIMEOUT_S = 20.0
NGINX_CONF = """daemon off;
master_process on;
worker_processes 2;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 128; }}
http {{
    access_log off;
    keepalive_timeout 300s;
    client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};
    uwsgi_temp_path {d}; scgi_temp_path {d};
    server {{ listen 127.0.0.1:{port}; location / {{ return 200 "hello\\n"; }} }}
}}
"""
FD_DIR = re.compile(r"/proc/(\d+)/fd")


@pytest.fixture
def nginx_holding(free_port: int) -> Iterator[tuple[int, int]]:
    """(port, master pid) of a hand-started nginx with two workers holding HELD keep-alive connections of
    this test's, each answered once."""
    clients: list[socket.socket] = []
    with nginx_by_hand(NGINX_CONF, free_port, 2, TIMEOUT_S) as nginx:
        try:
            for _ in range(HELD):
                conn = socket.create_connection(("127.0.0.1", nginx.port), timeout=TIMEOUT_S)
                clients.append(conn)
                conn.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                answer = b""
                while not answer.endswith(b"hello\n"):
                    chunk = conn.recv(4096)
                    assert chunk, "nginx closed a kept connection"
                    answer += chunk
                assert answer.startswith(b"HTTP/1.1 200") and b"Connection: keep-alive" in answer
            yield nginx.port, nginx.master
        finally:
            for conn in clients:
                conn.close()


def _dir_of(arg: object) -> str | None:
    """The /proc/PID/fd directory a listdir call lists (by path or through a directory fd), or None."""
    if isinstance(arg, int):
        try:
            arg = os.readlink(f"/proc/self/fd/{arg}")
        except OSError:
            return None
    return arg if isinstance(arg, str) and FD_DIR.fullmatch(arg) else None


@pytest.mark.parametrize("by", ["pid", "port"])
def test_a_look_lists_each_fd_table_once(
    nginx_holding: tuple[int, int], by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five samples, and each /proc/PID/fd is listed at most once (the port's look reads every process's,
    to find who holds the listener); the connections held are this test's, all of them."""
    port, master = nginx_holding
    listed: Counter[str] = Counter()
    real_listdir = os.listdir

    def counting(path: object = ".") -> list[str]:
        where = _dir_of(path)
        if where is not None:
            listed[where] += 1
        return real_listdir(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "listdir", counting)
    result = inspect(pid=master) if by == "pid" else inspect(port=port)
    monkeypatch.undo()
    assert result.mechanism.name == "epoll" and result.workers == 2
    pids = [p.pid for p in result.processes]
    assert all(listed[f"/proc/{pid}/fd"] == 1 for pid in pids), listed
    assert max(listed.values()) == 1, [where for where, n in listed.items() if n > 1]
    assert sum(p.connections_held or 0 for p in result.processes) == HELD, result.processes


# A process of the test's own: a listener, an epoll that watches nothing yet and a thread asleep in it.
# "watch": the listener is added to that epoll. "new": a second epoll, watching the listener, and a thread
# asleep in it (a descriptor opened after the look's tables were read). Each step is said on stdout.
CHANGING = """
import select, socket, sys, threading
listener = socket.create_server(("127.0.0.1", 0))
first = select.epoll()
def sleep_in(epoll):
    while True:
        epoll.poll()
threading.Thread(target=sleep_in, args=(first,), daemon=True).start()
print("ready", listener.fileno(), first.fileno(), flush=True)
for line in sys.stdin:
    if line.strip() == "watch":
        first.register(listener.fileno(), select.EPOLLIN)
        print("watching", flush=True)
    elif line.strip() == "new":
        second = select.epoll()
        second.register(listener.fileno(), select.EPOLLIN)
        threading.Thread(target=sleep_in, args=(second,), daemon=True).start()
        print("new", second.fileno(), flush=True)
"""


@pytest.fixture
def changing() -> Iterator[tuple[subprocess.Popen[str], OutputReader, int, int]]:
    """(the process, its output, its listener's fd, its first epoll's fd), with a thread asleep in it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHANGING], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    try:
        assert proc.stdout is not None
        out = OutputReader(proc.stdout)
        listener, first = map(int, out.wait_for(r"ready (\d+) (\d+)\n", TIMEOUT_S).groups())
        _asleep_in(proc.pid, first)
        yield proc, out, listener, first
    finally:
        proc.kill()
        proc.wait(10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _asleep_in(pid: int, fd: int) -> None:
    """Wait until one of the process's threads sleeps in epoll_wait on `fd` (its syscall file says so)."""

    def calls() -> list[list[str]]:
        found = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                found.append(Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split())
            except OSError:
                continue
        return found

    number = {"x86_64": "232"}.get(os.uname().machine)
    if number is None:
        pytest.skip("the epoll_wait number is known here for x86_64 only")
    wait_for(calls, lambda c: any(f[:2] == [number, hex(fd)] for f in c), TIMEOUT_S, f"a thread in epoll_wait({fd})")


def _send(proc: subprocess.Popen[str], out: OutputReader, line: str, said: str) -> re.Match[str]:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return out.wait_for(said, TIMEOUT_S)


def _thread_in(seen: tuple[object, ...], epoll_id: str) -> list[object]:
    return [s for s in seen if getattr(s, "epoll_id", None) == epoll_id]


def test_what_an_epoll_watches_is_read_at_each_sample(
    changing: tuple[subprocess.Popen[str], OutputReader, int, int],
) -> None:
    """The tables are kept from the first sample; the listener added to the epoll between two samples is
    in the second (as an accept mutex moves listeners between workers' epolls)."""
    proc, out, listener, first = changing
    tables = FdTables()
    server = find_server(pid=proc.pid, tables=tables)
    before = take(server, tables)
    assert {s.via for s in before.seen} >= {"idle"}, before.seen
    assert not _thread_in(before.seen, f"{proc.pid}:{first}")
    _send(proc, out, "watch", r"watching\n")
    inode = os.stat(f"/proc/{proc.pid}/fd/{listener}").st_ino
    wait_for(
        lambda: Path(f"/proc/{proc.pid}/fdinfo/{first}").read_text(),
        lambda text: f"ino:{inode:x}" in text,
        TIMEOUT_S,
        "the kernel's fdinfo of the epoll listing the listener",
    )
    after = take(server, tables)
    (waiter,) = _thread_in(after.seen, f"{proc.pid}:{first}")
    assert waiter.via == "epoll" and waiter.listeners == frozenset({inode})  # type: ignore[attr-defined]
    assert after.seen == take(server).seen  # the kept tables answer as tables read now do


def test_a_descriptor_newer_than_the_tables_is_read_when_a_thread_waits_on_it(
    changing: tuple[subprocess.Popen[str], OutputReader, int, int],
) -> None:
    """An epoll made after the look's tables were read, and a thread asleep in it: the next sample reads
    that descriptor and sees the listener it watches."""
    proc, out, listener, _ = changing
    tables = FdTables()
    server = find_server(pid=proc.pid, tables=tables)
    take(server, tables)
    second = int(_send(proc, out, "new", r"new (\d+)\n")[1])
    _asleep_in(proc.pid, second)
    assert second not in tables.links(proc.pid)  # the table is the one read before
    inode = os.stat(f"/proc/{proc.pid}/fd/{listener}").st_ino
    sample = take(server, tables)
    (waiter,) = _thread_in(sample.seen, f"{proc.pid}:{second}")
    assert waiter.via == "epoll" and waiter.listeners == frozenset({inode})  # type: ignore[attr-defined]
    assert sample.seen == take(server).seen


FDINFO = (
    "pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t1057\n"
    "tfd:        9 events:       19 data:                9  pos:0 ino:abcd sdev:8\n"
    "tfd:        6 events: 10000019 data:                6  pos:0 ino:abc sdev:8\n"
    "tfd:        7 events:       19 data:                7  pos:0 ino:1abc sdev:8\n"
    "tfd:        8 events:       19 data:                8  pos:0 ino:abc sdev:8\n"
)


@pytest.mark.parametrize("inodes", [{0xABC}, {0xABCD, 0xABC}, {0x1ABC}, {0xFFF}, set(range(0xABC, 0xABC + 9))])
def test_the_listeners_lines_of_an_epoll_are_its_watches_of_them(inodes: set[int]) -> None:
    """Looked up line by line (a prefix of another inode, or an inode ending another, is not it) or, for
    many inodes, from the whole parse: the same watches, in the fdinfo's order."""
    file = OpenFile(5, "eventpoll", fdinfo=FDINFO)
    whole = tuple(w for w in parse_epoll_fdinfo(FDINFO) if w.inode in inodes)
    assert file.watching(inodes) == whole
    assert file.watches == parse_epoll_fdinfo(FDINFO) and file.watching(inodes) == whole  # once parsed whole
    if inodes == {0xABC}:
        assert [w.fd for w in whole] == [6, 8] and whole[0].exclusive and not whole[1].exclusive


def test_an_epoll_s_watches_are_empty_without_fdinfo() -> None:
    assert OpenFile(5, "eventpoll").watches == () and OpenFile(5, "eventpoll").watching({1}) == ()


# A parent with an epoll made before it forks (one open file in every process) and a second number for it
# (dup), and children that each make an epoll of their own after the fork (the same number in each, a
# different open file).
FORKED = """
import os, select, signal, sys
shared = select.epoll()
dup = os.dup(shared.fileno())
for _ in range(int(sys.argv[1])):
    if os.fork() == 0:
        own = select.epoll()
        os.write(1, f"child {os.getpid()} {own.fileno()}\\n".encode())  # one write: the lines do not mix
        signal.pause()
os.write(1, f"parent {os.getpid()} {shared.fileno()} {dup}\\n".encode())
signal.pause()
"""
CHILDREN = 6


def test_shared_epolls_are_grouped_by_the_kernel_s_order_of_open_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every descriptor of the shared epoll is named by the first "pid:fd" of it; one process's two
    numbers for it stay apart (the first and its dup); each child's own epoll is its own; and kcmp is asked
    fewer times than once a pair."""
    from accept_order.analysis.mechanism_values import Seen
    from accept_order.experiments.inspect import sample as sample_module

    proc = subprocess.Popen(
        [sys.executable, "-c", FORKED, str(CHILDREN)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        out = OutputReader(proc.stdout)
        found = out.wait_for(r"parent (\d+) (\d+) (\d+)\n", TIMEOUT_S)
        parent, fd, dup = map(int, found.groups())
        wait_for(lambda: re.findall(r"child (\d+) (\d+)\n", out.text), lambda c: len(c) == CHILDREN, TIMEOUT_S, "all")
        children = [(int(pid), int(own)) for pid, own in re.findall(r"child (\d+) (\d+)\n", out.text)]
        shared = [f"{pid}:{n}" for pid in [parent, *(c for c, _ in children)] for n in (fd, dup)]
        own = [f"{pid}:{n}" for pid, n in children]
        asked: list[tuple[int, ...]] = []
        real = sample_module.file_order

        def counting(*args: int) -> int | None:
            asked.append(args)
            return real(*args)

        monkeypatch.setattr(sample_module, "file_order", counting)
        seen = [Seen(int(k.split(":")[0]), i, "epoll_wait", "epoll", epoll_id=k) for i, k in enumerate(shared + own)]
        renamed, answered, ids = sample_module._shared_epolls(seen)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert answered
    first = min(shared)
    first_pid = first.split(":")[0]
    twin = next(k for k in shared if k.split(":")[0] == first_pid and k != first)
    assert ids == {**{k: first for k in shared}, twin: twin, **{k: k for k in own}}
    assert [s.epoll_id for s in renamed] == [ids[k] for k in shared + own]
    keys = len(shared) + len(own)
    assert len(asked) < keys * (keys - 1) // 2, len(asked)


def test_a_namespace_s_listeners_come_from_one_dump_in_the_order_proc_lists_them() -> None:
    """A pid's namespace's listeners are the kernel's inet_diag answer (with the backlog each was given),
    in the order of /proc/PID/net/tcp and tcp6 (the witness, read here): IPv4, IPv6 and dual-stack
    listeners of the test's own."""
    from accept_order.probes.listeners import parse_proc_net_tcp
    from accept_order.probes.proc_processes import namespace_listeners

    given: dict[int, int] = {}  # inode -> the backlog listen() was given
    mine: list[socket.socket] = []

    def listen(address: tuple[str, int], backlog: int, **how: object) -> None:
        server = socket.create_server(address, backlog=backlog, **how)  # type: ignore[arg-type]
        mine.append(server)
        given[os.fstat(server.fileno()).st_ino] = backlog

    try:
        for i in range(12):
            listen(("127.0.0.1", 0), 7 + i)
        try:
            for i in range(4):
                listen(("::1", 0), 30 + i, family=socket.AF_INET6)
            listen(("", 0), 40, family=socket.AF_INET6, dualstack_ipv6=True)
        except OSError:
            pass  # no IPv6 here: the IPv4 ones are the test
        rows = [r for r in namespace_listeners(os.getpid()) if r.inode in given]
        proc: list[int] = []
        for name, family in (("tcp", "ipv4"), ("tcp6", "ipv6")):
            text = Path(f"/proc/{os.getpid()}/net/{name}").read_text()
            proc += [r.inode for r in parse_proc_net_tcp(text, family) if r.inode in given]
    finally:
        for server in mine:
            server.close()
    assert [r.inode for r in rows] == proc and len(proc) == len(mine)
    assert all(r.source == "netlink" and r.backlog == given[r.inode] for r in rows), rows
