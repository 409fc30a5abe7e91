"""ramp samples the accept queues of the server's own listeners: its port on its address (or a wildcard), not
another process's socket on the same port and another address (0.3 read every listener of the port), as the
kernel evidence of every run chooses its listeners."""

from __future__ import annotations

import socket

import pytest

from accept_order.core.measures import ListenerRow
from accept_order.experiments.ramp import run as ramp
from accept_order.probes import listeners
from accept_order.probes.listeners import serving_on


def row(address: str, queue: int) -> ListenerRow:
    return ListenerRow("ipv6" if ":" in address else "ipv4", address, 8080, queue, 511, 1, "netlink")  # type: ignore[arg-type]


ROWS = [row("127.0.0.1", 7), row("127.0.0.2", 90), row("0.0.0.0", 3), row("::", 1), row("::1", 50)]


@pytest.mark.parametrize(
    ("host", "queues"),
    # 0.0.0.0 takes no IPv6 connection (::1); the socket bound to the address gets them before a wildcard, and
    # 0.0.0.0 the IPv4 ones before :: (v6only not known): probes/listeners.serving_on (review RQ)
    [
        ("127.0.0.1", [7]),
        ("127.0.0.2", [90]),
        ("127.0.0.3", [3]),
        ("::1", [50]),
        ("0::1", [50]),
        ("::2", [1]),
        ("", ROWS),
    ],
)
def test_the_servers_listeners_are_its_address_and_the_wildcards(host: str, queues: list[object]) -> None:
    expected = [r.queue for r in ROWS] if queues is ROWS else queues
    assert [r.queue for r in serving_on(ROWS, host)] == expected


def test_ramp_samples_its_servers_queues_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listeners, "listening_sockets", lambda port: ROWS)
    peaks: list[int] = []
    ramp._sampling(8080, "127.0.0.1", peaks, None)(0, 0.0)
    assert peaks == [7]  # not the 90 queued at 127.0.0.2:8080 nor the 50 at [::1]:8080 (nor the wildcards': RQ)


def test_a_real_listener_elsewhere_on_the_port_is_not_sampled() -> None:
    with socket.socket() as ours, socket.socket() as theirs:
        ours.bind(("127.0.0.1", 0))
        port = ours.getsockname()[1]
        try:
            theirs.bind(("127.0.0.2", port))
        except OSError:
            pytest.skip("127.0.0.2 is not a loopback address here")
        ours.listen(8)
        theirs.listen(8)
        # three connections wait in the other socket's queue, none in ours (a loopback connect returns once
        # the handshake is done, the connection queued)
        clients = [socket.create_connection(("127.0.0.2", port)) for _ in range(3)]
        try:
            assert ramp._queues(port, "127.0.0.2") == [3] and ramp._queues(port, "127.0.0.1") == [0]
        finally:
            for client in clients:
                client.close()
