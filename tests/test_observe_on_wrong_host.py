"""--observe-on at a host where nothing listens on the target's port says it of that host, not of 'this' one.

'latency --clients c1,c2 --target SRV:8081 --observe-on c1' (c1 for srv, a slip) read '--observe-on c1: nobody
listens on port 8081 in this network namespace', observe's own words from c1, where 'this' reads as the
coordinator's namespace, and named no way out. Now '--observe-on c1: nobody listens on port 8081 there; --observe-on
names the server's host'.
"""

from __future__ import annotations

from pathlib import Path

from cluster import Cluster, cluster_fixture
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
