"""observe's load verdict on results made by hand: the byte shares are set beside the shares of the
connections they were counted on (each worker's connections seen held at a look), the worker furthest
from its share is named either way, the accept share is said apart where connections closed before a look
or were open before observing began, and no sentence says what the figures shown do not.

The figures of the first two cases are runs of the how-to (docs/howto/behind-a-proxy.md): h2load filling
a pool of 32 HTTP/2 connections over 4 nginx workers, and wrk -c6 (7 accepted, one of them closed before
a look) over the same nginx, on this machine (2 vCPUs, Linux 6.18)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from accept_order.experiments.observe.load_verdict import load_uneven
from accept_order.experiments.observe.report import observe_report
from accept_order.experiments.observe.result import ObservedWorker, ObserveResult
from accept_order.experiments.observe.verdict import verdict

GOLDEN = Path(__file__).parent / "data" / "golden" / "observe.json"
OLD_CAUSE = "the imbalance was made when they were accepted"


def observed(
    accepts: list[int], seen: list[int], bytes_in: list[int], accepted_seen: int, *, traced: bool = True
) -> ObserveResult:
    """The golden observation with these per-worker figures; every connection seen is still held."""
    base = ObserveResult.from_dict(json.loads(GOLDEN.read_text()))
    workers = tuple(
        replace(
            ObservedWorker(i, 100 + i, None, accepts[i] if traced else None, 0 if traced else None, None, 1.0, 10, 0),
            seen=None if traced else seen[i],
            connections_held=seen[i],
            connections_held_peak=seen[i],
            connections_observed=seen[i],
            bytes_in=bytes_in[i],
            bytes_out=bytes_in[i] * 6,
            segments_in=bytes_in[i] // 100,
            segments_out=bytes_in[i] // 100,
        )
        for i in range(len(seen))
    )
    return replace(
        base,
        workers=workers,
        intervals=(),
        traced=traced,
        load_samples=11,
        load_every_s=1.2,
        accepted_seen=accepted_seen,
    )


def report(result: ObserveResult) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(observe_report(result))
    return console.export_text()


H2LOAD = observed([13, 7, 5, 7], [13, 7, 5, 7], [537_700, 481_300, 395_800, 445_500], accepted_seen=32)
WRK = observed([3, 0, 1, 3], [3, 0, 0, 3], [1_900_000, 0, 0, 2_100_000], accepted_seen=6)


def test_a_worker_whose_connections_carry_less_is_named() -> None:
    """h2load: worker 0 holds 13 of the 32 connections (41%) but got 29% of the bytes. The byte share was
    above no accept share, and the verdict said 'accepts and bytes split alike'."""
    said = verdict(H2LOAD)
    assert (
        "worker 0 held 13 of the 32 connections seen (41%; an even share is 25%) but received 29% of the bytes: "
        "on average each of its connections carried less than the others' (idler, or slower clients, or a worker "
        "answering each more slowly as it holds more)" in said
    ), said
    assert not any("alike" in line or "split as the" in line for line in said), said
    # 32 connections, spread as an even split spreads them 1 time in 4: said, and no cause given to the spread
    resting = next(line for line in said if line.startswith("the load shares rest on 32 connections"))
    assert "split as chance would" in resting and "placed" not in resting
    # no cure offered: a split chance made, a cure (keepalive_requests, reuseport) redraws alike
    assert not load_uneven(H2LOAD)


def test_a_worker_whose_connections_carry_more_is_named() -> None:
    result = observed([10, 10, 10, 10], [10, 10, 10, 10], [100_000, 100_000, 100_000, 700_000], accepted_seen=40)
    said = verdict(result)
    assert (
        "worker 3 held 10 of the 40 connections seen (25%; an even share is 25%) but received 70% of the bytes: "
        "on average each of its connections carried more than the others' (busier, or faster clients)" in said
    ), said


def test_a_worker_whose_connections_carried_nothing_is_said_so() -> None:
    result = observed([10, 10, 10, 10], [10, 10, 10, 10], [0, 300_000, 300_000, 300_000], accepted_seen=40)
    assert any(
        line.startswith("worker 0 held 10 of the 40 connections seen (25%; an even share is 25%) but received 0%")
        and line.endswith(
            "its connections carried nothing between two looks at them (idle ones, or seen once before they closed)"
        )
        for line in verdict(result)
    ), verdict(result)


def test_a_connection_that_closed_before_a_look_makes_no_cause() -> None:
    """wrk: 7 accepted, 6 held (3 by worker 0, 3 by worker 3), one accepted by worker 2 closed before a
    look. The verdict said worker 3 'accepted 43% ... received 53% ... the imbalance was made when they were
    accepted'; the bytes split as the six connections did, and the seventh is said apart, with why."""
    said = verdict(WRK)
    assert (
        "the bytes split as the 6 connections seen held did: no worker's share of the bytes (0% to 52%) is 10 "
        "points or more from its share of the connections (0% to 50%)" in said
    ), said
    assert not any(OLD_CAUSE in line or "carried more" in line for line in said), said
    assert (
        "the accepts split otherwise: worker 2 accepted 14% of the 7 connections and held 0% of the 6 seen: 1 of 7 "
        "connections opened and closed between two samples (counted in the accepts, not in the load); a smaller "
        "share of its connections lived until a look (shorter-lived ones, or ones that carried nothing)" in said
    ), said
    assert any(line.startswith("the load shares rest on 6 connections") and "not a finding" in line for line in said)
    # said once: the accept line replaces the plain count of connections no look saw
    assert sum("opened and closed between two samples" in line for line in said) == 1


def test_connections_open_before_observing_are_said_apart() -> None:
    """20 connections open before observing began, all worker 0's; 20 new ones accepted evenly."""
    result = observed([5, 5, 5, 5], [25, 5, 5, 5], [250_000, 50_000, 50_000, 50_000], accepted_seen=20)
    said = verdict(result)
    assert (
        "the accepts split otherwise: worker 0 accepted 25% of the 20 connections and held 62% of the 40 seen: 20 of "
        "the 40 seen were open before observing began (the load counts them only)" in said
    ), said
    resting = next(line for line in said if line.startswith("the load shares rest on 40 connections"))
    assert "less evenly than chance" in resting and "accept order placed" not in resting, resting


def test_an_even_load_is_said_even() -> None:
    result = observed([10, 10, 10, 10], [10, 10, 10, 10], [250_000, 260_000, 240_000, 250_000], accepted_seen=40)
    said = verdict(result)
    assert (
        "the bytes split as the 40 connections seen held did: no worker's share of the bytes (24% to 26%) is 10 "
        "points or more from its share of the connections (25% to 25%)" in said
    ), said
    resting = next(line for line in said if line.startswith("the load shares rest on 40 connections"))
    assert "split as chance would" in resting and "worker" not in resting
    assert not any(line.startswith(("worker 0 held", "the accepts split")) for line in said), said
    assert not load_uneven(result)


def test_few_connections_are_not_a_finding() -> None:
    """The largest gap is named (it is what the figures show), and the next line says so few are no finding."""
    result = observed([3, 1, 1, 1], [3, 1, 1, 1], [10_000, 30_000, 30_000, 30_000], accepted_seen=6)
    said = verdict(result)
    assert any(line.startswith("worker 0 held 3 of the 6 connections seen (50%") for line in said), said
    assert (
        "the load shares rest on 6 connections seen held (11 looks, one every 1.2 s): a share of so few "
        "connections is not a finding" in said
    )


def test_connections_placed_by_the_accepts_are_said_only_where_they_split_less_evenly_than_chance() -> None:
    placed = observed([20, 4, 4, 4], [20, 4, 4, 4], [200_000, 40_000, 40_000, 40_000], accepted_seen=32)
    resting = next(line for line in verdict(placed) if line.startswith("the load shares rest on 32"))
    assert resting.endswith(
        ": worker 0 held 62% of them (an even share is 25%) and accepted 62% of the connections: the accept order "
        "placed them"
    ), resting
    untraced = observed([20, 4, 4, 4], [20, 4, 4, 4], [200_000, 40_000, 40_000, 40_000], 32, traced=False)
    resting = next(line for line in verdict(untraced) if line.startswith("the load shares rest on 32"))
    assert resting.endswith("placed there when they were accepted, or the others' connections closed sooner")
    assert not any(line.startswith("the accepts split") for line in verdict(untraced))  # no accepts counted


def test_a_gap_is_judged_on_the_shares_shown() -> None:
    """34.6% of the bytes against 25% of the connections: shown 35% and 25%, so the gap said is 10 points."""
    result = observed([10, 10, 10, 10], [10, 10, 10, 10], [346_000, 218_000, 218_000, 218_000], accepted_seen=40)
    assert any(
        line.startswith("worker 0 held 10 of the 40") and "received 35% of the bytes" in line
        for line in verdict(result)
    )


def load_rows(shown: str) -> dict[str, list[str]]:
    """The report's load table: per worker its cells (a size is two: '537.7 kB')."""
    table = shown[shown.index("Load: the connections") :]
    table = table[: table.index(" total ")]
    return {cells[0]: cells for line in table.splitlines() if (cells := line.split()) and cells[0].isdigit()}


def test_the_verdict_says_the_tables_figures() -> None:
    """The report's load table and the verdict under it give the same figures for the worker named."""
    shown = report(H2LOAD)
    row = load_rows(shown)["0"]
    assert (row[3], row[6]) == ("13", "29%"), row  # seen, and the share of the bytes in
    flat = " ".join(shown.split())
    assert (
        "worker 0 held 13 of the 32 connections seen (41%; an even share is 25%) but received 29% of the bytes" in flat
    )
    shares = sorted(cells[6] for cells in load_rows(report(WRK)).values())
    assert (shares[0], shares[-1]) == ("0%", "52%"), shares  # the range the verdict gives
