"""The burst table (seed 004's): rows of client counts, a column per server and mode, the time until every
client was served; then what failed, how the work spread, and what the kernel counted."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.fairness import jain_index
from ...analysis.syn_retrans import RTO_FLOOR_US
from ...core.protocol import ABORTED
from ...core.text import escape_controls
from ...core.totals import loops_ran
from ...core.uring import ACCEPT_COMPLETIONS
from ...render.evidence import LISTEN_COUNTERS, listener_drops_said, short_counter, shortage_lines
from ...render.hosts import HostsPart, host_parts
from ...render.observed_on import brought, load_parts
from ...render.text import duration_us, plural
from ...render.workers import own_count_text
from ...servers.registry import known_by_replies, known_mode, unseen_note
from ..launch_notes import launch_parts
from ..own_settings import caps_said, servers_said
from ..target_unanswered import target_unanswered_note, unnamed_note
from .result import BurstCell, BurstResult, BurstRun


def _cell(cell: BurstCell | None) -> Text:
    if cell is None:
        return Text("-")
    text = Text(f"{cell.wall_s:.2f} s")
    stopped = cell.stopped
    if cell.server_failed:
        text.append(f" ({cell.server_failed} failed)", style="yellow")
    if cell.client_bound:
        text.append(" *", style="yellow")
    if cell.interrupted:
        text.append(f" (interrupted{f', {stopped} under way' if stopped else ''})", style="yellow")
    return text


def burst_table(result: BurstResult) -> Table:
    table = Table(title="accept-order burst", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("clients", justify="right")
    for run in result.runs:
        table.add_column(run.server.label, justify="right")
    counts = sorted({c.clients for r in result.runs for c in r.cells})
    for n in counts:
        table.add_row(str(n), *[_cell(next((c for c in r.cells if c.clients == n), None)) for r in result.runs])
    return table


def _details(run: BurstRun) -> list[Text]:
    lines = []
    elsewhere = known_by_replies(run.server)
    for cell in run.cells:
        spread = " ".join(map(str, cell.served))
        if cell.unnamed:  # replies that named no worker: on no row
            spread = "no reply named a worker" if not sum(cell.served) else f"{spread}; {cell.unnamed} named none"
        parts = [f"  {run.server.label}, {cell.clients}: served {cell.ok} ({spread})"]
        kept = cell.requests_per_connection != 1
        if kept:  # `served` counts requests then; the connections each worker accepted carry them
            accepted = " ".join(map(str, cell.connections))
            jain = "" if cell.unnamed else f"; Jain {jain_index(cell.served):.3f}"
            # replies that named no worker: their connections are on no row either
            over = "" if cell.unnamed else f" over {plural(sum(cell.connections), 'connection')} ({accepted})"
            parts[0] = (
                f"  {run.server.label}, {cell.clients} × {cell.requests_per_connection} requests: served "
                f"{cell.ok} requests ({spread}{jain}){over}"
            )
        # the connections a Ctrl-C found under way are the stop's, as the table says, not failures
        failed = {k: v for k, v in cell.errors.items() if not (cell.stopped and k == ABORTED)}
        if failed:
            parts.append("failed " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items())))
        if cell.stopped:
            parts.append(f"{cell.stopped} under way at the stop")
        if cell.server_unread:  # this host's counters were the client's, or its namespace's processes gone
            parts.append("kernel counters not read in the server's network namespace")
        if cell.counters:
            moved = ", ".join(f"{short_counter(k)} {v:+d}" for k, v in cell.counters.items())
            # client hosts at a server elsewhere: no connection of the burst crossed this host
            coordinated = elsewhere and cell.hosts and not cell.through_here
            if coordinated:
                moved = f"this host's, which only coordinated: {moved}"
            elif cell.listener_drops is not None and LISTEN_COUNTERS & set(cell.counters):
                # every listener's of the namespace, beside the server's own
                moved += f" (host-wide; {listener_drops_said(cell.listener_drops)})"
            parts.append(moved)
        if cell.max_us is not None:
            # a dropped SYN is sent again 1 s later: the slowest then waited on the kernel's timer, not on a worker
            retried = cell.listener_drops and cell.max_us >= RTO_FLOOR_US
            past = " (past the 1 s a client waits to send a dropped SYN again)" if retried else ""
            parts.append(f"slowest {cell.max_us / 1000:.1f} ms{past}")
        if cell.open_s is not None:  # over kept connections the drivers time their last request's start
            parts.append(f"{'last request sent' if kept else 'connects started'} within {cell.open_s * 1000:.0f} ms")
        if cell.client_cpu_us is not None:  # the drivers count each request over a kept connection
            loops = loops_ran(cell.drivers)
            unit = "request" if kept else "connection"
            parts.append(f"load generator{f' on {loops}' if loops else ''} {cell.client_cpu_us:.0f} CPU-µs per {unit}")
        lines.append(Text("; ".join(parts)))
    if any(sum(c.connections) > c.clients for c in run.cells):
        lines.append(
            Text(
                "  more connections than clients: a client whose K requests were answered while others' were still "
                "waiting opened a new connection for requests still to go (the load shares the requests over its "
                "slots), so some connections carried fewer than K (clients × K requests in all)",
                style="dim",
            )
        )
    if run.counters_landed and not all(c.server_unread for c in run.cells):  # whose counters the cells show
        said = f"kernel counters read in the server's network namespace, {run.counters_landed}"
        lines.append(Text(f"  {run.server.label}: {said}"))
    witness = _own_count(run)
    return lines + ([witness] if witness is not None else []) + shortage_lines(list(run.shortages))


def outgrows_a_ring(run: BurstRun, clients: int) -> bool:
    """A burst larger than a ring holds, in a mode whose first armed worker takes every connection (io-uring), with
    another worker to hand on to: whether it is handed on is a race (servers/modes/io_uring.py)."""
    info = known_mode(run.server.kind, run.server.mode)
    first = info is not None and info.discipline == "first"
    return first and clients > ACCEPT_COMPLETIONS + 1 and run.server.workers >= 2


def split_of(cell: BurstCell) -> str:
    """The connections each worker accepted (over kept connections `served` counts requests): '291/209'."""
    return "/".join(map(str, cell.connections or cell.served))


def _ring_note(run: BurstRun) -> str | None:
    """Beside bursts larger than a ring holds, in a mode whose first armed worker takes every connection (io-uring):
    whether one is handed on is a race (servers/modes/io_uring.py), so the split of one burst is one of two outcomes.
    Six bursts of 500 at 2 workers read 500/0 twice and 181/319 to 387/113 otherwise (load 6)."""
    big = [c for c in run.cells if outgrows_a_ring(run, c.clients)]
    if not big:
        return None
    splits = ", ".join(f"{c.clients}: {split_of(c)}" for c in big)
    past = ACCEPT_COMPLETIONS + 1
    return (
        f"  {run.server.label} ({splits}): the first armed worker's ring takes every connection until {past} wait "
        "in it unreaped; the connections queued then wake nobody, and only one arriving after that wakes the next "
        "worker, whose accept takes them too (with none arriving, they wait for the first to reap and arm again). "
        f"So a burst is handed on only where that worker fell {past} behind while "
        "connections still arrived, a race the machine decides: one burst's split is one of both outcomes (--repeat "
        "shows how often each)"
    )


def _own_count(run: BurstRun) -> Text | None:
    """Over kept connections: the requests each worker says it answered over all its bursts, beside what
    the replies said (a request counted for the worker that holds its connection)."""
    if not run.worker_requests:
        return None
    parts = [(c.served, c.errors) for c in run.cells]
    return own_count_text(run.worker_requests, parts, "the bursts", f"  {run.server.label}: ")


def _per_connection(result: BurstResult) -> str:
    per = {c.requests_per_connection for r in result.runs for c in r.cells}
    if per == {1} or not per:
        return ""
    return f"; {' or '.join(map(str, sorted(per)))} requests per connection, one after another"


def burst_report(result: BurstResult) -> RenderableType:
    parts: list[RenderableType] = [burst_table(result)]
    # a client that failed ends the burst's time when it gives up (--timeout), not at a reply
    failed = any(c.server_failed for r in result.runs for c in r.cells)
    stopped = any(c.interrupted for r in result.runs for c in r.cells)
    legend = (
        f"time from the first connect to the last reply{' or failure (some failed)' if failed else ''}"
        + (
            " or the stop (interrupted: the connections under way then were the stop's, not failures)"
            if stopped
            else ""
        )
        + "; * the load generator took more than half of it to start the connections, so it set the pace"
    )
    parts.append(Text(legend, style="dim"))
    if result.runs:
        first = result.runs[0]
        env = first.environment
        where = f"; {env.system} {env.kernel}, {plural(env.cpu_count, 'CPU')}" if env else ""
        own = servers_said([run.server for run in result.runs], duration_us(first.server.work_us))
        own += caps_said([run.server for run in result.runs])
        parts.append(Text(f"{own}{_per_connection(result)}{where}"))
        parts.append(Text("Per burst: served per worker, failures, kernel counters", style="bold"))
        for run in result.runs:
            parts += _details(run)
        for run in result.runs:  # less what --observe-on brought from the server's host
            note = unseen_note(run.server, any(brought(c.observed_on) for c in run.cells))
            parts += [Text(note, style="yellow")] if note else []
        parts += [Text(note, style="dim") for run in result.runs if (note := _ring_note(run))]
        parts += launch_parts(run.server for run in result.runs)
        for run in result.runs:
            unnamed = target_unanswered_note(run.server, ((c.ok, c.errors) for c in run.cells))  # unnamed: served
            parts += [unnamed] if unnamed is not None else []
            parts += [said] if (said := unnamed_note(run.server, ((c.unnamed, c.ok) for c in run.cells))) else []
        for run in result.runs:  # --client-hosts: how each burst's hosts shared it
            cells = [HostsPart(str(c.clients), c.hosts, c.wall_s, None, c.interrupted) for c in run.cells]
            parts += host_parts(cells, "clients", f"{run.server.label}: per client host")
        parts += _observed(result)
    for name, reason in result.skipped.items():
        parts.append(Text(f"  {name}: not available: {reason}", style="dim"))
    if any(c.counters.get("TcpExtSyncookiesSent") and c.errors.get("timeout") for r in result.runs for c in r.cells):
        parts.append(
            Text(
                "Timeouts with SyncookiesSent: the SYN queue overflowed and the kernel answered with cookies; a "
                "client whose final ACK then found the accept queue full was dropped without a trace, and a "
                "client that waits for the server to speak first (this one) never sends anything that would "
                "retry it. A server-speaks-first protocol meets this on any overloaded listener.",
                style="yellow",
            )
        )
    for note in result.notes:
        parts.append(Text(note, style="dim"))
    if result.stopped:
        bursts = plural(sum(len(r.cells) for r in result.runs), "burst")
        kept = f"kept: what was measured before it ({bursts}); the bursts after it were not run"
        parts.append(Text(f"Stopped early: {escape_controls(result.stopped)}; {kept}.", style="yellow"))
    return Group(*parts)


def _observed(result: BurstResult) -> list[RenderableType]:
    """--observe-on: what observe saw on the server's host during each burst, labelled with its size (and its
    server and mode when the table has several)."""
    parts: list[RenderableType] = []
    for run in result.runs:
        named = f"{run.server.label}, " if len(result.runs) > 1 else ""
        for cell in run.cells:
            parts += load_parts(cell.observed_on, f"{named}burst of {plural(cell.clients, 'client')}")
    return parts
