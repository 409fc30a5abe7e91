"""A child the server connects to on a named Unix socket the child listens on is a helper, not a worker fed by an
acceptor: Debian's h2o with TLS forks neverbleed (the process keeping the private key, which each event loop asks
to sign over a connection to /tmp/openssl-privsep.XXXXXX/_), and inspect read h2o as fd-pass ('only pid P waits
on the listener; 1 process that hold none wait on Unix sockets whose other end pid P holds'), its four event
loops as 'acceptors' and neverbleed's threads as three workers; observe watched those three. A worker handed
descriptors by its acceptor shares a socketpair with it (no name), and stays fed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli, wait_for

from accept_order.probes.serving import find_server

# The parent listens on TCP and holds the other end of one Unix connection to its child, then waits on stdin.
# 'helper': the child listens on a named Unix socket and the parent connects to it (neverbleed's way);
# 'socketpair': the two share a socketpair made before the fork (an acceptor's way with its workers).
# The child's pid is printed once the child has closed what it does not keep (it says so on a pipe): read before,
# on a busy machine, the child still held the TCP listener, a listener's holder and not fed.
TREE = r"""
import os, socket, sys, time
how, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tcp = socket.socket(); tcp.bind(("127.0.0.1", port)); tcp.listen(8)
if how == "socketpair":
    mine, theirs = socket.socketpair()
else:
    server = socket.socket(socket.AF_UNIX); server.bind(path); server.listen(4)
ready, said = os.pipe()
child = os.fork()
if child == 0:
    os.close(ready)
    tcp.close()
    if how == "socketpair":
        mine.close()
    os.write(said, b"."); os.close(said)
    if how == "socketpair":
        theirs.recv(1)
    else:
        conn, _ = server.accept(); conn.recv(1)
    os._exit(0)
os.close(said)
if how == "socketpair":
    theirs.close()
else:
    server.close()
    mine = socket.socket(socket.AF_UNIX); mine.connect(path)
assert os.read(ready, 1) == b"."
os.close(ready)
print(child, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def tree(request: pytest.FixtureRequest, tmp_path: Path, free_port: int) -> Iterator[tuple[int, int]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", TREE, request.param, str(free_port), str(tmp_path / "sock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        yield proc.pid, child
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("tree", ["helper"], indirect=True)
def test_a_child_serving_a_named_unix_socket_is_no_fed_worker(tree: tuple[int, int]) -> None:
    parent, child = tree
    server = find_server(parent)
    assert server.fed == frozenset()
    assert server.pids == [parent]
    assert child not in server.pids


@pytest.mark.parametrize("tree", ["socketpair"], indirect=True)
def test_a_child_on_a_socketpair_stays_fed(tree: tuple[int, int]) -> None:
    parent, child = tree
    server = find_server(parent)
    assert server.fed == frozenset({child})


H2O_TLS = """num-threads: 4
user: root
pid-file: {d}/h2o.pid
error-log: {d}/error.log
listen:
  host: 127.0.0.1
  port: {port}
  ssl:
    certificate-file: {d}/cert.pem
    key-file: {d}/key.pem
hosts:
  default:
    paths:
      /:
        file.dir: {d}
"""


def listening_unix_paths(pid: int) -> set[str]:
    """The paths of the listening Unix sockets in pid's fd table, from /proc/net/unix (the witness)."""
    inodes = {
        link[8:-1] for fd in Path(f"/proc/{pid}/fd").iterdir() if (link := str(fd.readlink())).startswith("socket:[")
    }
    paths = set()
    for line in Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) == 8 and fields[5] == "01" and fields[6] in inodes:  # st 01: listening
            paths.add(fields[7])
    return paths


def listener_holders(pids: list[str], port: int) -> list[str]:
    """Those of `pids` with the port's TCP listener in their fd table: a child forked by h2o holds it until it
    closes what it inherited (or execs), so a look before then finds it among the holders."""
    listening = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
            listening.add(f"socket:[{fields[9]}]")
    held = []
    for pid in pids:
        try:
            links = {str(fd.readlink()) for fd in Path(f"/proc/{pid}/fd").iterdir()}
        except OSError:
            continue  # gone, or exec'd meanwhile
        if links & listening:
            held.append(pid)
    return held


@pytest.mark.skipif(not (shutil.which("h2o") and shutil.which("openssl")), reason="needs Debian's h2o and openssl")
def test_h2o_with_tls_is_read_as_its_threads_not_fd_pass(tmp_path: Path, free_port: int) -> None:
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"]
        + ["-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")],
        check=True,
        capture_output=True,
    )
    config = tmp_path / "h2o.conf"
    config.write_text(H2O_TLS.format(d=tmp_path, port=free_port))
    h2o = subprocess.Popen(["h2o", "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        children = wait_for(
            lambda: Path(f"/proc/{h2o.pid}/task/{h2o.pid}/children").read_text().split() if h2o.poll() is None else [],
            lambda c: (
                h2o.poll() is not None
                or (any(listening_unix_paths(int(p)) for p in c) and not listener_holders(c, free_port))
            ),
            30,
            "h2o's neverbleed child listening on its Unix socket, and no child holding h2o's TCP listener",
        )
        assert h2o.poll() is None
        helper = next(int(p) for p in children if listening_unix_paths(int(p)))
        assert any("openssl-privsep" in path for path in listening_unix_paths(helper))  # the witness: neverbleed
        server = find_server(h2o.pid)
        assert server.fed == frozenset()
        assert server.pids == [h2o.pid]
        result = run_cli(["inspect", str(h2o.pid)])
        assert result.exit_code == 0, result.output
        assert "Mechanism: epoll-herd (h2o's threads)" in result.stdout
        assert "fd-pass" not in result.stdout.split("What changes it")[0]
    finally:
        h2o.terminate()
        h2o.wait(10)
