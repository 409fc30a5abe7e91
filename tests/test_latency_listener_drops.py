"""latency's kernel evidence says how many of the namespace's overflows were the server's own listeners'.

'latency -w 2 -n 2000 -c 16' beside another program's backlog-1 listener that never accepts said 'kernel counters:
ListenOverflows +17, ListenDrops +17 (host-wide: shared network namespace, may include other TCP traffic on this
host)', which leaves a reader to guess whose they were. The evidence now keeps the server's listeners' own drops
between its start and end snapshots (sk_drops over netlink: probes/listeners.listener_drops, checked against
SO_MEMINFO in test_ramp_listener_drops.py): '...; the server's listeners dropped none', and where the run did overflow
(--backlog 4, -c 64, --work 1ms) 'ListenOverflows +147, ...; the server's listeners dropped 147'. merge adds them
where both files have them."""

from __future__ import annotations

from typing import Any

from accept_order.core.measures import ListenerRow
from accept_order.probes.evidence import EvidenceCapture
from accept_order.render.evidence import counters_text
from accept_order.results.merge_listeners import add_listener_drops

ROW = ListenerRow("ipv4", "127.0.0.1", 5000, 0, 511, 42)


class _Counters:
    def __init__(self, *readings: dict[str, int]) -> None:
        self.readings = list(readings)

    def __call__(self) -> dict[str, int]:
        return self.readings.pop(0)


def _evidence(drops: list[int | None]) -> dict[str, Any]:
    readings = iter(drops)
    capture = EvidenceCapture(
        read_counters=_Counters({"TcpExtListenOverflows": 10}, {"TcpExtListenOverflows": 27}),
        list_listeners=lambda port, pids: [ROW],
        read_affinity=lambda pid: [0, 1],
        private=False,
        names=("TcpExtListenOverflows",),
        read_drops=lambda port, host, pids: next(readings),
    )
    capture.before()
    capture.listeners(5000, "start")
    capture.listeners(5000, "end")
    return capture.after(5000, [])


def test_the_drops_between_the_snapshots_are_kept_and_said() -> None:
    evidence = _evidence([3, 3])
    assert evidence["listener_drops"] == 0
    said = counters_text(evidence).plain
    assert "ListenOverflows +17 (host-wide: shared network namespace" in said, said
    assert said.endswith("; the server's listeners dropped none)"), said
    assert counters_text(_evidence([3, 20])).plain.endswith("; the server's listeners dropped 17 handshake packets)")


def test_nothing_is_said_where_no_listen_counter_moved() -> None:
    evidence = {**_evidence([3, 3]), "counters": {"TcpExtTCPAbortOnClose": 7}}  # haproxy's sweep: closes, no drop
    assert counters_text(evidence).plain.endswith("may include other TCP traffic on this host)")


def test_without_both_readings_nothing_is_said() -> None:
    for drops in ([None, 4], [4, None], [9, 4]):  # unread, or a listener replaced between them
        evidence = _evidence(drops)
        assert "listener_drops" not in evidence
        assert counters_text(evidence).plain.endswith("may include other TCP traffic on this host)")


def test_merge_adds_them_only_where_both_files_read_them() -> None:
    into: dict[str, Any] = {"listener_drops": 2}
    add_listener_drops(into, {"listener_drops": 5})
    assert into["listener_drops"] == 7
    add_listener_drops(into, {})
    assert "listener_drops" not in into
    add_listener_drops(into, {"listener_drops": 5})
    assert "listener_drops" not in into
