"""`sweep`'s report (seed 001's table): one row per cap on accepts per wakeup, its histograms, the kept
connections by cap when the load keeps them, the model, the kernel's counters and which cap to pick."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from ...analysis.losses import sweep_name
from ...core.text import escape_controls
from ...render.columns import TextColumn, TextTable
from ...render.evidence import counters_text
from ...render.hosts import HostsPart, host_parts
from ...render.observed_on import brought, load_parts
from ...render.text import plural
from ...servers.registry import known_mode
from .compare_report import WIDE
from .headlines import group_headline
from .kept_compare import kept_compare_parts
from .kept_load_words import finished_unit
from .load_notes import load_notes
from .machine_share import machine_note
from .model_report import model_report
from .report import (
    client_cpu_line,
    errors_block,
    interrupted_note,
    mmhistogram,
    own_failures,
    under_way,
    unnamed_parts,
    unseen_parts,
)
from .result import LatencyResult
from .sweep_verdict import sweep_split_note, sweep_verdict


def caps_not_applied(run: LatencyResult) -> list[Text]:
    """The note for a sweep (one round, or --repeat's) of a server no setting of which follows the cap
    (ModeInfo.batches False): its caps ran the same server."""
    server = run.server
    mode = known_mode(server.kind, server.mode)
    if mode is None or mode.batches:
        return []
    return [
        Text(
            f"Note: --accept-batch does not apply to {server.kind}'s {server.mode}: it accepts its own way "
            "whatever the cap, so every cap ran the same server and their differences are the runs' own.",
            style="yellow",
        )
    ]


def _sweep_rule(header: str) -> str:
    return "+".join("-" * len(col) for col in header.split("|"))


def sweep_table(results: Sequence[LatencyResult]) -> TextTable:
    """Seed 001's table: cap, throughput, average, deviation and p99 latency, plus the largest batch a
    worker actually accepted in one wakeup and the mean accepts per wakeup (from the workers' counters)."""
    labels, tps, lat, most, mean = [], [], [], [], []
    for r in results:
        batch = r.server.accept_batch
        labels.append(f"{f'{batch} limit' if batch else 'no limit':<9}")
        wakeups = sum((c.wakeups or 0) - (c.empty or 0) for c in r.counters)
        accepts = sum(c.accepts or 0 for c in r.counters)
        s = r.summary()
        lat.append([f"{s[k]:.2f}ms" if s.get(k) is not None else "-" for k in ("avg_ms", "dev_ms", "p99_ms")])
        tps.append(f"|{r.throughput:>11.2f}tps ")
        # a server whose workers count nothing this tool can read (--target, --attach): unknown, not 0
        batches = [c.max_batch for c in r.counters if c.max_batch is not None]
        counted = any(c.wakeups is not None for c in r.counters)
        most.append(f"|{max(batches) if batches else '-':>11} ")
        mean.append(f"|{(accepts / wakeups if wakeups else 0):>11.2f}" if counted else f"|{'-':>11}")
    columns = [
        TextColumn(f"|{'performance':>14} ", tuple(tps)),
        *(
            TextColumn(f"|{name:>{w}} ", tuple(f"|{row[i]:>{w}} " for row in lat))
            for i, (name, w) in enumerate((("lat-avg", 9), ("lat-stdev", 10), ("lat-99%", 9)))
        ),
        TextColumn(f"|{'max/wakeup':>11} ", tuple(most)),
        TextColumn(f"|{'avg/wakeup':>11}", tuple(mean)),
    ]
    return TextTable(TextColumn(f"{'':>9}", tuple(labels)), columns, _sweep_rule, rule_each_row=True)


def sweep_lines(results: Sequence[LatencyResult], width: int = WIDE) -> list[str]:
    return sweep_table(results).lines(width)


def sweep_report(results: Sequence[LatencyResult], stopped: str | None = None) -> RenderableType:
    """`stopped`: why an error ended the sweep after these caps' runs (SweepResult.stopped)."""
    if not results:
        return Text("no sweep runs")
    first = results[0]
    server = first.server
    parts: list[RenderableType] = [
        *interrupted_note(results),
        group_headline("accept-order sweep --accept-batch", first, f"mode {server.mode}, "),
    ]
    for r in results:
        parts.append(mmhistogram(r))
    parts.append(sweep_table(results))
    # Kept connections: the cap changes which worker takes each connection, and a connection's requests stay
    # with that worker, so the requests per worker (and Jain's index over them) are what the cap did to load.
    parts.extend(kept_compare_parts(results, sweep_name, "cap"))
    parts.extend(client_cpu_line(results, sweep_name))
    parts.extend(
        host_parts([HostsPart(sweep_name(r), r.hosts, r.wall_s, r.load.rate, r.interrupted) for r in results], "cap")
    )
    parts.extend(model_report(results, sweep_name))
    mode = known_mode(server.kind, server.mode)
    # where the cap is not applied (the note below), a wakeup takes what the server takes: io-uring's 8 under '1 limit'
    bound = "never above the cap" if mode is None or mode.batches else "the cap does not bound it here"
    legend = (
        "tps: served requests per second; max/wakeup: most connections one worker accepted in one "
        f"wakeup ({bound}); avg/wakeup: accepts per non-empty wakeup"
    )
    if first.load.keeps_connections:  # an event-driven worker waits on its kept connections in the same wait
        legend += " (a wakeup that only read requests on kept connections counts too, so it may be below 1)"
    parts.append(Text(legend, style="dim"))
    parts.extend(caps_not_applied(first))
    for r in results:
        # the connections a stop found under way are the stop's, said apart (as latency's report says them)
        errors = errors_block(own_failures(r), r.driven, finished_unit(r.load), under_way(r))
        if errors:
            parts.append(Text(f"{sweep_name(r)}: ", style="bold"))
            parts.append(errors)
    if any(r.evidence for r in results):  # the counters latency shows, one line per cap
        parts.append(Text("Kernel evidence", style="bold"))
        parts.extend(counters_text(r.evidence, f"{sweep_name(r)}: kernel counters") for r in results if r.evidence)
    for r in results:  # --observe-on: what observe saw on the server's host during each cap's run
        parts.extend(load_parts(r.evidence.get("observed_on", ()), sweep_name(r)))
    parts.extend(unseen_parts(server, any(brought(r.evidence.get("observed_on", ())) for r in results)))
    parts.extend(unnamed_parts(server, results))
    parts.extend(load_notes(results, sweep_name))
    applies = mode is None or mode.batches
    machine = machine_note(results, sweep_name, "cap")  # caps run one after another: others' CPU may differ
    split = sweep_split_note(results, applies)  # a pool's split is its workers' load to the end: the tails miss it
    verdict = sweep_verdict(results, applies).said
    parts.append(Text.assemble(("Verdict: ", "bold"), verdict, _sentence(split), _sentence(machine)))
    if stopped:
        kept = f"kept: what was measured before it ({plural(len(results), 'cap')}); the caps after it were not run"
        parts.append(Text(f"Stopped early: {escape_controls(stopped)}; {kept}.", style="yellow"))
    return Group(*parts)


def _sentence(said: str) -> str:
    """`said` as a sentence after the verdict's ('' for none)."""
    return f". {said[0].upper()}{said[1:]}" if said else ""
