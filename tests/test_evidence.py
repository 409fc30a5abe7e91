"""Tests for accept_order.probes.evidence and render.evidence: the capture API (with fake readers), the
renderers, and the evidence every `run` and latency result carries (live, on loopback)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

import psutil
import pytest
from rich.console import Console

from accept_order import api
from accept_order.core.measures import ListenerRow
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.order.report import run_report
from accept_order.experiments.order.result import RunResult
from accept_order.probes import evidence, netstat
from accept_order.probes.evidence import EvidenceCapture
from accept_order.render import evidence as render_evidence

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux procfs/netlink")


def text_of(renderable: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


class FakeCounters:
    """Returns each snapshot in turn, like /proc/net/netstat read twice."""

    def __init__(self, *snapshots: dict[str, int]) -> None:
        self.snapshots = list(snapshots)

    def __call__(self) -> dict[str, int]:
        return self.snapshots.pop(0)


ROW = ListenerRow("ipv4", "127.0.0.1", 5000, 0, 128, 42)


def capture_with(before: dict[str, int], after: dict[str, int], **kwargs: object) -> EvidenceCapture:
    return EvidenceCapture(
        read_counters=FakeCounters(before, after),
        list_listeners=lambda port, pids: [ROW],
        read_affinity=lambda pid: [0, 1],
        **kwargs,  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------------------------------------
# Capture with fake readers
# ------------------------------------------------------------------------------------------------


def test_only_nonzero_deltas_are_kept_in_watch_order() -> None:
    cap = capture_with(
        {"TcpExtListenDrops": 5, "TcpExtListenOverflows": 2, "TcpExtSyncookiesSent": 1, "Other": 0},
        {"TcpExtListenDrops": 9, "TcpExtListenOverflows": 6, "TcpExtSyncookiesSent": 1, "Other": 100},
        private=False,
    )
    cap.before()
    ev = cap.after(5000, [111])
    assert ev["counters"] == {"TcpExtListenOverflows": 4, "TcpExtListenDrops": 4}
    assert list(ev["counters"]) == ["TcpExtListenOverflows", "TcpExtListenDrops"]  # WATCHED order
    assert ev["counters_watched"] == ["TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtSyncookiesSent"]
    assert ev["counters_available"] is True
    assert "Other" not in ev["counters"]  # only the watched counters


def test_shared_and_private_namespace_are_said() -> None:
    shared = capture_with({"TcpExtListenDrops": 0}, {"TcpExtListenDrops": 3}, private=False)
    shared.before()
    ev = shared.after()
    assert ev["shared_namespace"] is True
    assert ev["note"] == netstat.SHARED_NAMESPACE_NOTE
    assert "shared network namespace" in text_of(render_evidence.counters_text(ev))

    private = capture_with({"TcpExtListenDrops": 0}, {"TcpExtListenDrops": 3}, private=True)
    private.before()
    ev = private.after()
    assert ev["shared_namespace"] is False
    assert ev["netns"]["private"] is True
    shown = text_of(render_evidence.counters_text(ev))
    assert "private network namespace" in shown and "ListenDrops +3" in shown


def test_listener_snapshots_and_automatic_end_snapshot() -> None:
    seen: list[int] = []

    def listeners(port: int, pids: Sequence[int]) -> list[ListenerRow]:
        seen.append(port)
        return [ROW]

    cap = EvidenceCapture(read_counters=FakeCounters({}, {}), list_listeners=listeners, private=False)
    cap.before()
    assert cap.listeners(5000, "start") == [ROW]
    ev = cap.after(5000, [])
    assert seen == [5000, 5000]
    assert set(ev["listeners"]) == {"start", "end"}
    assert ev["listeners"]["end"] == [
        {
            "family": "ipv4",
            "address": "127.0.0.1",
            "port": 5000,
            "queue": 0,
            "backlog": 128,
            "inode": 42,
            "source": "netlink",
            "v6only": None,  # an IPv6 socket's IPV6_V6ONLY (inet_diag); None: IPv4
        }
    ]
    # An explicit "end" snapshot is not taken twice.
    cap2 = EvidenceCapture(read_counters=FakeCounters({}, {}), list_listeners=listeners, private=False)
    cap2.listeners(5000, "end")
    cap2.after(5000, [])
    assert seen == [5000, 5000, 5000]


def test_unreadable_sources_are_reported_not_raised() -> None:
    def broken_counters() -> dict[str, int]:
        raise OSError("no procfs")

    def broken_listeners(port: int, pids: Sequence[int]) -> list[ListenerRow]:
        raise OSError("no netlink")

    def gone(pid: int) -> list[int]:
        raise psutil.NoSuchProcess(pid)

    cap = EvidenceCapture(broken_counters, broken_listeners, gone, private=False)
    cap.before()
    ev = cap.after(5000, [123])
    assert ev["counters_available"] is False
    assert ev["counters"] == {}
    assert ev["listeners"] == {"end": []}
    assert ev["affinity"] == [{"index": 0, "pid": 123, "cpus": None}]
    assert any("no procfs" in e for e in ev["errors"]) and any("no netlink" in e for e in ev["errors"])
    shown = text_of(render_evidence.evidence_report(ev))
    assert "not available" in shown and "none found" in shown


def test_missing_counters_file_means_not_available() -> None:
    cap = capture_with({}, {}, private=False)  # read_netstat returns {} where there is no procfs
    cap.before()
    assert cap.after()["counters_available"] is False


def test_env_declares_private_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netstat, "in_private_netns", lambda: False)
    monkeypatch.delenv(evidence.PRIVATE_ENV, raising=False)
    assert evidence.netns_privacy()[0] is False
    monkeypatch.setenv(evidence.PRIVATE_ENV, "1")
    private, why = evidence.netns_privacy()
    assert private and evidence.PRIVATE_ENV in why
    monkeypatch.setattr(netstat, "in_private_netns", lambda: True)
    monkeypatch.delenv(evidence.PRIVATE_ENV)
    assert evidence.netns_privacy() == (True, "differs from PID 1's network namespace")


# ------------------------------------------------------------------------------------------------
# Renderers
# ------------------------------------------------------------------------------------------------


def _doc(**overrides: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "listeners": {
            "start": [{"family": "ipv4", "address": "127.0.0.1", "port": 5000, "queue": 0, "backlog": 4}],
            "end": [{"family": "ipv6", "address": "::1", "port": 5000, "queue": q, "backlog": 4} for q in (1, 2, 3)],
        },
        "counters": {"TcpExtListenOverflows": 7},
        "counters_watched": list(netstat.WATCHED_COUNTERS),
        "counters_available": True,
        "affinity": [{"index": 0, "pid": 1, "cpus": [0, 1]}, {"index": 1, "pid": 2, "cpus": [1]}],
        "shared_namespace": True,
        "note": netstat.SHARED_NAMESPACE_NOTE,
        "errors": [],
    }
    doc.update(overrides)
    return doc


def test_evidence_report_is_compact_and_complete() -> None:
    shown = text_of(render_evidence.evidence_report(_doc()))
    assert "listeners (start): 127.0.0.1:5000, one shared accept queue; Recv-Q 0, Send-Q 4" in shown
    assert "listeners (end): [::1]:5000, 3 accept queues (one per socket); Recv-Q 1 2 3, Send-Q 4" in shown
    assert "ListenOverflows +7" in shown
    assert "shared network namespace" in shown
    assert "worker 0 0-1, worker 1 1" in shown
    quiet = text_of(render_evidence.evidence_report(_doc(counters={}, affinity=[{"index": 0, "pid": 1, "cpus": [0]}])))
    assert f"none of {len(netstat.WATCHED_COUNTERS)} drop/overflow counters moved" in quiet
    assert "the worker on CPUs 0" in quiet
    assert text_of(render_evidence.evidence_report({})).strip() == ""


def test_listener_table_looks_like_ss() -> None:
    rows = _doc()["listeners"]["end"]  # type: ignore[index]
    shown = text_of(render_evidence.listener_table(rows))
    assert "Recv-Q" in shown and "Send-Q" in shown and "Local Address:Port" in shown
    assert shown.count("LISTEN") == 3
    assert "[::1]:5000" in shown


# ------------------------------------------------------------------------------------------------
# Live: every run carries the evidence
# ------------------------------------------------------------------------------------------------


@LINUX_ONLY
def test_shared_mode_run_shows_one_listener_with_its_backlog() -> None:
    result = api.run(mode="blocking", workers=3, connections=3, backlog=7)
    ev = result.evidence
    for label in ("start", "end"):
        (row,) = ev["listeners"][label]
        assert row["port"] == result.port
        assert row["queue"] == 0  # everything was accepted before the end snapshot
        if row["source"] == "netlink":
            assert row["backlog"] == 7
    # The affinity the kernel reports for each pid is what the worker itself saw at start.
    assert [tuple(a["cpus"]) for a in ev["affinity"]] == [c.affinity for c in result.counters]
    assert [a["pid"] for a in ev["affinity"]] == [c.pid for c in result.counters]
    assert isinstance(ev["shared_namespace"], bool)
    assert ev["shared_namespace"] is not evidence.netns_privacy()[0]
    shown = text_of(run_report(result))
    assert "Kernel evidence" in shown and "one shared accept queue" in shown


@LINUX_ONLY
def test_reuseport_run_shows_one_listener_per_worker() -> None:
    result = api.run(mode="reuseport", workers=3, connections=3)
    rows = result.evidence["listeners"]["start"]
    assert len(rows) == 3
    assert len({r["inode"] for r in rows}) == 3
    assert {r["port"] for r in rows} == {result.port}
    assert "3 accept queues" in text_of(run_report(result))


@LINUX_ONLY
def test_evidence_survives_json_round_trip() -> None:
    result = api.run(mode="epoll", workers=2, connections=2)
    doc = json.loads(json.dumps(result.to_dict()))
    again = RunResult.from_dict(doc)
    assert again.evidence == result.evidence
    assert text_of(run_report(again)) == text_of(run_report(result))


def test_this_process_affinity_is_readable() -> None:
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_getaffinity on this platform")
    cap = EvidenceCapture(read_counters=FakeCounters({}, {}), private=False)
    cap.before()
    ev = cap.after(0, [os.getpid()])
    assert ev["affinity"][0]["cpus"] == sorted(os.sched_getaffinity(0))
    assert ev["listeners"] == {}


def test_affinities_read_while_running_are_kept_after_stop() -> None:
    alive = {7: [0], 8: [1]}

    def read(pid: int) -> list[int]:
        if pid not in alive:
            raise psutil.NoSuchProcess(pid)
        return alive[pid]

    cap = EvidenceCapture(read_counters=FakeCounters({}, {}), read_affinity=read, private=False)
    cap.before()
    cap.workers([7, 8])
    alive.clear()  # the workers stopped
    ev = cap.after()
    assert ev["affinity"] == [{"index": 0, "pid": 7, "cpus": [0]}, {"index": 1, "pid": 8, "cpus": [1]}]


@LINUX_ONLY
def test_latency_runs_carry_evidence() -> None:
    server = ServerSpec(mode="reuseport", workers=2)
    load = ConcurrentLoad(connections=4, concurrency=2, driver_procs=1)
    result = api.latency(server, load)
    assert result.errors == {} and sum(result.served) == 4
    ev = result.evidence
    assert len(ev["listeners"]["start"]) == 2 and len(ev["listeners"]["end"]) == 2
    assert [a["pid"] for a in ev["affinity"]] == [c.pid for c in result.counters]
    assert all(a["cpus"] for a in ev["affinity"])
    assert "counters" in ev and isinstance(ev["shared_namespace"], bool)


def test_listeners_on_other_addresses_are_left_out() -> None:
    rows = [
        ListenerRow("ipv4", "127.0.0.1", 5000, 0, 8, 1),
        ListenerRow("ipv4", "127.0.0.2", 5000, 0, 8, 2),
        ListenerRow("ipv6", "::", 5000, 0, 8, 3),
    ]
    cap = EvidenceCapture(
        read_counters=FakeCounters({}, {}), list_listeners=lambda port, pids: rows, host="127.0.0.1", private=False
    )
    assert [r.inode for r in cap.listeners(5000, "start")] == [1]  # not ::, which the bound one shadows (review RQ)
    everything = EvidenceCapture(read_counters=FakeCounters({}, {}), list_listeners=lambda port, pids: rows)
    assert len(everything.listeners(5000, "start")) == 3
