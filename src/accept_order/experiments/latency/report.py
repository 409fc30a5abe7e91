"""A latency run's report: its headline (headlines.py), mmhistogram lines, percentiles, failures, the drivers' figures
and what the load generator and host say (load_notes.py). Several modes side by side: compare_report.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...core.cpus import format_cpu_list
from ...core.load_summary import cpu_us_per_connection
from ...core.measures import DriverStats, WorkerCounters
from ...core.protocol import ABORTED, describe_error
from ...core.spec import ServerSpec
from ...core.totals import loops_ran
from ...render.evidence import evidence_report
from ...render.histogram import Mmhistogram
from ...render.hosts import HostsPart, host_parts
from ...render.observed_on import brought, observed_parts
from ...render.text import Verbatim, plural
from ...render.workers import worker_table
from ...servers.kind_notes import threads_note
from ...servers.registry import known_by_replies, unseen_note
from ..attached_listeners import v6only_note
from ..launch_notes import launch_parts
from ..sleeps_legend import ids_of, sleeps_legend, sleeps_of
from ..target_unanswered import unnamed_note
from .attached_counts import kernel_counts_text, served_known, unplaced_text
from .first_requests import fill_verdict, first_parts
from .headlines import headline
from .kept_load_words import finished_unit
from .kept_report import kept_parts
from .kept_tail import kept_tail_verdict
from .load_notes import load_notes
from .merged_note import merged_note
from .model_queues import queues_text
from .model_report import model_report
from .model_servers import servers_text
from .result import PERCENTILES, LatencyResult, default_title
from .stop_reason import stopped_early
from .syn_note import syn_stall_notes


def open_loop_note(result: LatencyResult, named: bool = False) -> Text | None:
    """An open loop whose -c ran out: how many connections started late for want of a free slot (timed from
    when they were due, so the latencies hold that wait), and, in a timed run, how many due never started."""
    load = result.load
    late, unstarted = result.late, result.unstarted
    if load.rate is None or not late and not unstarted:
        return None
    who = f"{result.server.label}: " if named else ""
    text = (
        f"{who}open loop at {load.rate:g}/s: {late} of {result.driven} {finished_unit(load)}s were due while all "
        f"{load.concurrency} in flight were busy and started late; their latencies count from when they were due"
    )
    if unstarted:
        due = round(load.rate * (load.duration_s or 0))
        text += f"; {unstarted} of the {due} due in {load.duration_s:g} s never started (not in the figures)"
    return Text(text + ".", style="yellow")


def mmhistogram(result: LatencyResult) -> Mmhistogram:
    return Mmhistogram(result.title or default_title(result.server, load=result.load), result.histogram)


def ms_or_dash(value: float | None) -> str:
    """Milliseconds to two places; "-" for none."""
    return "-" if value is None else f"{value:.2f}"


def percentile_table(result: LatencyResult) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for q in PERCENTILES:
        table.add_column(f"p{q:g} ms", justify="right")
    for name in ("req/s", "served", "errors", "wall s"):
        table.add_column(name, justify="right")
    table.add_row(
        *[ms_or_dash(result.percentile_ms(q)) for q in PERCENTILES],
        f"{result.throughput:.0f}",
        str(result.ok),
        Text(str(failed := sum(own_failures(result).values())), style="bold red" if failed else ""),
        f"{result.wall_s:.2f}",
    )
    return table


def under_way(result: LatencyResult) -> int:
    """The connections a stop (Ctrl-C, an attached worker's exit) found under way: counted as aborted in the
    file, but the stop's, not the server's failures (the stop line says them apart too: experiments/loading.py)."""
    return result.errors.get(ABORTED, 0) if result.interrupted else 0


def own_failures(result: LatencyResult) -> dict[str, int]:
    """The failures by cause, without those the stop found under way."""
    return {k: n for k, n in result.errors.items() if not (k == ABORTED and result.interrupted)}


def errors_block(errors: dict[str, int], total: int, unit: str = "connection", stopped: int = 0) -> Text | None:
    """The failures by cause; `unit`: what failed (finished_unit: a request over kept connections); `stopped`:
    those under way at a stop, said apart (not in `errors`)."""
    if not errors and not stopped:
        return None
    failed = sum(errors.values())
    text = Text(f"{failed} of {total - stopped} {unit}s failed:\n" if errors else "", style="bold red")
    for name, n in sorted(errors.items(), key=lambda kv: -kv[1]):
        text.append(f"  {n} × {describe_error(name)}\n")
    if stopped:
        text.append(
            f"{plural(stopped, unit)} under way at the stop (aborted by it: neither failed nor served)\n", "yellow"
        )
    return text


def affinity_lines(counters: Sequence[WorkerCounters], ids: str = "pid") -> list[str]:
    """The workers' CPU affinity in `taskset -cp PID` form, its ids named as the worker table heads them (`ids`)."""
    return [f"{ids} {c.pid}'s current affinity list: {format_cpu_list(c.affinity) or '?'}" for c in counters]


def drivers_text(drivers: Sequence[DriverStats], unit: str = "connection") -> Text:
    """The drivers' own figures; `unit` is what each counted as finished (finished_unit: a request over
    kept connections), which their CPU is divided by."""
    cpu = cpu_us_per_connection(drivers)
    total = f" ({cpu:.0f} CPU-µs per {unit})" if cpu is not None else ""
    loops = loops_ran(drivers)
    total = (f" on {loops}" if loops else "") + total
    parts = [
        f"{d.index}: {d.requests} req, {100 * d.cpu_fraction:.0f}% CPU"
        + (f", {100 * (d.runqueue_s or 0) / d.wall_s:.0f}% waiting for one" if d.runqueue_s is not None else "")
        for d in drivers
        if d.wall_s
    ]
    return Text(f"drivers{total}: " + "; ".join(parts), style="dim")


def client_cpu_line(
    results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = lambda r: r.server.label
) -> list[Text]:
    """The load generator's own CPU per connection in each run of a table (what driving costs here); per
    request when the runs keep their connections: the drivers count each request then (loads/kept.py)."""
    cells = [f"{name(r)} {cpu:.0f}" for r in results if (cpu := r.client_cpu_us) is not None]
    if not cells:
        return []
    unit = finished_unit(results[0].load)
    loops = loops_ran(d for r in results for d in r.drivers)
    on = f", on {loops}" if loops else ""
    return [Text(f"load generator CPU per {unit} (µs{on}): {', '.join(cells)}", style="dim")]


def interrupted_note(results: Sequence[LatencyResult]) -> list[Text]:
    """Said once when a run was stopped early: its figures cover only what was measured until then."""
    stopped = [r for r in results if r.interrupted]
    if not stopped:
        return []
    r = stopped[-1]
    why = stopped_early(r) or f"Interrupted: the {r.server.label} run was stopped after {r.wall_s:.2f} s" + (
        f" of load (its pool took {r.pool_fill_s:.2f} s to fill before)" if r.pool_fill_s else ""
    )
    return [
        Text(
            f"{why}; its figures are what was measured until then ({finished_unit(r.load)}s under way at the stop "
            "are neither served nor failed).",
            style="bold yellow",
        )
    ]


def unseen_parts(server: ServerSpec, observed: bool = False) -> list[Text]:
    """What a report of a server elsewhere (--target) could not measure, once (none for any other server; less
    what --observe-on brought, where `observed`), and what this tool's launch of its kind does that a user's
    does not (launch_parts)."""
    note = unseen_note(server, observed)
    return ([] if note is None else [Text(note, style="yellow")]) + launch_parts([server])


def unnamed_parts(server: ServerSpec, results: Sequence[LatencyResult]) -> list[Text]:
    """Where a server elsewhere's replies named no worker: what they served, which no row holds (the histogram's
    count less the rows')."""
    note = unnamed_note(server, [(r.ok - sum(r.served), r.ok) for r in results])
    return [] if note is None else [note]


def latency_report(result: LatencyResult) -> RenderableType:
    parts: list[RenderableType] = [
        *interrupted_note([result]),
        headline(result),
        *([note] if (note := merged_note(result)) is not None else []),
        mmhistogram(result),
        percentile_table(result),
        *syn_stall_notes([result]),
        *([note] if (note := open_loop_note(result)) is not None else []),
        *model_report([result]),
        *([Text(said, style="dim")] if (said := servers_text(result)) else []),
        *([Text(said, style="dim")] if (said := queues_text(result)) else []),  # an attached server's queues
        worker_table(
            result.counters,
            served_known(result),
            title="served per worker",
            ids=ids_of(result.server),
            of=result.ok if result.ok > sum(result.served) and known_by_replies(result.server) else None,
        ),  # shares of all it served, where some replies named no worker
        *([sleeps_legend(result.server)] if sleeps_of(result.server) else []),  # whose sleeps, where not one thread's
        *([Text(threads, style="yellow")] if (threads := threads_note(result.evidence)) else []),  # an attached HAProxy
        *([note] if (note := v6only_note(result.evidence, result.server.host)) is not None else []),
        *kept_parts(result),
        *first_parts(result),  # each connection's first request (which waited to be accepted) apart
        *([Text(said)] if (said := kept_tail_verdict(result)) else []),  # the split and the tails, judged
        *([Text(said)] if (said := fill_verdict(result)) else []),  # the tail: the fill's or the steady state's
        *([note] if (note := kernel_counts_text(result)) is not None else []),
        *([note] if (note := unplaced_text(result)) is not None else []),
        *unseen_parts(result.server, brought(result.evidence.get("observed_on", ()))),
        *unnamed_parts(result.server, [result]),
        Verbatim(affinity_lines(result.counters, ids_of(result.server)) if unseen_note(result.server) is None else []),
        drivers_text(result.drivers, finished_unit(result.load)),
        *host_parts([HostsPart(None, result.hosts, result.wall_s, result.load.rate, result.interrupted)]),
        *observed_parts(result.evidence),
    ]
    if result.evidence:
        parts.append(evidence_report(result.evidence))
    errors = errors_block(own_failures(result), result.driven, finished_unit(result.load), under_way(result))
    if errors:
        parts.append(errors)
    parts.extend(load_notes([result]))
    return Group(*parts)
