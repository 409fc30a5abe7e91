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

from ..cpus import parse_cpu_list
from ..errors import PlanError
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


_UNIT_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """`"10s"`, `"500ms"`, `"2m"`, `"1.5h"`, `"30"` (seconds) -> seconds. ValueError otherwise."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration such as 10s, 500ms or 2m")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if not seconds > 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


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
    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


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
        from ..spec import resolve_host

        try:
            address, warning = resolve_host(str(value))
        except PlanError as exc:
            self.fail(str(exc).removeprefix("--host "), param, ctx)
        if warning and ctx is not None:
            ctx.meta.setdefault("accept_order.warnings", []).append(warning)
        return address


class IntList(click.ParamType):
    """`1,4,32,0`: whole numbers within [low, high]."""

    name = "N,N,..."

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[int]:
        if isinstance(value, list):
            return value
        try:
            values = [parse_int(v) for v in str(value).split(",") if v.strip()]
        except ValueError:
            self.fail(f"{value!r} is not a list of whole numbers such as 1,4,32,0", param, ctx)
        if not values or any(not self.low <= v <= self.high for v in values):
            self.fail(f"{value!r}: every value must be between {self.low} and {self.high}", param, ctx)
        return values


class ServerList(click.ParamType):
    """`builtin`, `nginx`, or several: `builtin,nginx` (one table, the same settings)."""

    name = "SERVERS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
        if isinstance(value, list):
            return value
        names = [s.strip() for s in str(value).split(",") if s.strip()]
        unknown = [s for s in names if s not in launched_kinds()]
        if unknown or not names or len(set(names)) != len(names):
            self.fail(f"{value!r}: give one or more of {', '.join(launched_kinds())}, each once", param, ctx)
        return names


CPUS = CpuList()
DURATION = Duration()
MODE_LIST = ModeList()
HOST = Host()
SERVER_LIST = ServerList()
