"""--observe-on at a host where nothing listens on the target's port says it of that host, not of 'this' one.

'latency --clients c1,c2 --target SRV:8081 --observe-on c1' (c1 for srv, a slip) read '--observe-on c1: nobody
listens on port 8081 in this network namespace', observe's own words from c1, where 'this' reads as the
coordinator's namespace, and named no way out. Now '--observe-on c1: nobody listens on port 8081 there; --observe-on
names the server's host'.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE

from cluster import Cluster, cluster_fixture
from conftest import wait_for
from test_clients_faults import assert_nothing_left, own_config, start

cluster = cluster_fixture(clients=1)
PORT = 9  # discard: nothing listens there in any of the cluster's namespaces


def test_observe_on_a_host_without_the_server_names_that_host(cluster: Cluster, tmp_path: Path) -> None:
    config = own_config(cluster, tmp_path)
    target = f"{cluster.address('srv')}:{PORT}"
    args = ["latency", "--clients", "c1", "--ssh-config", config, "--target", target, "-w", "1", "--duration", "1s"]
    run = start(tmp_path, *args, "--observe-on", "c1")
    assert run.wait() == 1
    assert run.error_lines() == [
        f"accept-order: error: --observe-on c1: nobody listens on port {PORT} there; --observe-on names the server's "
        "host"
    ], run.err.text
    assert_nothing_left(cluster, str(tmp_path))


LISTEN = """
import signal, socket, sys
s = socket.socket()
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(8)
print("listening", flush=True)
signal.pause()
"""


def test_a_port_two_programs_serve_says_what_observe_on_can_do(cluster: Cluster, tmp_path: Path) -> None:
    """'observe ... give the pid' is observe's way out: --observe-on knows the port alone, and takes no pid."""
    port = 18_777
    server = cluster.run_in("srv", [sys.executable, "-c", LISTEN, cluster.address("srv"), str(port)], stdout=PIPE)
    shell = f'"{sys.executable}" -c "$0" 127.0.0.1 {port} & wait'  # no kin of the other: a shell's child
    other = cluster.run_in("srv", ["sh", "-c", shell, LISTEN], stdout=PIPE, start_new_session=True)
    try:
        for started in (server, other):
            assert started.stdout is not None and started.stdout.readline() == b"listening\n"
        config = own_config(cluster, tmp_path)
        target = f"{cluster.address('srv')}:{port}"
        args = ["latency", "--clients", "c1", "--ssh-config", config, "--target", target, "-w", "1", "--duration", "1s"]
        run = start(tmp_path, *args, "--observe-on", "srv")
        assert run.wait() == 1
        [line] = run.error_lines()
        assert line.startswith(
            f"accept-order: error: --observe-on srv: port {port} is served by more than one program: "
        )
        assert line.endswith(
            "; --observe-on finds the server by its port alone: run 'accept-order observe PID' on that host"
        ), line
        assert "give the pid" not in line
    finally:
        server.kill()
        os.killpg(other.pid, signal.SIGKILL)  # the shell and its child: killing the shell alone left the child
        for started in (server, other):
            started.wait(30)
    wait_for(lambda: listening(cluster, port), lambda held: not held, 30, f"nothing on port {port} in srv")


def listening(cluster: Cluster, port: int) -> str:
    ss = ["ip", "netns", "exec", cluster.namespace("srv"), "ss", "-Hltn", f"sport = :{port}"]
    return subprocess.run(ss, capture_output=True, text=True, check=True, timeout=30).stdout
