"""observe of a load whose connections live one request each (wrk -H 'Connection: close') judged no worker's
share of the bytes and offered the cures of long-lived connections: nginx, 3 workers, 17 connections caught
by a look carried 549 bytes while the 7,158 that opened and closed between two looks carried 435,445 (in no
worker's share), and the connections caught split as chance would (1 time in 15); yet the verdict said
'worker 2 held 5 of the 17 connections seen (29%) but received 0% of the bytes' and the report printed the
table 'What changes how the load of long-lived connections splits'.

Both files are saved runs on this machine (2 vCPUs, Linux 6.18, other jobs beside): nginx with 3 workers
under `wrk -t2 -c50 -H 'Connection: close'`, and nginx with 4 workers keeping wrk -c50's keep-alive
connections (all 50 on two workers, the accept order's doing). Each test edits a copy of one."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from accept_order.experiments.observe.load_verdict import load_uneven
from accept_order.experiments.observe.report import observe_report
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import verdict

DATA = Path(__file__).parent / "data"
CURES = "What changes how the load of long-lived connections splits (nginx)"


def saved(name: str) -> ObserveResult:
    return ObserveResult.from_dict(json.loads((DATA / name).read_text()))


def shown(result: ObserveResult) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(observe_report(result))
    return console.export_text()


def per_worker(result: ObserveResult, **figures: list[int]) -> ObserveResult:
    """The result with these per-worker figures (ObservedWorker's field names) in place of its own."""
    workers = tuple(
        replace(worker, **{name: values[i] for name, values in figures.items()})
        for i, worker in enumerate(result.workers)
    )
    return replace(result, workers=workers)


CLOSE = saved("observe_connection_close.json")
KEPT = saved("observe_kept_pool.json")


def test_a_sliver_of_the_bytes_is_not_judged_and_no_cure_is_offered() -> None:
    said = verdict(CLOSE)
    assert (
        "the bytes in the workers' shares (549 bytes, less than 1% of the 435,994 counted) say nothing of how the "
        "load splits: nearly every connection opened and closed between two looks (below), its bytes in no "
        "worker's share" in said
    ), said
    assert not any(line.startswith("worker ") and " held " in line for line in said), said
    assert not load_uneven(CLOSE)
    report = shown(CLOSE)
    assert CURES not in report and "keepalive_requests" not in report
    # the rest of what was measured is still said
    assert any(line.startswith("7,158 connections opened and closed between two looks") for line in said)


def test_short_connections_get_no_cure_even_where_their_bytes_are_all_counted() -> None:
    """The bytes apart made nothing (all in the shares) and the split made uneven beyond chance: still one
    request's segments each (9 on 17 connections), so the cures of long-lived connections are not offered."""
    edited = replace(CLOSE, closed_unlooked_bytes_in=0)
    edited = per_worker(edited, connections_observed=[40, 2, 2])
    assert any(line.startswith("worker ") and "of the 44 connections seen (" in line for line in verdict(edited))
    assert not load_uneven(edited)
    assert CURES not in shown(edited)


def test_where_the_bytes_apart_were_not_read_short_connections_are_not_judged() -> None:
    """A file without the kernel's announcements of closes: the segments a connection carried tell."""
    unread = replace(CLOSE, closes_counted=None, closed_unlooked=None, closed_unlooked_bytes_in=None)
    said = verdict(unread)
    assert any(
        line.startswith("the bytes in the workers' shares (549 bytes) say nothing of how the load splits: the 17 ")
        and "0.5 data segments each" in line
        for line in said
    ), said
    assert not load_uneven(unread)
    carried = per_worker(unread, segments_in=[7000, 2000, 0])  # long-lived: judged as before
    assert any(line.startswith("worker 2 held 5 of the 17 connections seen") for line in verdict(carried))


def test_a_pool_split_by_the_accept_order_reads_as_before() -> None:
    """Keep-alive: 50 connections on two of 4 workers (less evenly than chance, by far), 100% of the bytes in
    the shares: the bytes are judged, and the cures offered."""
    said = verdict(KEPT)
    assert (
        "the bytes split as the 50 connections seen held did: no worker's share of the bytes (0% to 50%) is 10 "
        "points or more from its share of the connections (0% to 50%)" in said
    ), said
    assert load_uneven(KEPT)
    report = shown(KEPT)
    assert CURES in report and "keepalive_requests" in report


def test_the_how_to_s_pool_of_six_on_one_worker_keeps_its_cures() -> None:
    """docs/howto/behind-a-proxy.md: wrk -c6, all six on one worker of 4 (an even split does that about
    1 time in 1,000): the cures stay."""
    six = per_worker(KEPT, connections_observed=[0, 0, 6, 0], bytes_in=[0, 0, 5_900_000, 0])
    six = per_worker(six, segments_in=[0, 0, 148_188, 0])
    assert load_uneven(six)


def test_a_pool_split_as_chance_would_gets_no_cure() -> None:
    """The same pool spread 14, 12, 13 and 11 (chance's spread), one worker's connections carrying most
    of the bytes: the gap is said, but a cure redraws a split chance made as chance would."""
    spread = per_worker(
        KEPT,
        connections_observed=[14, 12, 13, 11],
        bytes_in=[4_000_000, 800_000, 800_000, 800_000],
        segments_in=[90_000, 20_000, 20_000, 20_000],
    )
    said = verdict(spread)
    assert any(line.startswith("worker 0 held 14 of the 50 connections seen") for line in said), said
    assert not load_uneven(spread)
    assert CURES not in shown(spread)
