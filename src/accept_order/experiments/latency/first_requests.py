"""Each kept connection's first request apart from its later ones (loads/kept_tally.py): the first also waited for
the connect and for a worker to accept it, behind whatever else was queued on the listener; the later ones wait
only for the worker. One histogram of both reads the fill as the steady state's tail: nginx 1.22 (4 workers,
multi_accept off, 100 connections opened at once, load ~9 on 2 vCPUs) answered the first requests of the worker
holding 36 of them in a staircase from 1.2 to 6.5 s, one accepted per event-loop turn: p99 4,024 and 920 ms in
two runs, against 516 and 568 ms with multi_accept on.

Here: per worker and overall, the first requests' count and p50/p99/max beside the later ones' (a table, a CSV
table, the lines that say when a file does not know them), and the verdict on whether the tail is the fill."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from ...analysis.chance import binomial_tail, how_often
from ...analysis.one_run import merged_runs
from ...core.histogram import LatencyHistogram
from ...core.spec import NOT_STARTED
from ...core.text import plural
from .kept_report import accepted, by_kernel, ms, unnamed_only
from .result import LatencyResult

# The tail is the fill where the first requests are at least this share of the slowest 1% of the requests, and at
# least twice the share they are of all requests (else they are in the tail as often as anywhere)
FILL_SHARE = 0.5
TAIL_SHARE = 0.01  # the tail: the slowest 1% of the requests (what the p99 bounds)
SURE_P = 0.01  # a share of the tail drawn at random this rarely is beyond chance


@dataclass(frozen=True)
class FirstAndLater:
    """One worker's (or all workers') connections' first requests' durations, and the later requests'."""

    firsts: LatencyHistogram
    later: LatencyHistogram


def later_of(every: LatencyHistogram, firsts: LatencyHistogram) -> LatencyHistogram:
    """The requests of `every` that are not in `firsts` (a part of it, as the file's check holds)."""
    left = {us: n for us, n in every.to_dict()["counts"]}
    for us, n in firsts.to_dict()["counts"]:
        left[us] = left.get(us, 0) - n
    rest = LatencyHistogram()
    for us, n in left.items():
        if n > 0:
            rest.add(us, n)
    return rest


def split_firsts(result: LatencyResult) -> tuple[tuple[FirstAndLater, ...], FirstAndLater] | None:
    """(per worker, all) first and later requests; None for one request per connection, and where the file does not
    know them (from before they were kept apart). All: every request's, those whose worker no reply named too."""
    firsts = result.first_requests
    if not result.connections or firsts is None:
        return None
    each = tuple(
        FirstAndLater(first, later_of(every, first))
        for first, every in zip(firsts.workers, result.worker_histograms, strict=False)
    )
    return each, FirstAndLater(firsts.every, later_of(result.histogram, firsts.every))


def _figures(h: LatencyHistogram) -> list[int | None]:
    """p50, p99 and max in microseconds (None each where the histogram holds nothing)."""
    if not h.count:
        return [None, None, None]
    return [h.percentile(50.0), h.percentile(99.0), h.max_us]


def _placed(result: LatencyResult, each: Sequence[FirstAndLater]) -> list[tuple[int, FirstAndLater]]:
    """The workers' rows: none where the replies name no worker, unless the client found the holders of a pool's
    connections after its fill (loads/kept_owners.py: then each row holds those connections' requests only); none
    at a --target whose replies named none, whose rows nobody counted ('0 0 -' under 'first' beside the 'all' row's
    4, at a plain nginx)."""
    if unnamed_only(result) or by_kernel(result) and not any(part.firsts.count for part in each):
        return []
    return list(enumerate(each))


def first_table(result: LatencyResult) -> Table | None:
    """Per worker and for all: the first requests' count, p50, p99, max, and the later ones'. Where only the kernel
    counted per worker (replies that name none) the per-worker rows are not known: the 'all' row alone."""
    split = split_firsts(result)
    if split is None:
        return None
    each, every = split
    table = Table(
        title="first requests and later ones",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for name in ("worker", "first", "p50 ms", "p99 ms", "max ms", "later", "p50 ms", "p99 ms", "max ms"):
        table.add_column(name, justify="right")
    rows = [(str(i), part) for i, part in _placed(result, each)]
    for name, part in [*rows, ("all", every)]:
        cells = [str(part.firsts.count), *map(ms, _figures(part.firsts))]
        table.add_row(name, *cells, str(part.later.count), *map(ms, _figures(part.later)))
    return table


def first_lines(result: LatencyResult) -> list[Text]:
    """What a kept run's file does not know of its first requests (one from before they were kept apart)."""
    if not result.connections or result.first_requests is not None:
        return []
    return [
        Text(
            "first requests apart from later ones: not known (the file is from before each connection's first "
            "request, which also waited to be accepted, was kept apart)"
        )
    ]


def fill_verdict(result: LatencyResult) -> str | None:
    """Whether the tail (the requests at or above the overall p99) is the fill, the connections' first requests, or
    the steady state, and how sure; naming the cure only where it can produce what was seen (cure_for_fill).
    None where the first requests are not known, or there is nothing to part (no later requests, or none served)."""
    split = split_firsts(result)
    if split is None or not result.histogram.count:
        return None
    every = split[1]
    if not every.firsts.count or not every.later.count:
        return None
    tail, ours, least = slowest(result.histogram, every.firsts, TAIL_SHARE)
    part = tail / result.histogram.count  # 1%, but at least one request: of 40, one is 2.5%
    slow = f"the {plural(tail, 'slowest request')} ({100 * part:.2g}% of all, {ms(least)} ms and more)"
    share, base = ours / tail, every.firsts.count / result.histogram.count
    chance = binomial_tail(ours, tail, base)
    sure = (
        f"How sure: {tail} requests drawn at random from all {result.histogram.count:,} would hold "
        f"{plural(ours, 'first request')} {'or more' if ours >= tail * base else 'or fewer'} {how_often(chance)}"
        + (" (beyond chance)." if chance < SURE_P else ", so this may be chance.")
    )
    later_p99 = every.later.percentile(99.0)
    # Kept for the whole run, the connections' first requests came at its start: the fill. Carried K requests each,
    # connections were opened throughout, and their first requests' wait to be accepted is the steady state's own.
    whole_run = result.load.requests_per_connection == 0
    what = "the fill" if whole_run else "the connections' first requests"
    more = share > base  # first requests more often in the tail than among all requests
    if share >= FILL_SHARE and more:
        firsts = plural(every.firsts.count, "first request", grouped=True)
        said = (
            f"The tail is {what}, not {'the steady state' if whole_run else 'the later ones'}: {ours} of {slow} "
            f"{_were(ours)}, which also waited to be accepted (the {firsts}: p99 {ms(every.firsts.percentile(99.0))} "
            f"ms, max {ms(every.firsts.max_us)} ms); the {every.later.count:,} later ones' p99 is {ms(later_p99)} ms."
            + (
                ""
                if whole_run
                else f" Each connection carried {result.load.requests_per_connection} requests, so connections were "
                "opened throughout the run: this wait is a part of its steady state, not a fill at its start."
            )
            + f" {sure}"
        )
        cure = cure_for_fill(result)
        return said if cure is None else f"{said} {cure}"
    if more and chance < SURE_P:
        return (
            f"The tail is partly {what}: {ours} of {slow} {_were(ours)}, {_times(share / base)} "
            f"times their share of all requests ({100 * base:.1f}%), but most were later ones: the later requests "
            f"alone have a p99 of {ms(later_p99)} ms. {sure}"
        )
    # a merged file's requests are its runs' (merge of two pools: 'this run's 4,324 requests ...; one run')
    runs = merged_runs([result.evidence])
    counted = (
        f"this run's {result.histogram.count:,} requests"
        if runs == 1
        else (f"the {result.histogram.count:,} requests of the {runs} runs merged")
    )
    ran = "one run" if runs == 1 else f"{runs} runs merged into one histogram"
    # --repeat refuses a server this tool did not start (attached, --target): the command run again says it there
    again = (
        "another run of this command says whether its first requests reach its tail (--repeat starts the server it "
        "measures: not with --attach or --target)"
        if result.server.kind in NOT_STARTED
        else "--repeat says whether another run's first requests reach its tail"
    )
    return (
        f"The tail is {'the steady state, not the fill' if whole_run else 'the later requests, not the first ones'}: "
        f"{ours} of {slow} {_were(ours)} "
        f"({100 * base:.1f}% of all requests); the later requests alone have a p99 of {ms(later_p99)} ms. How sure: "
        f"counted over {counted}, not estimated; {ran}: {again}."
    )


def _times(ratio: float) -> str:
    """A ratio as said: one decimal under 10 (1.3 times, not 1 time), whole above."""
    return f"{ratio:.1f}" if ratio < 10 else f"{ratio:.0f}"


def _were(n: int) -> str:
    return "was a connection's first request" if n == 1 else "were connections' first requests"


def cure_for_fill(result: LatencyResult) -> str | None:
    """The cure for first requests that waited behind each other to be accepted, where it can produce that: the
    connections were opened together (every -c at the start, kept for the whole run; or a pool's, opened again in
    place of connections the server closed, which a server's limit closes together), at a server the tool started
    whose mode reads the cap on accepts per wakeup, and the run had one (0 is none). A pool whose connections were
    all opened in its fill, one at a time, queued none: said so. None where nothing is to be said (connections
    opened one by one as others closed after K requests; a server attached or elsewhere, whose setting the tool
    does not set; a mode that takes its own batch)."""
    from ...servers.registry import known_by_replies, known_mode

    server, load = result.server, result.load
    took = accepted(result)
    # More connections than the pool holds: by the workers' accepts, or by the client's own first replies where the
    # kernel did not count them (an attached server's, without bpftrace)
    firsts = result.first_requests.every.count if result.first_requests is not None else 0
    opened = max(sum(took) if took is not None else 0, firsts)
    reopened = result.pool is not None and opened > result.pool[0]
    if result.pool is not None and not reopened:
        return (
            "The pool opened its connections one after another, each once the one before was answered, so none "
            "waited behind another to be accepted: the first requests' wait is the connect and the worker's first "
            "turn, which no accept batch shortens."
        )
    together = reopened or (result.pool is None and load.requests_per_connection == 0)
    mode = known_mode(server.kind, server.mode)
    if not together or server.attach or known_by_replies(server) or mode is None or not mode.batches:
        return None
    if not server.accept_batch:
        return None
    how = "opened again together in place of closed ones" if reopened else "opened at once"
    # Advice, not a finding: the run measured the first requests' wait, not how much of it the accept queue was
    # (it also holds the connect and the client's own opening of the others). nginx, 4 workers, -c 100 at once on
    # 2 busy vCPUs: first requests' p99 5.4-41 ms at accept-batch 1 and 8.8-21 ms at 0 over 7 runs each, no shorter.
    return (
        f"The connections were {how}, so they could queue on the listener, and {server.label} took at most "
        f"{server.accept_batch} per wakeup (accept-batch {server.accept_batch}): --accept-batch 0 (each wakeup "
        "accepts every queued connection; nginx's multi_accept on) may shorten that wait, if the queue is what it "
        "waited for: this run did not measure that (the wait also holds the connect and the client opening the "
        "others), the same run with --accept-batch 0 tells; the later requests' tail it does not change."
    )


def slowest(every: LatencyHistogram, part: LatencyHistogram, share: float) -> tuple[int, int, int]:
    """(how many are the slowest `share` of `every`'s samples, at least one; how many of those are `part`'s, a
    part of `every`; the least duration among them). Where the cut falls among equal durations, `part` has its share
    of those taken, rounded down (ties at a p99 of 1 ms would otherwise count thousands as the tail)."""
    want = max(1, math.ceil(every.count * share))
    ours = dict((us, n) for us, n in part.to_dict()["counts"])
    taken = mine = least = 0
    for us, n in reversed(every.to_dict()["counts"]):
        take = min(n, want - taken)
        taken += take
        mine += ours.get(us, 0) * take // n
        least = us
        if taken >= want:
            break
    return taken, mine, least


def first_csv(runs: Sequence[dict[str, Any]]) -> str:
    """One row per worker and one for all of each kept run: the first requests' count, p50, p99 and max in ms, and
    the later ones'; `known` no (and the figures blank) for a file from before they were kept apart."""
    from ...results import export

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    figures = ("requests", "p50_ms", "p99_ms", "max_ms")
    writer.writerow(["run", "worker", "known", *(f"first_{f}" for f in figures), *(f"later_{f}" for f in figures)])
    for run in runs:
        result = LatencyResult.from_dict(run)
        if not result.connections:
            continue
        split = split_firsts(result)
        if split is None:
            writer.writerow([export.label(run), "all", "no", *[""] * 2 * len(figures)])
            continue
        each, every = split
        rows = _placed(result, each)
        for name, part in [*rows, ("all", every)]:
            cells = [
                x
                for h in (part.firsts, part.later)
                for x in (h.count, *("" if us is None else us / 1000 for us in _figures(h)))
            ]
            writer.writerow([export.label(run), name, "yes", *cells])
    return out.getvalue()


def first_parts(result: LatencyResult) -> list[Any]:
    """The first requests' table, or the line saying they are not known (none for one request per connection)."""
    table = first_table(result)
    if table is None:
        return list(first_lines(result))
    said = (
        "first: each connection's first request, which also waited for the connect and to be accepted; later: the rest"
    )
    return [table, Text(said), *([Text(part)] if (part := _rows_in_part(result)) else [])]


def _rows_in_part(result: LatencyResult) -> str | None:
    """Where the replies name no worker, the workers' rows hold only the pool's connections whose holder the client
    found after the fill (loads/kept_owners.py), not those opened later in place of closed ones: said where the rows
    then fall short of 'all' (an attached nginx with keepalive_requests 50, a pool of 40: rows of 40 first requests,
    'all' 100), else the table reads as if the workers' rows were every request."""
    split = split_firsts(result)
    if split is None or not by_kernel(result):
        return None
    each, every = split
    rows = _placed(result, each)
    firsts, later = (sum(getattr(part, side).count for _, part in rows) for side in ("firsts", "later"))
    if not rows or (firsts, later) == (every.firsts.count, every.later.count):
        return None
    return (
        f"the workers' rows: {firsts:,} of the {every.firsts.count:,} first requests and {later:,} of the "
        f"{every.later.count:,} later ones, those over the pool's connections whose holder the client found once the "
        "pool was filled; connections opened later in place of closed ones are in 'all' alone (the replies name no "
        "worker)"
    )
