"""The per-host table of a load from client hosts (render/hosts.py) and the lines below it: a host that started
late, a straggler, a clock known too loosely, a lost host; each said where it applies and nowhere else."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.hosts import ClientHosts, HostOutcome
from accept_order.loads.hosts.driven import STARTED_LATE_S
from accept_order.render.hosts import HostsPart, host_parts, on_hosts


def host(name: str, served: int = 100, **fields: object) -> HostOutcome:
    histogram = LatencyHistogram()
    if served:
        histogram.add(1000, served)
    values: dict[str, object] = {
        "offset_s": 0.0002,
        "uncertainty_s": 0.0001,
        "started_s": 0.0003,
        "ended_s": 1.0,
        **fields,
    }
    return HostOutcome(name, histogram, {}, (served,), 1.0, **values)  # type: ignore[arg-type]


def text(parts: list[HostsPart], part_name: str | None = None) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    for renderable in host_parts(parts, part_name):
        console.print(renderable)
    return console.export_text()


def notes(hosts: list[HostOutcome], wall_s: float = 1.0, rate: float | None = None) -> list[str]:
    """The lines below the table, without the table."""
    said = text([HostsPart(None, hosts, wall_s, rate)])
    return [line for line in said.splitlines() if line.startswith(("Warning:", "Straggler:", "Lost:"))]


def test_hosts_on_time_together_and_with_good_clocks_say_nothing_more() -> None:
    assert notes([host("c1"), host("c2", ended_s=1.02)]) == []
    said = text([HostsPart(None, [host("c1"), host("c2")], 1.0)])
    assert said.count("on time") == 2 and "+0.20 ± 0.10 ms" in said


def test_a_host_that_started_late_is_named_with_how_late() -> None:
    late = STARTED_LATE_S + 0.07
    (line,) = notes([host("c1"), host("c2", started_s=late)])
    assert line.startswith("Warning: c2 started") and f"{1000 * late:.0f} ms after its start time" in line
    assert notes([host("c1"), host("c2", started_s=STARTED_LATE_S - 0.01)]) == []  # late, but within the bound


def test_an_open_loops_host_is_late_against_its_own_stripe() -> None:
    """At 10/s host 1 is due 0.1 s after host 0: starting then is on time, not 100 ms late."""
    assert notes([host("c1"), host("c2", started_s=0.1003)], rate=10.0) == []
    (line,) = notes([host("c1"), host("c2", started_s=0.1003)], rate=1000.0)
    assert line.startswith("Warning: c2 started 99 ms")


def test_a_host_is_late_against_the_stripe_it_was_given() -> None:
    """A host not reached for a later load takes no stripe: c3, listed third, was due 0.1 s after the start at
    10/s (the second stripe), and starting then is on time."""
    lost = host("c2", served=0, started_s=None, ended_s=None, lost="not reached for this load: gone")
    said = notes([host("c1"), lost, host("c3", started_s=0.1003, due_s=0.1)], rate=10.0)
    assert [line.split(":")[0] for line in said] == ["Lost"]  # and no late start
    said = notes([host("c1"), lost, host("c3", started_s=0.2003, due_s=0.1)], rate=10.0)
    assert [line for line in said if line.startswith("Warning: c3 started 100 ms")]


def test_a_straggler_is_named_with_how_much_later_it_ended() -> None:
    # the rule: more than 10% of the wall time and more than 50 ms after the first host to end
    (line,) = notes([host("c1", ended_s=1.0), host("c2", ended_s=1.3), host("c3", ended_s=1.05)], wall_s=1.3)
    assert line.startswith("Straggler: c2 ended 300 ms after the first host to end (c1)")
    assert notes([host("c1", ended_s=1.0), host("c2", ended_s=1.12)], wall_s=1.3) == []  # under 10%
    assert notes([host("c1", ended_s=0.1), host("c2", ended_s=0.14)], wall_s=0.14) == []  # under 50 ms


def test_a_clock_known_too_loosely_is_a_warning_naming_its_host() -> None:
    (line,) = notes([host("c1"), host("c2", uncertainty_s=0.008)])  # 8 ms: past 5 ms
    assert line.startswith("Warning: c2's clock is known to ± 8.0 ms only")
    loose = host("c2", uncertainty_s=0.003, ended_s=0.2)
    (short,) = notes([host("c1", ended_s=0.2), loose], wall_s=0.2)  # 3 ms: past 1% of 0.2 s
    assert "c2's clock" in short
    assert notes([host("c1"), host("c2", uncertainty_s=0.003)]) == []
    # a short burst: 0.2 ms is 1% of 20 ms, but no clock read over ssh is known better: no warning
    burst = [host("c1", ended_s=0.02, uncertainty_s=0.0002), host("c2", ended_s=0.02, uncertainty_s=0.0002)]
    assert notes(burst, wall_s=0.02) == []


def test_a_lost_host_is_said_with_why_and_what_it_did() -> None:
    lost = host("c2", served=0, started_s=None, ended_s=None, lost="its connection closed after 120 connections")
    said = text([HostsPart(None, [host("c1"), lost], 1.0)])
    assert "lost: its connection closed after 120 connections" in said  # in the table
    (line,) = notes([host("c1"), lost])
    assert line == "Lost: c2: its connection closed after 120 connections; none of its connections are in the figures"


def test_names_from_files_and_hosts_are_escaped() -> None:
    said = text([HostsPart("5\x1b[2J", [host("c1\x1b]0;x\x07", started_s=0.2)], 1.0)], "step")
    assert "\x1b" not in said and "\x07" not in said
    assert "c1\\x1b]0;x\\x07" in said and "5\\x1b[2J" in said
    assert "\x1b" not in on_hosts(ClientHosts(("a\x1bb",)))


def test_several_loads_share_one_table_named_by_their_part() -> None:
    said = text([HostsPart("100", [host("c1"), host("c2")], 1.0), HostsPart("200", [host("c1")], 1.0)], "clients")
    rows = [line.split() for line in said.splitlines() if line.split()[:1] in (["100"], ["200"])]
    assert [r[:2] for r in rows] == [["100", "c1"], ["100", "c2"], ["200", "c1"]]
    assert host_parts([HostsPart(None, [], 1.0)]) == []  # a load driven from this host: no table


def test_the_headline_names_the_hosts() -> None:
    assert on_hosts(None) == "" and on_hosts(ClientHosts((), observe_on="srv")) == ""
    assert on_hosts(ClientHosts(("c1",))) == " on client host c1"
    many = ClientHosts(tuple(f"c{i}" for i in range(1, 7)))
    assert on_hosts(many) == " on each of 6 client hosts (c1, c2, c3, c4, ...)"


def test_failures_by_errno_in_the_table() -> None:
    failing = dataclasses.replace(host("c1"), errors={"ECONNREFUSED": 3, "timeout": 1})
    said = text([HostsPart(None, [failing], 1.0)])
    assert "4 (3 ECONNREFUSED, 1 timeout)" in said
