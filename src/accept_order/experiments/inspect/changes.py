"""`inspect`'s "What changes it": each other mode of the recognised server, with the settings that take it
there from the mode /proc shows (ModeInfo.settings, compared knob by knob). A setting the server has
already is left out; one that has no effect in the mode seen (nginx's accept_mutex under reuseport), or
that the modes /proc cannot tell apart set differently, may be set already and says so; and each row says
which other modes look like it in /proc (inspect could not confirm it once set)."""

from __future__ import annotations

from ...core.kinds import ModeInfo, ServerKind
from ...core.spec import DEFAULT_KIND
from .result import ChangeView


def steps(target: ModeInfo, seen: list[ModeInfo], now: str) -> tuple[str, ...]:
    """The settings that take a server in one of the `seen` modes (which /proc cannot tell apart; `now`
    names them: `nginx's reuseport`) to `target`: those of each knob `target` names that the seen modes do
    not all have already: first those every seen mode sets otherwise, then those that may be set already,
    each saying why."""
    if not seen:  # no mode of the kind looks like what /proc shows: nothing is known to be set
        return target.settings
    held = [mode.knobs() for mode in seen]
    changes: list[str] = []
    unknown: list[str] = []
    for knob, settings in target.knobs().items():
        have = {mode.get(knob) for mode in held}
        if have == {settings}:
            continue  # set already, in whichever of the seen modes it is
        if None not in have and settings not in have:
            changes += settings  # every seen mode sets it otherwise
        elif have == {None}:
            unknown += [f"{s} (no effect with {now}: may be set already)" for s in settings]
        else:
            unknown += [f"{s} (may be set already: {now} look the same)" for s in settings]
    return (*changes, *unknown)


def change_views(kind: ServerKind, seen: tuple[str, ...]) -> tuple[ChangeView, ...]:
    """A row for each mode of `kind` that /proc would show otherwise than the `seen` modes (the kind's modes
    that look like what it shows)."""
    modes = kind.modes()
    server = "" if kind.name == DEFAULT_KIND else f" --server {kind.name}"
    now = [modes[name] for name in seen]
    rows = []
    for mode in modes.values():
        if mode.name in seen:
            continue
        alike = tuple(m.name for m in modes.values() if m.name != mode.name and m.mechanism == mode.mechanism)
        rows.append(
            ChangeView(
                mode.name,
                mode.mechanism,
                mode.summary,
                steps(mode, now, f"{kind.name}'s {' or '.join(seen)}"),
                f"accept-order run{server} -m {mode.name}",
                alike,
            )
        )
    return tuple(rows)
