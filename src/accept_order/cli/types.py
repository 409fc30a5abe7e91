"""click parameter types for the values accept-order takes: numbers, CPU lists, durations, mode lists, hosts.

Each converts once and reports a bad value as a usage error naming the option the user typed. A number
is written in ASCII digits only: Python's int() and float() also take other scripts' digits (`-p ٣` would
bind port 3), which nobody types on purpose.
"""

from __future__ import annotations

import math
import re
from typing import Any

import click

from ..core.cpus import parse_cpu_list
from ..core.errors import PlanError
from ..servers.registry import launched_kinds

# Patterns, not compiled ones: re compiles (and caches) each where an option first parses a value, so that a
# command that parses none (--help) does not pay for them at start-up.
_DURATION = r"(?a)^\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s|m|h)?\s*$"
_INT = r"^\s*[+-]?[0-9]+\s*$"
_FLOAT = r"^\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*$"


def parse_int(text: str) -> int:
    """A whole number in ASCII digits (`-3`, `42`); ValueError for anything else (`٣`, `1_000`, `1e3`)."""
    if not re.match(_INT, text):
        raise ValueError(f"{text!r} is not a valid integer")
    return int(text)


def parse_float(text: str) -> float:
    """A finite number in ASCII digits (`2`, `0.5`, `1e3`); ValueError for anything else (`٣`, `nan`, `inf`)."""
    if not re.match(_FLOAT, text) or not math.isfinite(float(text)):
        raise ValueError(f"{text!r} is not a valid number")
    return float(text)


_UNIT_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _plain_duration(text: str) -> tuple[str, str | None] | None:
    """(number, unit) of a duration spelled as ASCII digits and at most a unit (`0`, `500ms`, `5s`: every default
    a run converts), as _DURATION reads it; None for any other spelling, left to the pattern (compiling it cost
    every run ~0.3 ms)."""
    for unit in ("us", "µs", "ms", "s", "m", "h", None):  # what is left must be digits: one unit fits at most
        number = text[: -len(unit)] if unit else text
        if (unit is None or text.endswith(unit)) and number.isascii() and number.isdigit():
            return number, unit
    return None


def parse_duration(text: str, bare: str | None = None, zero: bool = False, was: str = "s") -> float:
    """`"10s"`, `"500ms"`, `"2m"`, `"1.5h"` -> seconds. A number needs its unit (one rule for every
    duration: a bare `50` was ms for --gap and --work but s for --timeout and --duration), except 0 where 0
    is allowed; the refusal names the unit to add (`was`: what a bare number meant there before). `bare`: the
    unit an old spelling names (--gap-ms, --work-us), which takes a bare number in it. ValueError otherwise."""
    plain = _plain_duration(text)
    if plain is None:
        match = re.match(_DURATION, text)
        if not match:
            raise ValueError(f"{text!r} is not a duration such as 10s, 500ms or 2m")
        plain = match.group(1), match.group(2)
    number, unit = plain[0], plain[1] or bare
    if unit is None and float(number) != 0:
        raise ValueError(f"{text!r} needs a unit: write {number}{was} for what it used to mean")
    seconds = float(number) * _UNIT_S[unit or "s"]
    if not (seconds >= 0 if zero else seconds > 0):
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest of `2s`, `500ms`, `200us` that says `seconds` exactly (help texts, range errors)."""
    for unit in ("h", "m", "s", "ms", "us"):
        value = seconds / _UNIT_S[unit]
        if value >= 1 and abs(value - round(value, 3)) < 1e-9:
            return f"{round(value, 3):g}{unit}"
    return f"{seconds:g}s"


class IntRange(click.IntRange):
    """click's IntRange, for whole numbers in ASCII digits only."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                value = parse_int(value)
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        return super().convert(value, param, ctx)


class FloatRange(click.FloatRange):
    """click's FloatRange, for finite numbers in ASCII digits only (click's lets `nan` through any range)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                value = parse_float(value)
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        return super().convert(value, param, ctx)


class CpuList(click.ParamType):
    name = "CPUS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        try:
            return tuple(parse_cpu_list(str(value)))
        except ValueError as exc:
            self.fail(f"{value!r} is not a CPU list such as 0-1 or 0,2 ({exc})", param, ctx)


class Duration(click.ParamType):
    """A duration with its unit (`2s`, `500ms`, `2m`, `200us`), in seconds; a bare number is refused naming
    the unit to add (`was`: what it meant before units), or, for an old spelling that names its unit
    (--gap-ms), read in `bare`. `zero`: 0 is allowed (no work, no gap); `high`: the most, in seconds."""

    name = "DURATION"

    def __init__(
        self, bare: str | None = None, zero: bool = False, low: float = 0.0, high: float | None = None, was: str = "s"
    ) -> None:
        self.bare, self.zero, self.low, self.high, self.was = bare, zero, low, high, was

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            seconds = parse_duration(str(value), self.bare, self.zero, self.was)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if seconds < self.low or (self.high is not None and seconds > self.high):
            most = f" to {format_duration(self.high)}" if self.high is not None else " or more"
            least = format_duration(self.low) if self.low else "0"
            self.fail(f"{value!r} is out of range: give {least}{most}", param, ctx)
        return seconds


PENDING_MODES = "accept_order.pending_modes"  # ctx.meta: modes judged once --server is read (judge_pending_modes)


def _folded(name: str) -> str:
    return name.strip().casefold().replace("_", "-")


def canonical_mode(name: str) -> str:
    """A mode in its own spelling whatever the case, `_` for `-` (`EPOLL`: epoll, `io_uring`: io-uring); a
    name no server has, as given."""
    from ..servers.registry import all_mode_names, some_kind_has

    if some_kind_has(folded := _folded(name)):  # every mode's name is its own folding (tests/test_startup_kinds.py)
        return folded
    return {_folded(known): known for known in all_mode_names()}.get(folded, name.strip())


def chosen_kinds(ctx: click.Context | None) -> list[str] | None:
    """The server kinds the command line names (the default one where it names none); None while --server
    is still to be read (click reads options in the order they were typed)."""
    from ..servers.registry import DEFAULT_KIND

    if ctx is None or not any(p.name == "server" for p in ctx.command.params):
        return [DEFAULT_KIND]
    if "server" not in ctx.params:
        return None
    return kinds_of(ctx.params["server"])


def kinds_of(server: Any) -> list[str]:
    """--server's value as kinds: one, several, or (none given where no default: atlas) every kind."""
    if server is None:
        return launched_kinds()
    return [server] if isinstance(server, str) else list(server)


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def unknown_modes(unknown: list[str], kinds: list[str], several: bool) -> str:
    """Names no server has: what the chosen kinds have, and the nearest (a typo, another server's mode)."""
    import difflib  # here: only a name that is not a mode needs it

    from ..servers.registry import KINDS

    own = list(dict.fromkeys(mode for kind in kinds for mode in KINDS[kind].modes()))
    others = {mode: kind for kind in launched_kinds() for mode in KINDS[kind].modes() if mode not in own}
    guesses = []
    for name in unknown:
        near = difflib.get_close_matches(_folded(name), own, n=1, cutoff=0.6)
        elsewhere = difflib.get_close_matches(_folded(name), list(others), n=1, cutoff=0.6)
        if near:
            guesses.append(repr(near[0]))
        elif elsewhere:
            guesses.append(f"{elsewhere[0]!r} (--server {others[elsewhere[0]]})")
        else:
            continue
        if len(unknown) > 1:
            guesses[-1] += f" for {name!r}"
    names = ", ".join(repr(name) for name in unknown)
    verb = "is not a mode" if len(unknown) == 1 else "are not modes"
    whose = "Its" if len(kinds) == 1 else "Their"
    listed = ", ".join(own) + (", or all" if several else "")
    said = f"{names} {verb} of {_or(kinds)}" + (f"; did you mean {', '.join(guesses)}?" if guesses else ".")
    return f"{said} {whose} modes: {listed}"


def _judged(names: list[str], several: bool, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
    """`names` in their own spelling; one no server has is refused, naming the modes of the chosen server
    (now, or once --server is read: judge_pending_modes)."""
    from ..servers.registry import some_kind_has

    names = [canonical_mode(name) for name in names]
    unknown = [name for name in names if not some_kind_has(name)]
    if unknown:
        kinds = chosen_kinds(ctx)
        if kinds is None:
            assert ctx is not None
            ctx.meta.setdefault(PENDING_MODES, []).append((param, unknown, several))
        else:
            raise click.BadParameter(unknown_modes(unknown, kinds, several), ctx, param)
    return names


def judge_pending_modes(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """--server's callback: a mode typed before it, that no server has, is refused now that the kinds are
    known."""
    pending = ctx.meta.pop(PENDING_MODES, [])
    if pending and not ctx.resilient_parsing:
        mode_param, unknown, several = pending[0]
        raise click.BadParameter(unknown_modes(unknown, kinds_of(value), several), ctx, mode_param)
    return value


class ModeName(click.ParamType):
    """One mode of the server --server names (checked against that server's own modes when the run is
    planned); case and `_` for `-` do not matter. One no server has is refused with the chosen server's
    modes and the nearest (`epol`: did you mean 'epoll'?)."""

    name = "MODE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return _judged([str(value)], False, param, ctx)[0]

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        from ..servers.registry import all_mode_names

        return [CompletionItem(name) for name in all_mode_names() if name.startswith(incomplete)]


class ModeList(click.ParamType):
    """Comma-separated modes (`all` for every one); unknown or repeated names are refused (see ModeName)."""

    name = "MODES"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
        if isinstance(value, list):
            return value
        text = str(value).strip()
        if text in ("all", "default"):
            return [text]  # every mode / the default mode of each server the command runs, resolved per server
        names = [m.strip() for m in text.split(",") if m.strip()]
        if not names:
            self.fail(f"{value!r} names no mode: give one or more, comma-separated, or all", param, ctx)
        names = _judged(names, True, param, ctx)
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            self.fail(f"mode(s) given more than once: {', '.join(repeated)}", param, ctx)
        return names


class Host(click.ParamType):
    """An address or a resolvable name; multicast and broadcast refused. The warning for an address
    others can reach is printed by the command (it is not an error)."""

    name = "HOST"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from ..core.addresses import resolve_host

        try:
            address, warning = resolve_host(str(value))
        except PlanError as exc:
            self.fail(str(exc).removeprefix("--host "), param, ctx)
        if warning and ctx is not None:
            ctx.meta.setdefault("accept_order.warnings", []).append(warning)
        return address


class IntList(click.ParamType):
    """`1,4,32,0`: whole numbers within [low, high], each once (`once`). `several=False`: one of them (an int),
    parsed and refused with the same words (--accept-batch takes a list in sweep, one value elsewhere)."""

    def __init__(self, low: int, high: int, several: bool = True, once: bool = True) -> None:
        self.low, self.high, self.several, self.once = low, high, several, once
        self.name = "N,N,..." if several else "N"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, list if self.several else int):
            return value
        one = "" if self.several else " (one value here)"
        try:
            values = [parse_int(v) for v in str(value).split(",") if v.strip()]
        except ValueError:
            self.fail(f"{value!r} is not a list of whole numbers such as 1,4,32,0{one}", param, ctx)
        if not values or any(not self.low <= v <= self.high for v in values):
            self.fail(f"{value!r}: every value must be between {self.low} and {self.high}", param, ctx)
        if not self.several:
            if len(values) > 1:
                command = f"{ctx.info_name} takes" if ctx is not None else "give"
                self.fail(f"{value!r}: {command} one value (sweep takes a list)", param, ctx)
            return values[0]
        # one run per value: a value twice ran twice under one name (sweep's '1 limit' beside '1 limit', judged
        # against itself) or was dropped without a word (burst's sizes), where --modes refuses a mode given twice
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated and self.once:  # once=False: the command says more (ramp's steps must rise)
            self.fail(f"{value!r}: value(s) given more than once: {', '.join(map(str, repeated))}", param, ctx)
        return values


class ServerList(click.ParamType):
    """`builtin`, `nginx`, or several: `builtin,nginx` (one table, the same settings). `several=False`: one
    (a str), refused with the same words. `kinds`: the ones the command runs (default: every kind)."""

    def __init__(self, several: bool = True, kinds: tuple[str, ...] | None = None) -> None:
        self.several, self.kinds = several, kinds
        self.name = "SERVERS" if several else "SERVER"

    def known(self) -> tuple[str, ...]:
        return self.kinds if self.kinds is not None else tuple(launched_kinds())

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, list if self.several else str) and (self.several or value in self.known()):
            return value
        names = [s.strip() for s in str(value).split(",") if s.strip()]
        unknown = [s for s in names if s not in self.known()]
        command = ctx.info_name if ctx is not None else "this command"
        if len(self.known()) == 1 and (unknown or len(names) != 1):
            self.fail(f"{value!r}: {command} runs {self.known()[0]} only", param, ctx)
        if unknown or not names or len(set(names)) != len(names):
            some = "one or more of" if self.several else "one of"
            self.fail(f"{value!r}: give {some} {', '.join(self.known())}{', each once' * self.several}", param, ctx)
        if not self.several and len(names) > 1:
            self.fail(
                f"{value!r}: {command} runs one server at a time (compare, latency, burst take several)", param, ctx
            )
        if not self.several:
            return names[0]
        return names


class AliasOption(click.Option):
    """An option with old or other spellings that are accepted but not shown (`--servers` beside
    `--server`): help and error messages name only the shown ones."""

    def __init__(self, *args: Any, hidden_names: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_names = hidden_names

    def _shown(self) -> list[str]:
        return [name for name in self.opts if name not in self.hidden_names]

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        opts = self.opts
        self.opts = self._shown()
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = opts

    def get_error_hint(self, ctx: click.Context | None) -> str:
        return " / ".join(f"'{name}'" for name in self._shown())


CPUS = CpuList()
DURATION = Duration()
MODE = ModeName()
MODE_LIST = ModeList()
HOST = Host()
SERVER_LIST = ServerList()
