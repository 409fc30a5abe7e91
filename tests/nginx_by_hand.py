"""Debian's nginx started by hand for the inspect and observe tests, and the test's own count from /proc.

Those tests look at a server accept-order did not start, so they start nginx themselves: a config of the
test's own (its log format, keep-alive, listen flags) in a private directory, the master in its own session
(killed as a group at the end), ready once every worker waits in epoll_wait; or in the cluster's srv namespace for
the --clients tests of a page naming no worker (in_srv). Imported by name, as conftest's helpers are (tests/ is on
sys.path; no test_ prefix, so pytest collects nothing here)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from cluster import Cluster
from conftest import wait_for

EPOLL_WAIT = "232"  # x86_64's syscall number, as /proc/PID/syscall gives it


def syscall_number(pid: int) -> str:
    """The syscall `pid` waits in (its number as text), "running", or "gone" once it has exited."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0]
    except OSError:
        return "gone"


def in_epoll_wait(pids: list[int]) -> bool:
    """Every worker waits in epoll_wait: ready to take connections."""
    return all(syscall_number(pid) == EPOLL_WAIT for pid in pids)


@dataclass(frozen=True)
class HandNginx:
    """A running nginx: its port, master pid, worker pids (sorted) and private directory."""

    port: int
    master: int
    workers: list[int]
    directory: Path

    @property
    def access_log(self) -> Path:
        return self.directory / "access.log"


def one_server_conf(
    log_format: str,
    location: str = 'return 200 "ok\\n";',
    listen: str = "",
    http: Sequence[str] = (),
    server: Sequence[str] = (),
    connections: int = 256,
) -> str:
    """A conf for nginx_by_hand (a format string, as it takes one): its workers in the foreground, each request
    logged to access.log as `log_format`, one server on 127.0.0.1:{port} (`listen`'s flags after it) whose '/'
    does `location`; `http` and `server` are directives added to those blocks (they may name {d}, the directory).
    One text for the attach tests' nginx, which differ in those alone."""
    http_lines = "".join(f"\n    {line}" for line in http)
    server_lines = "".join(f"\n        {line}" for line in server)
    return f"""
worker_processes {{workers}};
daemon off;
pid {{d}}/nginx.pid;
events {{{{ worker_connections {connections}; }}}}
http {{{{
    log_format kept '{log_format}';
    access_log {{d}}/access.log kept;{http_lines}
    server {{{{
        listen 127.0.0.1:{{port}}{listen};{server_lines}
        location / {{{{ {location} }}}}
    }}}}
}}}}
"""


@contextmanager
def nginx_by_hand(
    conf: str, port: int, workers: int, timeout: float, prefix: str = "accept-order-test-nginx-", **fields: str
) -> Iterator[HandNginx]:
    """nginx from `conf` (a format string given {d}: its directory, {port}, {workers} and `fields`), with
    `workers` workers, until the block ends; skips the test where nginx is not installed."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        pytest.skip("nginx is not installed")
    with tempfile.TemporaryDirectory(prefix=prefix) as d:
        path = Path(d, "nginx.conf")
        path.write_text(conf.format(d=d, port=port, workers=workers, **fields))
        proc = subprocess.Popen(
            [nginx, "-p", d, "-c", str(path), "-e", f"{d}/error.log"], stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            yield HandNginx(port, proc.pid, sorted(_ready(proc, workers, timeout)), Path(d))
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout)


@contextmanager
def in_srv(
    cluster: Cluster,
    directory: Path,
    reply: str,
    logged: str,
    port: int,
    workers: int,
    http: str = "",
    timeout: float = 60.0,
) -> Iterator[str]:
    """nginx in the cluster's srv namespace (tests/cluster.py) with `workers` workers, its files in `directory`,
    answering `reply` and a newline to each request on `port` and logging `logged` a line to access.log (`http`:
    directives before, such as a map those name), until the block ends: its address:port, once every worker waits
    in epoll_wait (within `timeout`). Skips where nginx is not installed."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        pytest.skip("nginx is not installed")
    address = cluster.address("srv")
    conf = directory / "nginx.conf"
    conf.write_text(
        f"daemon off; worker_processes {workers}; pid {directory}/nginx.pid;\n"
        "events { worker_connections 512; }\n"
        f"http {{ {http}\n  log_format s '{logged}'; access_log {directory}/access.log s;\n"
        f'  server {{ listen {address}:{port}; location / {{ return 200 "{reply}\\n"; }} }} }}\n'
    )
    argv = [nginx, "-p", str(directory), "-c", str(conf), "-e", f"{directory}/error.log"]
    # its own session, so that its workers go with it: a master killed alone leaves them holding the port
    proc = cluster.run_in("srv", argv, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _ready(proc, workers, timeout)
        yield f"{address}:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)


def _ready(proc: subprocess.Popen[bytes], workers: int, timeout: float) -> list[int]:
    """nginx's worker pids once there are `workers` of them, each waiting in epoll_wait."""
    return wait_for(
        lambda: [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()],
        lambda pids: len(pids) == workers and in_epoll_wait(pids),
        timeout,
        "nginx's workers in epoll_wait",
    )


def established_held(port: int, pids: list[int]) -> dict[int, int]:
    """The test's own count from /proc: per pid, the sockets in its fd table that are established
    connections on `port` (/proc/PID/net/tcp: local port, state 01)."""
    established: set[int] = set()
    for line in Path(f"/proc/{pids[0]}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[1].split(":")[1], 16) == port:
            established.add(int(fields[9]))
    held = {}
    for pid in pids:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        held[pid] = sum(1 for link in links if link.startswith("socket:[") and int(link[8:-1]) in established)
    return held
