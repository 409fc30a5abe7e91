"""A repeated comparison: every figure as its median and range over the rounds, and how many rounds agree.
A stop's cut round is said apart: shown where no round finished, otherwise named and left out of the figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from rich.console import Group, RenderableType
from rich.text import Text

from ...core.hosts import ClientHosts
from ...core.run_warnings import unique
from ...core.text import and_join, escape_controls
from ...render.hosts import on_hosts
from ...render.text import plural
from ..launch_notes import launch_parts
from .kinds import Repeated, first_environment, repeated_of
from .result import machine_warnings
from .run import whole

if TYPE_CHECKING:
    from .result import RepeatResult


def shown_rounds(kind: Repeated, result: RepeatResult) -> list[list[Any]]:
    """The rounds the report's figures are of: those that finished; where none did, the round a stop cut
    short, of its variants that finished (and the part of the one it stopped, for an experiment whose report
    reads a run cut short: a ramp's steps so far)."""
    if result.rounds:
        return [list(row) for row in result.rounds]
    cut = [run for run in result.cut if whole(run) or kind.reads_cut_runs]
    return [cut] if cut else []


def repeat_report(result: RepeatResult) -> RenderableType:
    kind = repeated_of(result.of)  # the experiment says itself what its rounds show and what they warn of
    rounds = shown_rounds(kind, result)
    if not rounds:
        return Text("no round finished")
    parts: list[RenderableType] = []
    once = result.once if result.asked is not None else len(result.rounds) == 1 and not _ended_early(result)
    parts += (kind.report_once or kind.report)(rounds) if once else kind.report(rounds)
    warnings = kind.warnings(rounds)
    machine = result.machine
    warnings += machine_warnings(machine.get("before", {}), machine.get("after", {}), result.cpus)
    env = first_environment(kind, rounds)
    where = f"{env.system} {env.kernel}, {env.cpu_count} CPUs; " if env else ""
    # the medians' table names no host: a load from client hosts (--clients) is said here or nowhere
    clients = next((c for row in rounds for r in row if (c := _client_hosts(r)) is not None), None)
    where = f"load generator{on_hosts(clients)}; {where}" if clients is not None else where
    cut = _cut_short(result.interrupted, result.stopped)
    # one round asked for (ramp --modes without --repeat): nothing was interleaved
    ran = (
        f"no round finished{cut.split(':')[0] + ')' if cut else ''}: the figures are those of round 1, cut short"
        if not result.rounds and not once
        else f"one run of each, one after another{cut.split(':')[0] + ')' if cut else ''}"  # the cut line says the rest
        if once
        else f"{plural(len(result.rounds), 'round')}{cut}, the variants interleaved (each round runs every one once)"
    )
    parts.append(
        Text(
            f"{ran}; "
            f"{where}host-wide load average "
            f"{_load(machine.get('before'))} before, {_load(machine.get('after'))} after",
            style="dim",
        )
    )
    said = _what_was_cut(kind, result, once)
    if said:
        parts.append(Text(said, style="yellow"))
    if result.stopped is not None:
        later = "no later run ran" if once else "no later round ran"
        parts.append(Text(f"Stopped early: {escape_controls(result.stopped)}; {later}.", style="yellow"))
    for note in unique(warnings):
        parts.append(Text(f"Warning: {note}", style="yellow"))
    parts += launch_parts(run.server for row in rounds for run in row)  # every repeatable run names its server
    for name, reason in result.skipped.items():
        parts.append(Text(f"  {name}: not available: {reason}", style="dim"))
    parts += [Text(note, style="dim") for note in result.notes]
    return Group(*parts)


def _client_hosts(run: Any) -> ClientHosts | None:
    """The client hosts a run's load came from: a latency run's load says them, a ramp's plan (the hosts every
    step ran on), a burst's cells (each names the hosts that drove it); None for a load driven from here."""
    if (clients := getattr(getattr(run, "load", None), "clients", None)) is not None:
        return cast(ClientHosts, clients)
    if hosts := next((c.hosts for c in getattr(run, "cells", ()) if c.hosts), ()):
        return ClientHosts(tuple(h.destination for h in hosts))
    plan = getattr(run, "plan", None)
    hosts = plan.get("client_hosts") if isinstance(plan, dict) else None
    return ClientHosts.from_dict(hosts) if isinstance(hosts, dict) else None


def _ended_early(result: RepeatResult) -> bool:
    return result.interrupted or result.stopped is not None


def _what_was_cut(kind: Repeated, result: RepeatResult, once: bool) -> str:
    """What the stop cut: the round it cut short (which variants had finished, what became of the one it
    stopped, where their runs are) and the rounds that never ran. Empty for a run that ended as asked."""
    if not _ended_early(result):
        return ""
    stop = "interrupted" if result.interrupted else "stopped by the error"
    number = len(result.rounds) + 1  # the round the stop came in
    of = f" of {result.asked}" if result.asked is not None else ""
    said: list[str] = []
    if result.cut:
        finished = [run for run in result.cut if whole(run)]
        # named as a whole round names them: a sweep's runs share a label, and a part of a round named its caps
        # by the label ('epoll finished; 4 limit measured nothing' of caps 1 and 4)
        names = kind.names(result.rounds[0])[: len(result.cut)] if result.rounds else kind.names(result.cut)
        parts = [f"{_listed(names[: len(finished)])} finished"] if finished else []
        if len(finished) < len(result.cut):
            shown = not result.rounds and kind.reads_cut_runs
            kept = "the part it measured is shown above" if shown else "the part it measured is in the file"
            parts.append(f"{names[-1]} was {stop} during its run ({kept})")
        not_run = _not_run(kind, result)
        if not_run:  # the one the stop came in before it measured anything, and those after it
            parts.append(f"{not_run} measured nothing")
        if result.rounds:  # shown apart: a round with a variant missing is not compared with the others
            parts.append("these runs are kept in the file, left out of the figures above")
        said.append(("cut short: " if once else f"round {number}{of}, cut short: ") + "; ".join(parts))
    elif result.asked is not None and number <= result.asked:
        said.append(f"round {number}{of} measured nothing")
    if result.asked is not None and number < result.asked:
        said.append(
            f"round {number + 1} did not run"
            if number + 1 == result.asked
            else f"rounds {number + 1}-{result.asked} did not run"
        )
    text = "; ".join(said)
    return text[:1].upper() + text[1:] + "." if text else ""


def _not_run(kind: Repeated, result: RepeatResult) -> str:
    """The variants of the cut round that the stop came before: by name where a round finished, else how many."""
    if result.rounds:
        return _listed(kind.names(result.rounds[0])[len(result.cut) :])
    left = (result.variants or 0) - len(result.cut)
    return plural(left, "more variant") if left > 0 else ""


def _listed(names: Sequence[str]) -> str:
    if not names:
        return ""
    return and_join(names)


def _load(state: Any) -> str:
    if isinstance(state, dict) and state.get("load_average"):
        return "/".join(f"{v:.2f}" for v in state["load_average"])
    return "?"


def _cut_short(interrupted: bool, stopped: str | None) -> str:
    if interrupted:
        return " (interrupted: the rounds that finished)"
    return " (stopped by an error: the rounds that finished)" if stopped is not None else ""
