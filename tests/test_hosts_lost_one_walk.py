"""A command's end walks its result once for the client hosts lost.

Every command that drives loads ended with end_if_nothing_served(tallies, hosts_lost_said(result, ...)) and then
end_if_hosts_lost(result, ...): each walked the whole result for the lost hosts and every load twice more for the
hosts that reported it where a host was lost, so each run's hosts were read 6 times (twice where none was lost).
One end (cli/hosts_lost.end_if_unmeasured) walks it once (core/host_outcome.hosts_lost_in); its
lines are the ones the served-nothing and lost-host tests pin."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from accept_order.cli.hosts_lost import end_if_unmeasured
from accept_order.cli.served_nothing import of_totals
from accept_order.core.errors import LoadError, NothingServed
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.host_outcome import HostOutcome, hosts_lost_in
from accept_order.core.spec import ServerSpec

READS: Counter[str] = Counter()


@dataclass(frozen=True)
class Run:
    """A load's result as the walk sees it: its server, what it served and failed, its client hosts."""

    label: str
    ok: int
    hosts: tuple[HostOutcome, ...]
    errors: dict[str, int]
    server: ServerSpec

    def __getattribute__(self, name: str) -> Any:
        if name == "hosts":
            READS[object.__getattribute__(self, "label")] += 1
        return object.__getattribute__(self, name)


def _host(name: str, lost: str | None = None) -> HostOutcome:
    return HostOutcome(name, LatencyHistogram(), {}, (1,), 1.0, lost=lost)


def _run(label: str, *hosts: HostOutcome, ok: int = 10) -> Run:
    return Run(label, ok, hosts, {"timeout": 0 if ok else 4}, ServerSpec(mode=label).validated())


def test_lost_and_reported_in_one_walk() -> None:
    """c2 lost while epoll ran, reached again for reuseport: each run's hosts read once."""
    READS.clear()
    epoll = _run("epoll", _host("c1"), _host("c2", "silent for 10 s"))
    reuseport = _run("reuseport", _host("c1"), _host("c2"))
    lost, reported = hosts_lost_in([[epoll, reuseport]], [epoll, reuseport])
    assert lost == {"c2": "silent for 10 s"} and reported == [{"c1"}, {"c1", "c2"}]
    assert READS == {"epoll": 1, "reuseport": 1}, READS


def test_a_load_not_in_the_result_is_walked_on_its_own() -> None:
    outside = _run("epoll", _host("c1"), _host("c2", "silent"))
    lost, reported = hosts_lost_in([], [outside])
    assert lost == {} and reported == [{"c1"}], (lost, reported)  # lost: the result's alone, as before


def test_the_end_reads_each_runs_hosts_once() -> None:
    READS.clear()
    runs = [_run("epoll", _host("c1"), _host("c2", "silent for 10 s")), _run("reuseport", _host("c1"), _host("c2"))]
    with pytest.raises(LoadError) as raised:
        end_if_unmeasured([of_totals(r) for r in runs], runs, "out.json", [(r.label, r) for r in runs])
    assert str(raised.value) == (
        "client host c2 was lost during the run: silent for 10 s; the report and out.json hold what the other hosts "
        "drove in epoll, and what every host drove in reuseport"
    )
    assert READS == {"epoll": 1, "reuseport": 1}, READS
    READS.clear()
    empty = [_run("epoll", _host("c1", "silent"), ok=0)]
    with pytest.raises(NothingServed) as nothing:  # served nothing: its line names the lost host too
        end_if_unmeasured([of_totals(r) for r in empty], empty, None, [(r.label, r) for r in empty])
    assert "served nothing" in str(nothing.value) and "client host c1 was lost during the run" in str(nothing.value)
    assert READS == {"epoll": 1}, READS
