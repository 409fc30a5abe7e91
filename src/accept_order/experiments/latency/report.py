"""Latency reports: mmhistogram lines, percentiles, the side-by-side table of several modes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.tails import TailVerdict, tail_verdict
from ...core.cpus import format_cpu_list
from ...core.load_summary import cpu_us_per_connection
from ...core.measures import DriverStats, Environment, WorkerCounters
from ...core.protocol import ABORTED, describe_error
from ...core.run_warnings import RunWarning, WarningKind, unique, warn
from ...core.spec import ConcurrentLoad, ServerSpec
from ...core.totals import loops_ran
from ...loads.generator import STARVED, client_bound, driver_warnings
from ...render.columns import TextColumn, TextTable
from ...render.evidence import OTHERS_SHOWN, evidence_report, machine_busy, moved_counters_lines
from ...render.histogram import Mmhistogram
from ...render.hosts import HostsPart, host_parts, on_hosts
from ...render.observed_on import brought, observed_parts
from ...render.text import Verbatim, durations_us, plural
from ...render.workers import worker_table
from ...servers.registry import known_by_replies, known_mode, threads_note, unseen_note
from ..attached_listeners import v6only_note
from ..launch_notes import launch_parts
from ..own_settings import acceptors, caps_said
from ..sleeps_legend import ids_of, sleeps_legend, sleeps_of
from .attached_counts import kernel_counts_text, served_known, unplaced_text
from .kept_compare import kept_compare_parts
from .kept_load_words import finished_unit, kept_amount, kept_words
from .kept_report import kept_parts
from .merged_note import merged_note
from .model_queues import queues_text
from .model_report import model_report
from .model_servers import servers_text
from .result import PERCENTILES, LatencyResult, default_title
from .stop_reason import stopped_early
from .syn_note import syn_stall_notes


def _label(result: LatencyResult) -> str:
    return result.server.label


def load_notes(results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> list[Text]:
    """What to say about the load generator over runs with the same settings, each thing once: that it
    was CPU-bound or starved (yellow), else, when it shares the CPUs with the workers, that it does and
    how long it waited for a CPU (its wait is part of every latency; the seed's client had its own box).
    `name` names a run where the host's CPUs are said per run (sweep: its row's name, '4 limit')."""
    if not results:
        return []
    first = results[0]
    procs, workers, cpus = first.load.driver_procs, first.server.workers, first.environment.cpu_count
    drivers = [d for r in results for d in r.drivers]
    bound = [w for r in results if (w := client_bound(list(r.drivers), r.worker_cpu_s, r.wall_s, r.worker_cpus))]
    if first.hosts:  # drivers on client hosts: more hosts give them CPU, --load-cpus only this host's
        bound = [warn(WarningKind.CLIENT_BOUND_HOSTS, **w.figures) for w in bound]
    helpers = max(acceptors(r.server) for r in results)  # an acceptor (fd-pass's, Node's primary): the run's own
    warnings = driver_warnings(drivers, workers, cpus, procs, helpers)
    # the workers run on another host (--target), or the drivers do (--clients), or each on CPUs of their own
    # (--load-cpus apart from --cpus): neither waited for the other
    apart = bool(first.load.cpus) and bool(first.server.cpus) and not set(first.load.cpus) & set(first.server.cpus)
    elsewhere = unseen_note(first.server) is not None or bool(first.hosts) or apart
    if elsewhere:  # the drivers waited for their own host's CPUs, not for the workers'
        warnings = [elsewhere_wait(w, drivers) for w in warnings]
    if bound:  # says more than "a driver was CPU-bound": the workers idled meanwhile
        warnings = [w for w in warnings if w.kind is not WarningKind.DRIVER_SATURATED]
    notes = [Text(f"Warning: {w}", style="yellow") for w in unique([*bound, *warnings])]
    waits = [(d.runqueue_s or 0) / d.wall_s for d in drivers if d.wall_s and d.runqueue_s is not None]
    notes += host_notes(results, name)
    if procs + workers > cpus and not any(w > STARVED for w in waits) and not elsewhere:  # else a warning said it
        who = ("it", "its", "runs") if procs == 1 else ("they", "their", "run")  # not '1 processes run'
        wait = f"; {who[0]} waited for a CPU at most {100 * max(waits):.0f}% of {who[1]} time" if waits else ""
        said = f"The load generator's {plural(procs, 'process')} {who[2]} on the same {plural(cpus, 'CPU')} as the "
        notes.append(
            Text(f"{said}{plural(workers, 'worker')}{wait}; that wait is part of the measured latencies.", style="dim")
        )
    return notes


def elsewhere_wait(warning: RunWarning, drivers: Sequence[DriverStats]) -> RunWarning:
    """The drivers' wait for a CPU, said without the workers when they run on another host."""
    if warning.kind not in (WarningKind.DRIVERS_STARVED, WarningKind.DRIVERS_WAITED_FOR_OTHERS):
        return warning
    share = max((d.runqueue_s or 0) / d.wall_s for d in drivers if d.wall_s)
    return warn(WarningKind.CLIENT_WAITED, percent=100 * share)


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


def host_notes(results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> list[Text]:
    """The host's CPUs over each run beside the run's own processes' CPU (workers and load generator), said
    when others used a share worth naming: a wait for a CPU is then not only the run's own doing. Where the
    workers' CPU was not read, the load generator's share and the rest unsplit, when the rest is as large as
    others' would be named (the load generator's own CPU is no sign of others')."""
    notes = []
    for r in results:
        who = f"{name(r)}: " if len(results) > 1 else ""
        cpus = r.environment.cpu_count
        unsplit = r.host_busy_unsplit
        if unsplit is not None:
            busy, generator = unsplit
            if busy - generator >= OTHERS_SHOWN:
                text = machine_busy(busy, generator * cpus, cpus, server_read=False)
                notes.append(Text(f"{who}{text} during the run, so waits for a CPU may be others'", style="yellow"))
            continue
        shares = r.others_cpu_share
        if shares is None or shares[1] < OTHERS_SHOWN:
            continue
        busy, others = shares
        text = machine_busy(busy, (busy - others) * cpus, cpus)
        notes.append(Text(f"{who}{text} during the run, so waits for a CPU are partly theirs", style="yellow"))
    return notes


def mmhistogram(result: LatencyResult) -> Mmhistogram:
    return Mmhistogram(result.title or default_title(result.server, load=result.load), result.histogram)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _work_and_load(plan: ServerSpec, estimate_us: float | None, load: ConcurrentLoad) -> tuple[str, str]:
    """The work per connection and the load, for one line: its durations (the work, its cost here, how long
    the load ran) in one unit."""
    values = {
        "work": plan.work_us or None,
        "cost": round(estimate_us) if plan.work_iters and estimate_us else None,
        "ran": (load.duration_s or 0) * 1e6 if load.connections is None else None,
    }
    given = {name: value for name, value in values.items() if value is not None}
    shown = dict(zip(given, durations_us(*given.values()), strict=True))
    parts = [shown["work"]] if "work" in shown else []
    if plan.work_iters:
        cost = f" ≈ {shown['cost']} here" if "cost" in shown else ""
        parts.append(f"{plan.work_iters} loop iterations{cost}")
    work = "work " + (" + ".join(parts) + " busy loop" if parts else "none")
    if plan.attach or known_by_replies(plan):  # a server this tool did not start: what it does is not ours to say
        work = "the server's own work"
    amount = kept_amount(load) if load.connections is not None else shown["ran"]
    procs = f"{load.driver_procs} driver processes" + (f" on CPUs {format_cpu_list(load.cpus)}" if load.cpus else "")
    procs += on_hosts(load.clients)
    if load.rate is not None:
        kept = kept_words(load) if load.connections is None else ""  # with a count, kept_amount says it
        return work, f"open loop at {load.rate:g}/s, {amount}{kept}, at most {load.concurrency} in flight, {procs}"
    return work, f"{amount}, {load.concurrency} concurrent{kept_words(load)}, {procs}"


def _env_text(env: Environment) -> str:
    return f"{env.system} {env.kernel}, {env.cpu_count} CPUs"


def group_headline(command: str, first: LatencyResult, mode: str, caps: str = "") -> Text:
    """The first line of a report over several runs that share everything but what they vary (`caps`: their cap)."""
    server = first.server
    work, load = _work_and_load(server, first.work_estimate_us, first.load)
    return Text.assemble(
        (command, "bold"),
        f": {mode}{plural(server.workers, 'worker')}, {work}{caps}; {load} ({_env_text(first.environment)})",
    )


def headline(result: LatencyResult) -> Text:
    server, env = result.server, result.environment
    # the cap where the mode reads it: a file of before 87222a4 may hold one its mode never read (io-uring's)
    read = (mode := known_mode(server.kind, server.mode)) is None or mode.batches
    batch = f", accept-batch {server.accept_batch}" if server.accept_batch and read else ""
    pinned = f", pinned to CPUs {format_cpu_list(server.cpus)}" if server.cpus else ""
    work, load = _work_and_load(server, result.work_estimate_us, result.load)
    threads = result.evidence.get("threads")
    count = threads.get("count") if isinstance(threads, dict) else None
    of = f" of {count} threads" if isinstance(count, int) and count > 1 and server.workers == 1 else ""
    return Text.assemble(
        ("accept-order latency", "bold"),
        f": mode {server.label}, {plural(server.workers, 'worker')}{of}{pinned}, "
        f"{work}{batch}; {load}; "
        f"{server.host}:{result.port} ({_env_text(env)})",
    )


def percentile_table(result: LatencyResult) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for q in PERCENTILES:
        table.add_column(f"p{q:g} ms", justify="right")
    for name in ("req/s", "served", "errors", "wall s"):
        table.add_column(name, justify="right")
    table.add_row(
        *[_ms(result.percentile_ms(q)) for q in PERCENTILES],
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
        worker_table(result.counters, served_known(result), title="served per worker", ids=ids_of(result.server)),
        *([sleeps_legend(result.server)] if sleeps_of(result.server) else []),  # whose sleeps, where not one thread's
        *([Text(threads, style="yellow")] if (threads := threads_note(result.evidence)) else []),  # an attached HAProxy
        *([note] if (note := v6only_note(result.evidence, result.server.host)) is not None else []),
        *kept_parts(result),
        *([note] if (note := kernel_counts_text(result)) is not None else []),
        *([note] if (note := unplaced_text(result)) is not None else []),
        *unseen_parts(result.server, brought(result.evidence.get("observed_on", ()))),
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


WIDE = 1000  # as many columns as a line needs: the layout unstacked
COMPARE_COLUMNS = (
    ("min", "min_ms"),
    ("avg", "avg_ms"),
    ("med", "med_ms"),
    ("p90", "p90_ms"),
    ("p99", "p99_ms"),
    ("p99.9", "p99.9_ms"),
    ("max", "max_ms"),
    ("dev", "dev_ms"),
)


def compare_table(results: Sequence[LatencyResult]) -> TextTable:
    """The side-by-side table, as fixed-width text: stacked in parts when it is wider than the terminal."""
    width = max([len("mode"), *(len(r.server.label) for r in results)])
    summaries = [r.summary() for r in results]
    columns = [
        TextColumn(f"{name:>9}", tuple(f"{_ms(s.get(key)):>9}" for s in summaries)) for name, key in COMPARE_COLUMNS
    ]
    columns.append(TextColumn(f"{'req/s':>9}", tuple(f"{r.throughput:>9.0f}" for r in results)))
    columns.append(TextColumn(f"{'errors':>8}", tuple(f"{sum(own_failures(r).values()):>8}" for r in results)))
    columns.append(TextColumn("  served per worker", tuple("  " + " ".join(map(str, r.served)) for r in results)))
    return TextTable(TextColumn(f"{'mode':<{width}}", tuple(f"{r.server.label:<{width}}" for r in results)), columns)


def compare_lines(results: Sequence[LatencyResult], width: int = WIDE) -> list[str]:
    return compare_table(results).lines(width)


def compare_report(
    results: Sequence[LatencyResult], skipped: dict[str, str], verdict: TailVerdict | None = None
) -> RenderableType:
    verdict = verdict or tail_verdict(results)
    parts: list[RenderableType] = [*interrupted_note(results)]
    if results:
        caps = caps_said([r.server for r in results])  # where the modes read one
        parts.append(group_headline("accept-order latency --modes", results[0], "", caps))
    for r in results:
        parts.append(mmhistogram(r))
        errors = errors_block(own_failures(r), r.driven, finished_unit(r.load), under_way(r))
        if errors:
            parts.append(errors)
    parts.append(Text("latency by mode (ms)", style="bold"))
    parts.append(compare_table(results))
    parts.extend(syn_stall_notes(results, named=True))
    parts.extend(moved_counters_lines((r.server.label, r.evidence) for r in results))  # one run's line, per run
    parts.extend(kept_compare_parts(results))
    parts.extend(client_cpu_line(results))
    parts.extend(
        host_parts([HostsPart(r.server.label, r.hosts, r.wall_s, r.load.rate, r.interrupted) for r in results], "mode")
    )
    parts.extend(note for r in results if (note := open_loop_note(r, named=True)) is not None)
    parts.extend(model_report(results))
    for mode, reason in skipped.items():
        parts.append(Text(f"{mode}: not available: {reason}", style="dim"))
    parts.extend(load_notes(results))
    parts.extend(launch_parts(r.server for r in results))
    parts.append(Text.assemble(("Verdict: ", "bold"), verdict.text))
    return Group(*parts)
