"""A repeated comparison: every figure as its median and range over the rounds, and how many rounds agree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.model_check import model_agreement
from ...analysis.stability import Spread, latency_stability, names_of, order_stability
from ...run_warnings import RunWarning, unique
from .kinds import find_repeated, first_environment
from .result import LATENCY_KINDS, latency_warnings, machine_warnings


def _by_variant(rounds: Sequence[Sequence[Any]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for row in rounds:
        for name, result in zip(names_of(row), row, strict=True):
            out.setdefault(name, []).append(result)
    return out


def _latency_table(of: str, rounds: Sequence[Sequence[Any]]) -> Table:
    command = "sweep" if of == "sweep" else "latency"
    rate = next((r.load.rate for row in rounds for r in row if r.load.rate is not None), None)
    title = f"accept-order {command} --repeat" + (f", open loop at {rate:g}/s" if rate is not None else "")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    seed = of == "sweep"  # seed 001's columns: average latency (not p50), most accepts per wakeup
    names = ("mode", "avg ms" if seed else "p50 ms", "p99 ms", "p99.9 ms", "dev ms", "req/s",
             *(("max/wakeup",) if seed else ()), "errors")  # fmt: skip
    for name in names:
        table.add_column(name, justify="left" if name == "mode" else "right", overflow="fold")  # never cut a figure
    for label, runs in _by_variant(rounds).items():
        ok = [r for r in runs if r.ok]
        if not ok:
            table.add_row(label, *["-"] * (len(names) - 2), str(sum(r.failed for r in runs)))
            continue

        def spread(values: list[float], scale: float = 1000.0, fmt: str = "{:.2f}") -> str:
            return Spread.of(values).text(scale, fmt)

        most = [float(max((c.max_batch or 0 for c in r.counters), default=0)) for r in ok]
        table.add_row(
            label,
            spread([r.histogram.mean_us if seed else r.histogram.percentile(50) for r in ok]),
            spread([r.histogram.percentile(99) for r in ok]),
            spread([r.histogram.percentile(99.9) for r in ok]),
            spread([r.histogram.stdev_us for r in ok]),
            spread([r.throughput for r in ok], 1.0, "{:.0f}"),
            *([spread(most, 1.0, "{:.0f}")] if seed else []),
            str(sum(r.failed for r in runs)),
        )
    return table


def _order_table(of: str, rounds: Sequence[Sequence[Any]]) -> Table:
    table = Table(title=f"accept-order {of} --repeat", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("mode", "verdict over the runs", "Jain", "woken"):
        table.add_column(name, justify="right" if name in ("Jain", "woken") else "left")
    stability = order_stability(rounds)
    for label, runs in _by_variant(rounds).items():
        woken = [r.verdict.woken_per_connection for r in runs if r.verdict.woken_per_connection is not None]
        verdict = Text(stability[label].text, style="green" if stability[label].conclusive else "yellow")
        table.add_row(
            label,
            verdict,
            Spread.of([r.verdict.jain for r in runs]).text(),
            Spread.of(woken).text(fmt="{:.1f}") if woken else "-",
        )
    return table


def repeat_report(
    of: str,
    rounds: Sequence[Sequence[Any]],
    skipped: dict[str, str],
    machine: dict[str, Any],
    cpus: int,
    notes: Sequence[str] = (),
    interrupted: bool = False,
) -> RenderableType:
    parts: list[RenderableType] = []
    if not rounds:
        return Text("no round finished")
    kind = find_repeated(of)
    if kind is not None:  # an experiment that says itself what its rounds show (burst, ramp, reload)
        parts += kind.report(rounds)
        warnings: list[RunWarning] = []
    elif of in LATENCY_KINDS:
        parts.append(_latency_table(of, rounds))
        parts.append(Text("median (min-max) over the runs", style="dim"))
        if len(rounds[0]) > 1:
            stability = latency_stability(rounds)
            parts.append(Text(f"Verdict: {stability.text}", style="green" if stability.conclusive else "yellow"))
            if stability.pairs:
                parts.append(
                    Text(
                        "Pair by pair over the runs (whole tail: p99, p99.9 and deviation all lower; "
                        "significance: a t-test of the p99s):"
                    )
                )
                parts.extend(Text(f"  {line}", style="dim") for line in stability.pairs)
            agreement = model_agreement(rounds)
            if agreement is not None:
                parts.append(Text.assemble(("Model: ", "bold"), agreement))
        warnings = latency_warnings(rounds)
    else:
        parts.append(_order_table(of, rounds))
        warnings = []
    warnings += machine_warnings(machine.get("before", {}), machine.get("after", {}), cpus)
    env = first_environment(kind, rounds) if kind else rounds[0][0].environment
    where = f"{env.system} {env.kernel}, {env.cpu_count} CPUs; " if env else ""
    parts.append(
        Text(
            f"{len(rounds)} rounds{' (interrupted: the rounds that finished)' if interrupted else ''}, the "
            "variants interleaved (each round runs every one once); "
            f"{where}host-wide load average "
            f"{_load(machine.get('before'))} before, {_load(machine.get('after'))} after",
            style="dim",
        )
    )
    for note in unique(warnings):
        parts.append(Text(f"Warning: {note}", style="yellow"))
    for name, reason in skipped.items():
        parts.append(Text(f"  {name}: not available: {reason}", style="dim"))
    parts += [Text(note, style="dim") for note in notes]
    return Group(*parts)


def _load(state: Any) -> str:
    if isinstance(state, dict) and state.get("load_average"):
        return "/".join(f"{v:.2f}" for v in state["load_average"])
    return "?"
