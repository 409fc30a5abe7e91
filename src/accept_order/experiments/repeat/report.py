"""A repeated comparison: every figure as its median and range over the rounds, and how many rounds agree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ...core.run_warnings import unique
from ...core.text import escape_controls
from ...render.text import plural
from ..launch_notes import launch_parts
from .kinds import first_environment, repeated_of
from .result import machine_warnings


def repeat_report(
    of: str,
    rounds: Sequence[Sequence[Any]],
    skipped: dict[str, str],
    machine: dict[str, Any],
    cpus: int,
    notes: Sequence[str] = (),
    interrupted: bool = False,
    stopped: str | None = None,
) -> RenderableType:
    parts: list[RenderableType] = []
    if not rounds:
        return Text("no round finished")
    kind = repeated_of(of)  # the experiment says itself what its rounds show and what they warn of
    parts += kind.report(rounds)
    warnings = kind.warnings(rounds)
    warnings += machine_warnings(machine.get("before", {}), machine.get("after", {}), cpus)
    env = first_environment(kind, rounds)
    where = f"{env.system} {env.kernel}, {env.cpu_count} CPUs; " if env else ""
    # one round asked for (ramp --modes without --repeat): nothing was interleaved
    cut = _cut_short(interrupted, stopped)
    ran = (
        "one run of each, one after another"
        if len(rounds) == 1 and not cut
        else f"{plural(len(rounds), 'round')}{cut}, the variants interleaved (each round runs every one once)"
    )
    parts.append(
        Text(
            f"{ran}; "
            f"{where}host-wide load average "
            f"{_load(machine.get('before'))} before, {_load(machine.get('after'))} after",
            style="dim",
        )
    )
    if stopped is not None:
        parts.append(Text(f"Stopped early: {escape_controls(stopped)}; no later round ran.", style="yellow"))
    for note in unique(warnings):
        parts.append(Text(f"Warning: {note}", style="yellow"))
    parts += launch_parts(run.server for row in rounds for run in row)  # every repeatable run names its server
    for name, reason in skipped.items():
        parts.append(Text(f"  {name}: not available: {reason}", style="dim"))
    parts += [Text(note, style="dim") for note in notes]
    return Group(*parts)


def _load(state: Any) -> str:
    if isinstance(state, dict) and state.get("load_average"):
        return "/".join(f"{v:.2f}" for v in state["load_average"])
    return "?"


def _cut_short(interrupted: bool, stopped: str | None) -> str:
    if interrupted:
        return " (interrupted: the rounds that finished)"
    return " (stopped by an error: the rounds that finished)" if stopped is not None else ""
