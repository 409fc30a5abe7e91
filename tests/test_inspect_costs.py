"""What keeps `inspect` cheap per worker (issue 30 §2) answers as the longer way did: /proc files read whole
with os.read; a look's socket inodes kept unless a descriptor read again changed; kcmp asked once a look for
each pair; a thread's name read at the look's first sample; how many descriptors share an epoll counted once a
sample; a status file's fields as a dict of all its lines had them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import OutputReader, wait_for

from accept_order.analysis.mechanism_values import Seen, Verdict
from accept_order.core import libc as libc_module
from accept_order.core.measures import ListenerRow
from accept_order.experiments.inspect import held
from accept_order.experiments.inspect import sample as sample_module
from accept_order.experiments.inspect.sample import Sample, _shared_epolls, take
from accept_order.experiments.inspect.views import epoll_views, unit_views
from accept_order.probes import fd_table, proc_read, proc_waits
from accept_order.probes.fd_table import FdTables, OpenFile
from accept_order.probes.proc_processes import ProcessInfo, _fields
from accept_order.probes.proc_waits import ThreadWait
from accept_order.probes.serving import Server, find_server
from accept_order.probes.tcp_info import TcpSocket

TIMEOUT_S = 20.0
CHUNK = proc_read._CHUNK


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK])
def test_a_file_is_read_whole(tmp_path: Path, size: int) -> None:
    data = bytes(i % 251 for i in range(size))
    (tmp_path / "f").write_bytes(data)
    assert proc_read.read_proc(str(tmp_path / "f")) == data
    assert proc_read.read_proc(str(tmp_path / "missing")) is None


def test_a_proc_file_is_read_as_a_file_object_reads_it() -> None:
    for name in ("status", "maps", "stat"):
        assert proc_read.read_proc(f"/proc/self/{name}") is not None
    assert proc_read.read_proc("/proc/self/comm") == Path("/proc/self/comm").read_bytes()


def test_the_sockets_follow_a_descriptor_read_again() -> None:
    """Unchanged descriptors: the table's own set (not made again); a descriptor opened since and read
    again: its socket is in the sample's set, and not in the table's."""
    tables = FdTables()
    pid = os.getpid()
    files, sockets = tables.files_and_sockets(pid)
    assert sockets is tables.sockets(pid)
    with socket.socket() as newer:
        inode = os.fstat(newer.fileno()).st_ino
        assert inode not in tables.sockets(pid)  # the table as it was read
        files, sockets = tables.files_and_sockets(pid, again=[newer.fileno()])
        assert inode in sockets and files[newer.fileno()] == OpenFile(newer.fileno(), "socket", inode)
        assert sockets == tables.sockets(pid) | {inode}
        assert tables.files_and_sockets(pid)[1] is tables.sockets(pid)


def test_kcmp_is_asked_once_a_look_for_each_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """The look's answers kept (FdTables.file_orders): a second sample of the same epolls asks nothing and
    groups them the same; without them, every sample asks again."""
    asked: list[tuple[int, ...]] = []

    def order(pid_a: int, fd_a: int, pid_b: int, fd_b: int) -> int | None:
        asked.append((pid_a, fd_a, pid_b, fd_b))
        a, b = fd_a // 10, fd_b // 10  # one open file per tens: 10 and 11 are one, 20 another
        return (a > b) - (a < b)

    monkeypatch.setattr(sample_module, "file_order", order)
    seen = [
        Seen(100 + i, 100 + i, "epoll_wait", "epoll", epoll_id=f"{100 + i}:{fd}") for i, fd in enumerate((10, 11, 20))
    ]
    known: dict[tuple[int, int, int, int], int | None] = {}
    first = _shared_epolls(seen, known)
    assert asked and first[2] == {"100:10": "100:10", "101:11": "100:10", "102:20": "102:20"}
    count = len(asked)
    assert _shared_epolls(seen, known) == first and len(asked) == count
    assert _shared_epolls(seen) == first and len(asked) == 2 * count


def _state(pid: int) -> str:
    """The process's state letter in /proc/PID/stat (S: asleep in a system call)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def listener() -> Iterator[int]:
    """A process of the test's own asleep in accept() on a listener: its pid."""
    code = "import socket; s = socket.create_server(('127.0.0.1', 0)); print('up', flush=True); s.accept()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        OutputReader(proc.stdout).wait_for(r"up\n", TIMEOUT_S)
        # "up" is printed before accept(): a sample taken between the two saw it running, waiting on nothing
        wait_for(lambda: _state(proc.pid), lambda state: state == "S", TIMEOUT_S, "the process to sleep in accept")
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(TIMEOUT_S)


def test_a_thread_s_name_is_read_at_the_look_s_first_sample(listener: int, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    real = proc_waits._read

    def counted(path: str, *how: Callable[[str], bytes | None]) -> str | None:
        read.append(path)
        return real(path, *how)

    real_read = fd_table.read_proc

    def read_whole(path: str) -> bytes | None:
        read.append(path)
        return real_read(path)

    monkeypatch.setattr(proc_waits, "_read", counted)
    monkeypatch.setattr(fd_table, "read_proc", read_whole)  # what a look's tables read (its syscall files)
    tables = FdTables()
    server = find_server(pid=listener, tables=tables)
    first = take(server, tables)
    assert sum(path.endswith("/comm") for path in read) == 1
    read.clear()
    second = take(server, tables)
    assert not any(path.endswith("/comm") for path in read) and any(path.endswith("/syscall") for path in read)
    assert (
        second.waits == first.waits and first.waits[listener][0].name == "python3"[: len(first.waits[listener][0].name)]
    )


def _epoll(fd: int) -> OpenFile:
    return OpenFile(fd, "eventpoll", fdinfo=f"tfd:        3 events: 10000019 data: 3 pos:0 ino:{7:x} sdev:8\n")


def test_an_epoll_shared_by_three_is_listed_once_with_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """One open file in pids 10, 11 and 12 (fd 5 each) and pid 13's own: the shared one listed once, naming
    the other two descriptors in order; each of its workers waits on it '(shared)', pid 13's not."""
    pids = (10, 11, 12, 13)
    processes = tuple(ProcessInfo(pid, 1, "srv", ("srv",), 0) for pid in pids)
    listeners = (ListenerRow("ipv4", "127.0.0.1", 80, 0, 128, 7, "netlink"),)
    server = Server(processes, listeners, {pid: frozenset({7}) for pid in pids}, frozenset(), {}, ())
    same = {"10:5": "10:5", "11:5": "10:5", "12:5": "10:5", "13:5": "13:5"}
    seen = tuple(
        Seen(pid, pid, "epoll_wait", "epoll", frozenset({7}), True, same[f"{pid}:5"], frozenset({7})) for pid in pids
    )
    waits: dict[int, tuple[ThreadWait, ...]] = {
        pid: (ThreadWait(pid, "srv", "epoll_wait", 232, 5, "do_epoll_wait"),) for pid in pids
    }
    files = {pid: {5: _epoll(5), 3: OpenFile(3, "socket", 7)} for pid in pids}
    sample = Sample(seen, waits, files, {pid: frozenset({7}) for pid in pids}, True, same)
    verdict = Verdict("epoll-shared", tuple((pid, pid) for pid in pids))
    views = epoll_views(server, sample, verdict)
    assert [(v.pid, v.fd, v.shared_with) for v in views] == [(10, 5, ((11, 5), (12, 5))), (13, 5, ())]
    units = unit_views(server, sample, verdict)
    assert [u.on for u in units] == ["epoll fd 5 (shared): the listener, EPOLLEXCLUSIVE"] * 3 + [
        "epoll fd 5: the listener, EPOLLEXCLUSIVE"
    ]


def test_a_status_file_s_fields_are_its_lines() -> None:
    status = Path("/proc/self/status").read_text() + "Name:\tlater\nNoColon\nUid:\t5\t5\t5\t5\n"
    every = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    wanted = ("Name", "Tgid", "PPid", "Uid")
    assert _fields(status, wanted) == {name: every[name] for name in wanted}


def test_a_process_s_threads_are_its_task_directory_s(listener: int) -> None:
    """A process of one thread (told by its task directory's link count), one of several, a zombie, one that
    is gone: the threads a listing of /proc/PID/task gives, main thread first."""
    ready, release = threading.Event(), threading.Event()

    def waiter() -> None:
        ready.set()
        release.wait(TIMEOUT_S)

    threads = [threading.Thread(target=waiter) for _ in range(3)]
    for thread in threads:
        thread.start()
    assert ready.wait(TIMEOUT_S)
    try:
        mine = proc_waits.thread_ids(os.getpid())
        # the listing's order is the threads' creation order, not their ids' (ids wrap): compared sorted
        listed = sorted(sorted(int(t) for t in os.listdir("/proc/self/task")), key=lambda t: t != os.getpid())
        assert mine == listed and mine[0] == os.getpid() and len(mine) >= 4
    finally:
        release.set()
        for thread in threads:
            thread.join(TIMEOUT_S)
    assert proc_waits.thread_ids(listener) == [listener]
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    state = lambda: Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]  # noqa: E731
    wait_for(state, lambda s: s == "Z", TIMEOUT_S, "the child to exit unreaped")
    assert proc_waits.thread_ids(zombie.pid) == [zombie.pid]
    zombie.wait(TIMEOUT_S)
    assert proc_waits.thread_ids(zombie.pid) == []


def _look(sockets: dict[int, frozenset[int]], peers: dict[int, int], source: str = "netlink") -> tuple[Server, Sample]:
    """A server of two processes holding listener 7 (and `sockets`), as a look saw it."""
    row = ListenerRow("ipv4", "127.0.0.1", 8080, 0, 511, 7, source)  # type: ignore[arg-type]
    infos = tuple(ProcessInfo(pid, 1, "srv", ("srv",), 0) for pid in sockets)
    server = Server(infos, (row,), {pid: frozenset({7}) for pid in sockets}, frozenset(), peers, ())
    return server, Sample((), {}, {}, sockets, True, {})


@pytest.mark.parametrize(
    ("sockets", "peers", "source", "asked"),
    [
        ({10: frozenset({7, 20}), 11: frozenset({7, 21})}, {20: 21, 21: 20}, "netlink", False),  # listener, channel
        ({10: frozenset({7, 20}), 11: frozenset({7, 21, 99})}, {20: 21, 21: 20}, "netlink", True),  # 99: may be one
        ({10: frozenset({7}), 11: frozenset({7})}, {}, "netlink", True),  # no Unix dump: netlink not known to answer
        ({10: frozenset({7, 20}), 11: frozenset({7, 21})}, {20: 21, 21: 20}, "proc", True),  # listeners from /proc
    ],
)
def test_the_connections_dump_is_asked_where_a_socket_may_be_one(
    sockets: dict[int, frozenset[int]],
    peers: dict[int, int],
    source: str,
    asked: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every socket a listener or a connected Unix socket: no connection to count, each process 0, and the
    dump (which walks every TCP socket of the namespace) is not asked. Anything else: asked, and counted."""
    calls: list[list[int]] = []

    def dump(ports: list[int], netns_pid: int | None = None) -> list[TcpSocket]:
        calls.append(ports)
        return [TcpSocket(1, 99, 1, 8080, 0, 0, 0, 0, 0)]

    monkeypatch.setattr(held, "server_sockets", dump)
    counts, note = held.connections_held(*_look(sockets, peers, source))
    assert bool(calls) == asked and note is None
    assert counts == {pid: int(99 in inodes) for pid, inodes in sockets.items()}


def test_kcmp_and_setns_come_from_the_process_s_own_libc(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ldconfig run to find libc (ctypes.util.find_library: a subprocess, 14 ms of every inspect): kcmp
    still tells a descriptor's duplicate for the same open file, and another socket for a different one."""
    import ctypes.util

    def refused(name: str) -> str | None:
        raise AssertionError(f"find_library({name!r}) was asked")

    monkeypatch.setattr(ctypes.util, "find_library", refused)
    libc_module.libc.cache_clear()
    try:
        with socket.socket() as a, socket.socket() as b:
            twin = os.dup(a.fileno())
            try:
                pid = os.getpid()
                assert fd_table.file_order(pid, a.fileno(), pid, twin) == 0
                assert fd_table.file_order(pid, a.fileno(), pid, b.fileno()) in (-1, 1)
                assert hasattr(libc_module.libc(), "setns")
            finally:
                os.close(twin)
    finally:
        libc_module.libc.cache_clear()


def _typed(value: object) -> object:
    """`value` with every container's type and every dict's key order spelled out: equal only when the two
    were made alike (a tuple is not a list, (1,) is not [1])."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


def test_a_result_s_dict_is_what_asdict_made(listener: int) -> None:
    """to_dict (a --json save's) makes what dataclasses.asdict made, without its deep copies: the same values
    of the same types in the same order, nested records (an epoll's watches, the environment) included."""
    from dataclasses import asdict, replace

    from accept_order.experiments.inspect.result import EpollView, WatchView
    from accept_order.experiments.inspect.run import inspect

    result = inspect(pid=listener, samples=1)
    watches = (WatchView(3, 0x10000019, 7, True), WatchView(4, 0x19, 8, False))
    result = replace(result, epolls=(EpollView(listener, 5, watches, ((listener, 6),)),), notes=("a note",))
    assert result.units and result.processes and result.sysctls  # what a look holds, besides the epolls
    assert _typed(result.to_dict()) == _typed(asdict(result))


def test_an_epoll_unchanged_between_samples_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A look's samples share an epoll's OpenFile while its fdinfo reads the same (its watches parsed once a
    look, not once a sample); one that changed is read and parsed anew."""
    import select

    parsed: list[str] = []
    real = fd_table.parse_epoll_fdinfo

    def counted(text: str) -> tuple[fd_table.Watch, ...]:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(fd_table, "parse_epoll_fdinfo", counted)
    tables = FdTables()
    pid = os.getpid()
    with socket.create_server(("127.0.0.1", 0)) as a, socket.create_server(("127.0.0.1", 0)) as b:
        inodes = frozenset({os.fstat(a.fileno()).st_ino, os.fstat(b.fileno()).st_ino})
        epoll = select.epoll()
        try:
            epoll.register(a.fileno(), select.EPOLLIN)
            first = tables.files(pid)[epoll.fileno()]
            assert [w.fd for w in first.watching(inodes)] == [a.fileno()] and len(parsed) == 1
            again = tables.files(pid)[epoll.fileno()]
            assert again is first and [w.fd for w in again.watching(inodes)] == [a.fileno()] and len(parsed) == 1
            epoll.register(b.fileno(), select.EPOLLIN | select.EPOLLEXCLUSIVE)
            changed = tables.files(pid)[epoll.fileno()]
            assert changed is not first
            watches = changed.watching(inodes)
            assert sorted((w.fd, w.exclusive) for w in watches) == sorted([(a.fileno(), False), (b.fileno(), True)])
        finally:
            epoll.close()


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def test_a_look_reads_its_samples_files_through_descriptors_it_closes(
    listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look opens a thread's syscall and wchan files once and reads them again at each sample (pread from the
    start: what a fresh open reads), and closes them at its end; a table without `keep` opens them each time."""
    from accept_order.experiments.inspect import run as run_module

    opened: list[str] = []
    real_open = os.open

    def counted(path: str, *args: int, **kwargs: int) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    before = _open_fds()
    monkeypatch.setattr(fd_table.os, "open", counted)
    monkeypatch.setattr(proc_read.os, "open", counted)
    result = run_module.inspect(pid=listener, samples=3)
    assert [u.call for u in result.units] in (["accept"], ["accept4"])  # it looked, three times
    syscall = f"/proc/{listener}/task/{listener}/syscall"
    assert opened.count(syscall) == 1 and opened.count(syscall.replace("syscall", "wchan")) == 1
    assert _open_fds() == before  # none left open
    opened.clear()
    tables = FdTables()
    server = find_server(pid=listener, tables=tables)
    first, second = take(server, tables), take(server, tables)
    assert opened.count(syscall) == 2 and first.waits == second.waits
    kept = FdTables(keep=True)
    kept_reads = [kept.read(syscall), kept.read(syscall)]
    assert kept_reads[0] == kept_reads[1] == proc_read.read_proc(syscall) and len(_open_fds()) == len(before) + 1
    kept.close()
    assert _open_fds() == before


def test_a_thread_whose_files_read_the_same_is_seen_as_at_the_last_sample(listener: int) -> None:
    """A later sample reads each thread's syscall and wchan files again; where they read the same (and the
    descriptor it waits on is the same file), its wait and what it was seen waiting on are the last sample's,
    not parsed and resolved again; a thread whose files changed is read anew."""
    tables = FdTables()
    server = find_server(pid=listener, tables=tables)
    first, second = take(server, tables), take(server, tables)
    assert second.waits[listener][0] is first.waits[listener][0] and second.seen[0] is first.seen[0]
    kept = sample_module._KEPT[tables]
    raw, wait, *rest = kept[listener, listener]
    kept[listener, listener] = ((b"-1 0x0", raw[1]), wait, *rest)  # as if it slept elsewhere last time
    third = take(server, tables)
    assert third.waits[listener][0] is not first.waits[listener][0] and third.waits == first.waits
    assert third.seen == first.seen == take(server).seen
