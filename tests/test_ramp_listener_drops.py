"""A ramp step's overflows are the server's own listeners' drops, not every listener's of the network namespace.

'ramp -w 2 --rates 100,200 --step 1s --p99 1us' beside another program whose backlog-1 listener never accepts
(tests' own loads do that on a shared machine) said 'There: the accept queue overflowed 154 times' of a server whose
queue never held more than 1: ListenOverflows counts every listener of the namespace. Each listener counts its own
(sk_drops, `ss -ltm`'s d), read over netlink (INET_DIAG_SKMEMINFO): with it the same ramp said 'ListenOverflows +220
host-wide, none of them the server's (its listeners dropped none)', and a ramp that did overflow (--backlog 8, 2000/s
at 1 ms of work) 'the server's listeners dropped 97 connection attempts' beside ListenOverflows +95
(packets, not connections, as test_listener_drops_are_packets.py says: now '... 97 handshake packets')."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path

from conftest import run_cli
from dropping_listener import dropped_more, own_drops

from accept_order.experiments.ramp.result import RampResult, RampStep
from accept_order.experiments.ramp.step_verdict import signals
from accept_order.probes.listeners import listener_drops


def test_the_drops_are_the_listeners_own_count() -> None:
    with socket.socket() as listener, socket.socket() as other:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        other.bind(("127.0.0.1", 0))  # another listener on this host: its drops are none of the first's
        other.listen(1)
        port, port_other = listener.getsockname()[1], other.getsockname()[1]
        assert listener_drops(port, "127.0.0.1") == 0
        dropped_more(other)  # the kernel's count on the socket, the witness
        assert listener_drops(port_other, "127.0.0.1") == own_drops(other) > 0
        assert listener_drops(port, "127.0.0.1") == 0  # the first listener dropped nothing


def _step(**changes: object) -> RampStep:
    step = RampStep(
        kind="rate",
        offered=100.0,
        wall_s=1.0,
        served=(50, 50),
        errors={},
        p50_us=400,
        p99_us=14000,
        p999_us=18000,
        max_us=18000,
        counters={"TcpExtListenOverflows": 154},
        sockets={},
        queues=(1,),
        worker_cpu=(0.01, 0.0),
        driver_cpu=0.01,
    )
    return dataclasses.replace(step, **changes)  # type: ignore[arg-type]


def test_others_overflows_are_not_the_servers() -> None:
    seen = "; ".join(signals(_step(listener_drops=0), workers=2, cpus=2))
    assert "ListenOverflows +154 host-wide, none of them the server's (its listeners dropped none)" in seen, seen
    assert "the accept queue overflowed" not in seen, seen


def test_the_servers_own_drops_are_its_overflows() -> None:
    seen = "; ".join(signals(_step(listener_drops=97), workers=2, cpus=2))
    assert "the accept queue overflowed: the server's listeners dropped 97 handshake packets" in seen, seen


def test_without_the_listeners_count_the_namespace_counter_is_said_as_before() -> None:
    seen = "; ".join(signals(_step(), workers=2, cpus=2))
    assert "the accept queue overflowed 154 times" in seen, seen


def test_the_table_shows_the_servers_drops_and_a_file_keeps_them(tmp_path: Path) -> None:
    step = _step(listener_drops=0)
    assert RampStep.from_dict(step.to_dict()).listener_drops == 0
    assert "listener_drops" not in _step().to_dict()  # files without it read as before
    golden = json.loads((Path(__file__).parent / "data" / "golden" / "ramp.json").read_text())
    assert all(RampStep.from_dict(s).listener_drops is None for s in golden["steps"])
    for s in golden["steps"]:
        s["counters"] = {"TcpExtListenOverflows": 154}
        s["listener_drops"] = 0
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(golden))
    RampResult.from_dict(golden)  # the schema takes it
    out = run_cli(["show", str(path)]).stdout
    rows = [line.split() for line in out.splitlines() if line.strip().split(" ")[0].endswith("/s")]
    rows = rows[: len(golden["steps"])]  # the table's (the knee's lines come after)
    # offered, got/s, p50, p99, p99.9, failed, overflows: the server's listeners' 0, not the namespace's 154
    assert rows and all(row[6] == "0" for row in rows), rows
