"""An --observe-on host's observe (its Python and its bpftrace) ends within the coordinator's silence when the
coordinator vanishes with the way to that host cut: its observation was bounded by the run's length only (LONGEST_S,
a day, for a load with no end of its own), so a coordinator SIGKILLed while srv's link was down left observe's Python
and bpftrace there until TCP gave up on the connection. The coordinator now beats every host it reached, the
--observe-on host too (loads/hosts/beats.py), and the host's watch ends its Python after COORDINATOR_SILENT_S (10 s)
without a beat; bpftrace dies with it (PR_SET_PDEATHSIG). The witness is srv's own /proc. A real cluster
(tests/cluster.py), as test_clients_faults.py, whose serve in srv is the server driven and observed.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from cluster import Cluster, cluster_fixture
from test_clients_faults import (
    CHANNEL_CLOSED_S,
    GONE_S,
    LONG,
    assert_nothing_left,
    needs_bpftrace,
    opened,
    remote_processes,
    start,
    target_args,
    tree,
    under_way,
)
from test_clients_faults import server as server  # the fixture: `accept-order serve -w 3` in srv
from test_clients_silent_host import link_down
from waiting import ended_within

from accept_order.loads.hosts.beats import COORDINATOR_SILENT_S

cluster = cluster_fixture(clients=2)


@needs_bpftrace
def test_a_coordinator_killed_with_the_observed_host_cut_off_leaves_nothing_there(
    cluster: Cluster, tmp_path: Path, server: tuple[subprocess.Popen[str], str, Path]
) -> None:
    serve, address, _ = server
    spared = tree(serve)
    before = opened(cluster)
    run = start(tmp_path, *target_args(cluster, tmp_path, address, "--observe-on", "srv", "-c", "4", *LONG))
    under_way(run, cluster, before)  # the load began: observe's probes were on (the load waits for them)
    observing = remote_processes(cluster, "srv", spared)
    assert any("bpftrace" in p for p in observing), observing
    with link_down(cluster, "srv"):
        run.proc.kill()
        assert run.wait() == -signal.SIGKILL
        ended_within(  # theirs closed with the coordinator's ssh
            lambda: [p for name in ("c1", "c2") for p in remote_processes(cluster, name)],
            CHANNEL_CLOSED_S,
            "the client hosts' loads to end as their channels closed",
        )
        began = time.monotonic()
        ended_within(  # its sshd session stays until the link is up (it has its end to tell ssh): sshd's, not ours
            lambda: [p for p in remote_processes(cluster, "srv", spared) if "sshd" not in p],
            COORDINATOR_SILENT_S + GONE_S,
            "observe's Python and bpftrace in srv to end, its link down",
        )
        print(f"observe in srv gone {time.monotonic() - began:.1f} s after the clients' end")  # -s shows it
    assert_nothing_left(cluster, str(tmp_path), spared)
    assert serve.poll() is None  # the server observed is not the tool's: left as it was
