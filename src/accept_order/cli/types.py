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

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s|m|h)?\s*$", re.ASCII)
_INT = re.compile(r"^\s*[+-]?[0-9]+\s*$")
_FLOAT = re.compile(r"^\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*$")


def parse_int(text: str) -> int:
    """A whole number in ASCII digits (`-3`, `42`); ValueError for anything else (`٣`, `1_000`, `1e3`)."""
    if not _INT.match(text):
        raise ValueError(f"{text!r} is not a valid integer")
    return int(text)


def parse_float(text: str) -> float:
    """A finite number in ASCII digits (`2`, `0.5`, `1e3`); ValueError for anything else (`٣`, `nan`, `inf`)."""
    if not _FLOAT.match(text) or not math.isfinite(float(text)):
        raise ValueError(f"{text!r} is not a valid number")
    return float(text)


_UNIT_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str, bare: str = "s", zero: bool = False) -> float:
    """`"10s"`, `"500ms"`, `"2m"`, `"1.5h"` -> seconds; a bare number (`"30"`) is in `bare`, the unit the
    option had before it took units (--timeout: s, --gap: ms). ValueError otherwise; 0 only with `zero`."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration such as 10s, 500ms or 2m")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2) or bare]
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
    """A duration with its unit (`2s`, `500ms`, `2m`, `200us`), in seconds. A bare number is in `bare`, the
    option's unit before it took units, so old command lines mean what they meant. `zero`: 0 is allowed
    (no work, no gap); `high`: the most, in seconds."""

    name = "DURATION"

    def __init__(self, bare: str = "s", zero: bool = False, low: float = 0.0, high: float | None = None) -> None:
        self.bare, self.zero, self.low, self.high = bare, zero, low, high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            seconds = parse_duration(str(value), self.bare, self.zero)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if seconds < self.low or (self.high is not None and seconds > self.high):
            most = f" to {format_duration(self.high)}" if self.high is not None else " or more"
            least = format_duration(self.low) if self.low else "0"
            self.fail(f"{value!r} is out of range: give {least}{most}", param, ctx)
        return seconds


class ModeList(click.ParamType):
    """Comma-separated modes (`all` for every one); unknown or repeated names are refused."""

    name = "MODES"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
        if isinstance(value, list):
            return value
        from ..servers.modes import parse_modes
        from ..servers.registry import all_mode_names

        text = str(value).strip()
        if text in ("all", "default"):
            return [text]  # every mode / the default mode of each server the command runs, resolved per server
        try:
            return parse_modes(text, known=all_mode_names())
        except PlanError as exc:
            self.fail(str(exc), param, ctx)


class Host(click.ParamType):
    """An address or a resolvable name; multicast and broadcast refused. The warning for an address
    others can reach is printed by the command (it is not an error)."""

    name = "HOST"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from ..core.spec import resolve_host

        try:
            address, warning = resolve_host(str(value))
        except PlanError as exc:
            self.fail(str(exc).removeprefix("--host "), param, ctx)
        if warning and ctx is not None:
            ctx.meta.setdefault("accept_order.warnings", []).append(warning)
        return address


class IntList(click.ParamType):
    """`1,4,32,0`: whole numbers within [low, high]. `several=False`: one of them (an int), parsed and
    refused with the same words (--accept-batch takes a list in sweep, one value elsewhere)."""

    def __init__(self, low: int, high: int, several: bool = True) -> None:
        self.low, self.high, self.several = low, high, several
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
MODE_LIST = ModeList()
HOST = Host()
SERVER_LIST = ServerList()
