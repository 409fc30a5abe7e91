"""What a latency run over kept connections (several requests each, or a pool) shows beside the rest: per
worker the connections it accepted and held and the requests it served, with their p50 and p99; Jain's index
over the requests; how much of a pool opened, and why the rest did not; its rows for export. Several such runs
side by side are kept_compare.py's; how the load is said, kept_load_words.py's."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from ...analysis.fairness import jain_index
from ...analysis.kept_counts import beyond_workers, filled_in, never_kept, own_count
from ...analysis.witness import agreement
from ...core.text import plural
from .result import LatencyResult


def ms(us: int | None) -> str:
    """Microseconds as milliseconds to two places; "-" for none."""
    return "-" if us is None else f"{us / 1000:.2f}"


def worker_percentile(result: LatencyResult, index: int, q: float) -> int | None:
    """Worker `index`'s percentile `q` in microseconds; None where it served nothing (or has no histogram)."""
    histograms = result.worker_histograms
    return histograms[index].percentile(q) if index < len(histograms) and histograms[index].count else None


def by_kernel(result: LatencyResult) -> bool:
    """The per-worker counts are the kernel's accepts: a server attached whose replies do not name a worker
    (experiments/session.py counts its accepts instead). Over kept connections those are the connections each
    worker accepted, not the requests over them, which nobody counted per worker."""
    return isinstance(result.evidence.get("accept_counts"), dict)


def accepted(result: LatencyResult) -> tuple[int, ...] | None:
    """The connections each worker accepted: as their first replies say, or as the kernel counted them (None: not
    known, the replies do not name a worker and the kernel's counts were not available)."""
    kernel = result.evidence.get("accept_counts")
    if isinstance(kernel, dict):
        return result.served if kernel.get("available") and not passed_on(result) else None
    return result.connections


def passed_on(result: LatencyResult) -> bool:
    """The attached master accepted connections itself, its workers none: it hands them over (Node's SCHED_RR)."""
    kernel = result.evidence.get("accept_counts")
    return isinstance(kernel, dict) and bool(kernel.get("master_accepted")) and not any(result.served)


def requests(result: LatencyResult) -> tuple[int, ...] | None:
    """The requests each worker served, as its replies say (None: the replies do not name a worker)."""
    return None if by_kernel(result) else result.served


def placed_requests(result: LatencyResult) -> tuple[int, ...] | None:
    """Where the replies name no worker: the requests each worker served over the pool's connections whose holder
    the client found after the fill (loads/kept_owners.py), as its histogram counts them; None where none was found
    (or the replies name the worker: requests() says it). A part: connections opened later in place of closed
    ones are in none."""
    if not by_kernel(result):
        return None
    placed = tuple(h.count for h in result.worker_histograms)
    return placed if any(placed) else None


def found_holding(result: LatencyResult) -> tuple[int, ...] | None:
    """Where the replies name no worker and the kernel did not count the workers' accepts (no bpftrace, as a user;
    a master that accepts and hands them on, as Node's cluster): the pool's connections the client found each
    worker holding once it was filled (loads/kept_owners.py), which the run's `connections` then hold alone; None
    where the kernel counted them, or no holder was found."""
    if not by_kernel(result) or accepted(result) is not None or placed_requests(result) is None:
        return None
    return result.connections if any(result.connections) else None


def requests_jain(result: LatencyResult) -> float:
    """Jain's index over the requests each worker served (1: even; 1/N: one worker served them all); where the
    replies do not name a worker, over the connections each accepted (the kernel's count: kept_split says so)."""
    return jain_index(result.served)


def kept_split(result: LatencyResult) -> str:
    """What Jain's index of a kept run is over: 'requests', or 'connections accepted' where only the kernel's
    accepts were counted per worker."""
    return "connections accepted" if by_kernel(result) else "requests"


def unnamed_only(result: LatencyResult) -> bool:
    """Served, and no row holds a request: a server elsewhere whose replies named no worker (loads/reply_keys.py),
    whose requests and connections per worker nobody counted (latency/report.py unnamed_parts says so)."""
    return bool(result.ok) and not sum(result.served) and not by_kernel(result) and not result.server.attach


def unnamed_some(result: LatencyResult) -> int:
    """The requests a server elsewhere served with replies naming no worker where others named one (a page answering
    'worker PID' on some connections, 'hello' on others): on no row, so the rows' Jain and shares are not the
    workers' ('Jain 0.500 over 2 workers', '100.0%' of a worker beside 100 requests whose workers nobody knows)."""
    from ...servers.registry import known_by_replies  # with every kind: not at start-up (issue 30)

    if not sum(result.served) or by_kernel(result) or result.server.attach or not known_by_replies(result.server):
        return 0
    return max(0, result.ok - sum(result.served))


def kept_table(result: LatencyResult) -> Table | None:
    """One row per worker: connections accepted, held at the end, most held at once (its own count),
    requests served (the replies' count and its own), share, p50 and p99. None for one request each, or where no
    reply named a worker."""
    if not result.connections or unnamed_only(result):
        return None
    table = Table(
        title="kept connections per worker",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for name in ("worker", "accepted", "held at end", "held peak", "requests", "its count", "share", "p50 ms"):
        table.add_column(name, justify="right")
    table.add_column("p99 ms", justify="right")
    # where only the kernel counted (the replies name no worker) the share is of the connections it accepted,
    # and what the replies would have said (held at end, requests) is not known
    took, answered, kernel = accepted(result) or found_holding(result), requests(result), by_kernel(result)
    shared = answered if answered is not None else took
    total = sum(shared) if shared is not None else 0
    total += unnamed_some(result) if answered is not None else 0  # shares of all the requests served
    own = {c.index: c for c in result.counters}
    answered = answered if answered is not None else placed_requests(result)  # the holders found after a fill
    for i in range(len(result.served)):
        counted = own.get(i)
        table.add_row(
            str(i),
            str(took[i]) if took is not None and i < len(took) else "-",
            str(result.held_at_end[i]) if not kernel and i < len(result.held_at_end) else "-",
            "-" if counted is None or counted.held_peak is None else str(counted.held_peak),
            str(answered[i]) if answered is not None else "-",
            "-" if counted is None or counted.requests is None else str(counted.requests),
            f"{100 * shared[i] / total:.1f}%" if shared is not None and total else "-",
            ms(worker_percentile(result, i, 50.0)),
            ms(worker_percentile(result, i, 99.0)),
        )
    return table


def kept_lines(result: LatencyResult) -> list[Text]:
    """Jain's index over the requests and the overall p99; a pool's size; what a mode that serves each
    connection to its end did to the connections beyond its workers."""
    if not result.connections:
        return []
    overall = result.histogram.percentile(99.0) if result.histogram.count else None
    over = plural(len(result.served), "worker")
    if by_kernel(result):
        took = accepted(result)
        counted = took is not None and sum(took) > 0
        jain = f"connections accepted: Jain {requests_jain(result):.3f} over {over}" if counted else ""
        first = (
            f"{jain + '; ' if jain else ''}p99 {ms(overall)} ms overall. "
            + (
                "accepted: the connections the worker accepted (counted by the kernel); "
                if took is not None
                else "accepted: the pool's connections the client found the worker holding once it was filled (its "
                "fd table, where the kernel did not count the workers' accepts: no bpftrace, or a master that "
                "accepts and hands them on); "
                if found_holding(result) is not None
                else ""
            )
            # the share beside the requests is of these connections: gunicorn's gthread workers attached, 1 and 7 of
            # a pool of 8, read 12.5% and 87.5% beside 3,839 and 8,938 requests (30% and 70%)
            + ("share: of those connections, not of the requests; " if took or found_holding(result) else "")
            + (
                "the requests over them per worker, and those held at the end, are not known: the replies do not "
                "name a worker"
                if (placed := placed_requests(result)) is None
                else f"requests, p50, p99: {sum(placed):,} of the {result.histogram.count:,} requests, those over the "
                "pool's connections, each counted for the worker the client found holding its connection once the "
                "pool was filled (its fd table; connections opened later in place of closed ones are counted for "
                "none); held at end is not known: the replies do not name a worker"
            )
        )
    elif unnamed_only(result):  # no table: nobody counted a worker's requests or connections
        first = f"requests: {result.ok:,} served, per worker not known (no reply named a worker); p99 {ms(overall)} ms"
    else:
        jain = f"Jain {requests_jain(result):.3f} over {over}" if sum(result.served) else "none served"  # no 1.000
        if unnamed := unnamed_some(result):  # no Jain of the named alone
            jain = f"{unnamed:,} of the {result.ok:,} named no worker, so how evenly the workers served is not known"
        first = (
            f"requests: {jain}; "
            f"p99 {ms(overall)} ms overall. accepted: the connections whose first reply named the worker; "
            "held at end: open when the load ended; held peak: the most the worker held at once (its own "
            "count); its count: the requests the worker says it answered"
        )
    lines = [Text(first)]
    pool = result.pool
    if pool is not None:
        opened, planned = pool
        lines.append(
            Text(
                f"pool: {opened} of {planned} connections opened and answered{filled_in(result.pool_fill_s)} "
                f"before the load ran{_merged_pools(result)}"
            )
        )
    lines.extend(Text(line) for line in closes_lines(result))
    differs = own_count_line(result)
    if differs is not None:
        lines.append(differs)
    workers = result.server.workers
    short = pool is not None and pool[0] < pool[1]  # a pool's fill stopped: the rest were never opened
    beyond = result.load.requests_per_connection == 0 and result.load.concurrency > workers  # wait their turn
    if _serves_to_end(result) and (beyond or short):
        lines.append(
            Text(
                f"mode {result.server.label} serves each connection to its end before it accepts another (its wait "
                f"is the accept): with {plural(result.load.concurrency, 'connection')} kept for the whole run over "
                f"{plural(workers, 'worker')}, connections beyond the {workers} held ones "
                + beyond_workers(short, result.errors.get("timeout", 0)),
                style="yellow",
            )
        )
    witnessed = witness_line(result)
    if witnessed is not None:
        lines.append(witnessed)
    return lines


def _merged_pools(result: LatencyResult) -> str:
    """A merged result's pool is its files' pools added (LoadSummary.extend): said, so that '12 of 12' beside
    '6 concurrent' reads as two pools of 6 ('' for one run's own)."""
    merged = result.evidence.get("merged_from")
    if not isinstance(merged, dict) or not isinstance(files := merged.get("files"), list) or len(files) < 2:
        return ""
    when = "at once" if merged.get("concurrent") else "one after the other"
    return f" (the pools of {len(files)} merged files, {when}, added)"


def own_count_line(result: LatencyResult) -> Text | None:
    """Where a worker's own count of the requests it answered differs from its replies': who counted more,
    and why where the run tells (the client's requests it gave up on). None where they agree, or a worker
    does not count its requests (a launched server's)."""
    counted = sorted(result.counters, key=lambda c: c.index)
    own = [c.requests for c in counted]
    if by_kernel(result) or not own or len(own) != len(result.served) or None in own:
        return None
    found = own_count([n or 0 for n in own], result.served, result.errors)
    if found.agrees:
        return None
    return Text(
        f"its count differs from the replies ({found.differences()}): {found.why()}",
        style="" if found.explained else "yellow",
    )


def witness_line(result: LatencyResult) -> Text | None:
    """A launched server's own log against the replies: requests and connections per worker (analysis/witness.py)."""
    witness = result.evidence.get("witness")
    if not isinstance(witness, dict):
        return None
    pids = [c.pid for c in sorted(result.counters, key=lambda c: c.index)]
    per = result.load.requests_per_connection
    found = agreement(witness, pids, result.served, result.connections, result.failed, result.server_closes.resent, per)
    if found is None:
        return None
    return Text(found.line(), style="green" if found.agrees else "bold yellow")


def _by_worker(counts: Sequence[int], unnamed: int = 0) -> str:
    """'worker 0: 1, worker 1: 5', and those on no worker's row ('720 on connections counted for no worker')."""
    rows = [f"worker {i}: {n}" for i, n in enumerate(counts) if n]
    return ", ".join([*rows, *([f"{unnamed} on connections counted for no worker"] if unnamed else [])])


def closes_lines(result: LatencyResult) -> list[str]:
    """What the server did to kept connections before the client closed them (loads/kept.py): those it
    closed between replies, the requests sent again, the Connection: close replies; whether it keeps any."""
    closes, lines = result.server_closes, []
    closed = closes.all_closed
    if closed:
        resent = closes.resent
        again = (
            f"{plural(resent, 'request')} under way on them {'was' if resent == 1 else 'were'} sent again on "
            f"new ones, once each" + (f"; the other {closed - resent} were idle" if resent < closed else "")
            if resent
            else "all were idle"
        )
        which = _by_worker(closes.closed, closes.unnamed_closed)
        lines.append(f"the server closed {plural(closed, 'kept connection')} ({which}); {again}")
    told = closes.all_told
    if told:
        lines.append(
            f"{plural(told, 'reply', 'replies')} said Connection: close "
            f"({_by_worker(closes.told, closes.unnamed_told)}): each was served, and the client opened a new "
            "connection for the rest of its requests"
        )
    return [*lines, ended] if (ended := _never_kept(result, closed + told)) else lines


def _never_kept(result: LatencyResult, server_ended: int) -> str | None:
    """never_kept's line, where the replies name no worker from the client's own counts: the rows hold the kernel's
    accepts or the pool's holders, not the connections answered (an attached nginx with keepalive_requests 1 read
    '400 replies said Connection: close (400 on connections counted for no worker)' of 400 requests over 400
    connections, its access log's, and never that it keeps none). Held at the end: none, where every one was ended."""
    if not by_kernel(result):
        return never_kept(sum(result.served), sum(result.connections), sum(result.held_at_end), server_ended)
    firsts = result.first_requests  # every connection's first request: one a connection the client had answered
    return None if firsts is None else never_kept(result.ok, firsts.every.count, 0, server_ended)


def _serves_to_end(result: LatencyResult) -> bool:
    from ...servers.registry import server_kind

    try:
        info = server_kind(result.server.kind).modes().get(result.server.mode)
    except Exception:  # a kind this version does not know (a newer file): nothing to say
        return False
    return info is not None and not info.multiplexes


def kept_csv(runs: Sequence[dict[str, Any]]) -> str:
    """One row per worker of each kept run: accepted, held at end, held peak, requests (replies' and its
    own), p50 and p99 in ms, each empty where not known or a part (_placed_whole). None for a run at a --target
    whose replies named no worker, whose rows nobody counted (kept_table shows none: 'accepted 0, held_at_end 0,
    requests 0' a worker was no count)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["run", "worker", "accepted", "held_at_end", "held_peak", "requests", "worker_requests", "p50_ms", "p99_ms"]
    )
    from ...results import export

    for run in runs:
        result = LatencyResult.from_dict(run)
        own = {c.index: c for c in result.counters}
        took, named, kernel = accepted(result), requests(result), by_kernel(result)
        answered = named if named is not None else _placed_whole(result)
        # the pool's connections whose holders the client found, where others carried requests too: a part, so the
        # holders found (accepted, where the kernel did not count) and those connections' p50 and p99 are left empty
        part = kernel and named is None and answered is None
        took = took if took is not None or part else found_holding(result)
        for i in range(len(result.served) if result.connections and not unnamed_only(result) else 0):
            counted = own.get(i)
            p50, p99 = (None, None) if part else (worker_percentile(result, i, q) for q in (50.0, 99.0))
            writer.writerow(
                [
                    export.label(run),
                    i,
                    took[i] if took is not None and i < len(took) else "",
                    result.held_at_end[i] if not kernel and i < len(result.held_at_end) else "",
                    "" if counted is None or counted.held_peak is None else counted.held_peak,
                    answered[i] if answered is not None else "",
                    "" if counted is None or counted.requests is None else counted.requests,
                    "" if p50 is None else p50 / 1000,
                    "" if p99 is None else p99 / 1000,
                ]
            )
    return out.getvalue()


def _placed_whole(result: LatencyResult) -> tuple[int, ...] | None:
    """The requests placed on the workers whose holders the client found (placed_requests) where they are all the run
    served; None where they are a part, which a CSV's row has no line beside it to say: an attached nginx with
    keepalive_requests 100 read 'requests' 400, 100, 100 and 200 (the pool's first 8 connections') where its access
    log gave its workers 18,500, 17,695, 17,600 and 18,541 of 72,336 (the report's table says '800 of the 72,336').
    Without bpftrace its 'accepted' (the holders found) read 1 and 3 where nginx (keepalive_requests 20) accepted 12
    and 10, and its p50 and p99 were those connections' alone: kept_csv leaves those empty too."""
    placed = placed_requests(result)
    return placed if placed is not None and sum(placed) >= result.histogram.count else None


def kept_parts(result: LatencyResult) -> list[Any]:
    """The kept connections' table and lines of one run (none for one request per connection)."""
    table = kept_table(result)
    return ([table] if table is not None else []) + kept_lines(result)
