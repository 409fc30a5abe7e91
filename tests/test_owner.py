"""SocketOwners: attribution of connections to forked blocking-accept workers, checked against what the
workers themselves report accepting; closed, foreign, vanished and /proc-fallback cases."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import needs_ipv6, wait_for

from accept_order.probes import owner as owner_mod
from accept_order.probes.owner import SocketOwners, proc_server_inode

TIMEOUT_S = 10.0


def _serve(listener: socket.socket, report_fd: int) -> None:
    """Blocking accept; greet with b"+" once the socket is ours (so the client knows it is accepted), hold
    it until the client closes or sends anything; on SIGTERM report the client ports accepted and exit."""
    ports: list[int] = []

    def report_on_sigterm() -> None:
        signal.sigwait({signal.SIGTERM})
        # The parent sends SIGTERM only once every connection has been greeted, so `ports` is complete.
        os.write(report_fd, ("ports " + " ".join(map(str, ports)) + "\n").encode())
        os._exit(0)

    # Not a Python SIGTERM handler: one that lands between the interpreter's last signal check and the
    # accept() syscall is only run when accept returns, i.e. never. Blocked, SIGTERM goes to sigwait.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    threading.Thread(target=report_on_sigterm, daemon=True).start()
    os.write(report_fd, b"ready\n")  # from now on a SIGTERM yields a report
    while True:
        conn, peer = listener.accept()
        ports.append(peer[1])
        with conn:
            try:
                conn.sendall(b"+")
                conn.recv(64)  # EOF or a request to close our side
            except OSError:
                pass


class Workers:
    """`count` forked workers accepting on one listening socket; `stop()` ends them all and returns each
    worker's accepted client ports. Used as a context manager so that every path ends every worker."""

    def __init__(self, count: int, host: str) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.create_server((host, 0), family=family, backlog=128)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.pids: list[int] = []
        self._reads: list[int] = []
        self._data: list[bytes] = []
        self.reports: list[list[int]] | None = None
        try:
            for _ in range(count):
                self._fork()
            for i in range(count):
                self._read_until(i, lambda data: b"ready\n" in data, "a worker to start")
        except BaseException:
            self.kill()  # the ones already forked
            raise

    def _fork(self) -> None:
        read_fd, write_fd = os.pipe()  # one pipe each: EOF on it means that worker has exited
        pid = os.fork()
        if pid == 0:  # the child never returns into pytest
            code = 1
            try:
                ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no orphan if pytest dies
                for fd in (*self._reads, read_fd):
                    os.close(fd)
                _serve(self.listener, write_fd)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)  # so that the workers forked later do not hold it
        self.pids.append(pid)
        self._reads.append(read_fd)
        self._data.append(b"")

    def _read_until(self, i: int, done: Callable[[bytes], bool], what: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not done(self._data[i]):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._reads[i]], [], [], remaining)[0]:
                pytest.fail(f"timed out waiting for {what} (pid {self.pids[i]})")
            chunk = os.read(self._reads[i], 65536)
            self._data[i] += chunk
            if not chunk:
                break

    def stop(self) -> list[list[int]]:
        if self.reports is not None:
            return self.reports
        for pid in self.pids:
            os.kill(pid, signal.SIGTERM)
        reports: list[list[int]] = []
        try:
            for i, _ in enumerate(self.pids):
                self._read_until(i, lambda data: False, "a worker's report")  # to EOF: it has exited
                line = next((ln for ln in self._data[i].decode().splitlines() if ln.startswith("ports")), None)
                if line is None:
                    pytest.fail(f"worker pid {self.pids[i]} exited without a report")
                reports.append([int(p) for p in line.split()[1:]])
        finally:
            self._end()
        self.reports = reports
        return reports

    def kill(self) -> None:
        """End every worker without a report (a failure path)."""
        if self.reports is None:
            for pid in self.pids:
                os.kill(pid, signal.SIGKILL)
            self._end()

    def _end(self) -> None:
        for pid in self.pids:
            pidfd = os.pidfd_open(pid)
            try:
                if not select.select([pidfd], [], [], TIMEOUT_S)[0]:
                    os.kill(pid, signal.SIGKILL)
            finally:
                os.close(pidfd)
            os.waitpid(pid, 0)
        for fd in self._reads:
            os.close(fd)
        self._reads = []
        self.listener.close()
        self.reports = self.reports or []


@contextmanager
def workers(count: int, host: str = "127.0.0.1") -> Iterator[Workers]:
    group = Workers(count, host)
    try:
        yield group
    finally:
        group.kill()  # a no-op after stop(); otherwise the test failed first


def accepted_connection(address: tuple[str, int]) -> socket.socket:
    """A client connection some worker has accepted (its greeting arrived)."""
    client = socket.create_connection(address, timeout=TIMEOUT_S)
    assert client.recv(1) == b"+"
    return client


def attribute(count: int, host: str, connections: int) -> None:
    """Each worker's report (client ports in accept order) equals the connections owner() gave it, in order."""
    with workers(count, host) as group, SocketOwners(group.pids) as owners:
        attributed: dict[int | None, list[int]] = {}
        for _ in range(connections):
            with accepted_connection(group.address) as client:
                index = owners.owner(client.getsockname(), client.getpeername())
                attributed.setdefault(index, []).append(client.getsockname()[1])
        reports = group.stop()
    assert attributed == {index: ports for index, ports in enumerate(reports) if ports}
    assert sum(len(ports) for ports in reports) == connections


def test_attribution_matches_the_workers_reports_ipv4() -> None:
    attribute(3, "127.0.0.1", 30)


@needs_ipv6
def test_attribution_matches_the_workers_reports_ipv6() -> None:
    attribute(3, "::1", 30)


def test_proc_fallback_when_netlink_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_netlink() -> socket.socket:
        raise PermissionError("netlink refused")

    monkeypatch.setattr(owner_mod, "_open_netlink", no_netlink)
    attribute(3, "127.0.0.1", 5)  # each lookup reads all of /proc/net/tcp: slow where TIME_WAIT abounds


def test_netlink_and_proc_agree_on_the_inode() -> None:
    with workers(1) as group, SocketOwners(group.pids) as owners:
        with accepted_connection(group.address) as client:
            local, peer = client.getsockname(), client.getpeername()
            inode = owners.server_inode(local, peer)
            assert inode is not None and inode == proc_server_inode(local, peer)
            assert inode != os.fstat(client.fileno()).st_ino  # the server side, not ours
        group.stop()


def test_a_closed_server_side_is_none() -> None:
    with workers(2) as group, SocketOwners(group.pids) as owners:
        with accepted_connection(group.address) as client:
            local, peer = client.getsockname(), client.getpeername()
            assert owners.owner(local, peer) is not None
            client.sendall(b"close")  # the worker closes its side; we see that as EOF
            assert client.recv(1) == b""
            # close() takes the fd out of the table before the FIN goes out: no worker holds it by now
            assert owners.owner(local, peer) is None
            # ... but the socket is orphaned (its inode cleared) just after the FIN is sent
            wait_for(lambda: proc_server_inode(local, peer), lambda inode: inode is None, 10, "an orphaned socket")
        group.stop()


def test_no_such_connection_is_none_not_the_shared_listener() -> None:
    # The kernel's exact lookup falls back to the listener, which every worker holds.
    with workers(2) as group, SocketOwners(group.pids) as owners:
        with socket.socket() as unused:
            unused.bind(("127.0.0.1", 0))
            assert owners.owner(unused.getsockname(), group.address) is None
        group.stop()


def test_pids_not_holding_it_are_none() -> None:
    with workers(3) as group, SocketOwners(group.pids) as owners:
        with accepted_connection(group.address) as client:
            local, peer = client.getsockname(), client.getpeername()
            index = owners.owner(local, peer)
            assert index is not None
            others = [pid for i, pid in enumerate(group.pids) if i != index]
            with SocketOwners(others) as not_owners:
                assert not_owners.owner(local, peer) is None
            with SocketOwners([os.getpid()]) as client_side:  # we hold the client side only
                assert client_side.owner(local, peer) is None
        group.stop()


def _short_lived_child() -> tuple[int, int]:
    """A child that exits once the returned pipe's write end is closed: (pid, write fd)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(write_fd)
            os.read(read_fd, 1)
        finally:
            os._exit(0)
    os.close(read_fd)
    return pid, write_fd


def test_a_vanished_pid_is_skipped() -> None:
    gone_pid, gone_pipe = _short_lived_child()
    os.close(gone_pipe)
    os.waitpid(gone_pid, 0)  # reaped: the pid no longer exists
    with workers(2) as group:
        late_pid, late_pipe = _short_lived_child()
        try:
            # gone before the lookup started, and gone after the object was made
            with SocketOwners([gone_pid, late_pid, *group.pids]) as owners:
                os.close(late_pipe)
                late_pipe = -1
                os.waitpid(late_pid, 0)  # reaped: its /proc entry is gone
                with accepted_connection(group.address) as client:
                    index = owners.owner(client.getsockname(), client.getpeername())
                    port = client.getsockname()[1]
        finally:
            if late_pipe >= 0:
                os.close(late_pipe)
                os.waitpid(late_pid, 0)
        reports = group.stop()
    assert index is not None and index >= 2
    assert port in reports[index - 2]


def test_the_benchmark_runs_and_its_check_holds() -> None:
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_owner.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--connections", "20", "--workers", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20/20 attributed to the worker that accepted them (exact)" in done.stdout
