"""Before a command runs: is there room on disk for what it will write (--json, plot's --output)? The need is
estimated from the options the command was given, what it will record (results/room.py checks it)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ..experiments import EXPERIMENTS, Entry
from ..results.room import KIB, check_room
from .output import RESULT_TO_STDOUT

# A latency histogram keeps one count per distinct microsecond: its values are bounded, not its connections.
DISTINCT_LATENCIES = 250_000
# A closed loop for a time makes as many as the server answers: counted at a rate above what one machine's
# loopback reaches (26k/s on 2 CPUs here, 30-36k/s per driver process on 16), so a long run is not let start
# on a disk its histogram will not fit on (a 2 s closed loop here wrote 339 KB)
CLOSED_LOOP_RATE = 100_000
PER_RUN = 24 * KIB  # a run's settings, environment, counters and evidence: 4-24 KiB in the files above
PICTURE = 128 * KIB  # a drawn PNG or SVG: 37-62 KiB measured


def _servers(options: Mapping[str, Any]) -> list[str]:
    from ..core.spec import DEFAULT_KIND

    servers = options.get("server")
    if isinstance(servers, str):
        return [servers]
    return list(servers) if isinstance(servers, (list, tuple)) and servers else [DEFAULT_KIND]


def _entry(command: str) -> Entry | None:
    """The registry's line of the experiment `command` makes (each experiment says what its file keeps)."""
    return next((entry for entry in EXPERIMENTS.values() if entry.command == command), None)


def _variants(options: Mapping[str, Any]) -> int:
    """How many runs a round makes: each server x each mode asked for (all: each one the server has), or each
    --accept-batch cap of a sweep. An upper bound: modes this machine cannot run are skipped later."""
    from ..core.errors import PlanError
    from ..servers.registry import server_kind

    modes = options.get("modes") or options.get("modes_alias")
    caps = options.get("batches")  # sweep's --accept-batch list (elsewhere the option is one int, accept_batch)
    if isinstance(caps, (list, tuple)):
        return max(1, len(caps))
    if not isinstance(modes, (list, tuple)) or not modes:
        return len(_servers(options))  # several servers: each one's own (or the given) mode
    total = 0
    for name in _servers(options):
        try:
            known: Collection[str] = server_kind(name).modes()
        except PlanError:  # an unknown kind is refused by the command itself, with its own line
            known = ()
        if list(modes) == ["all"]:
            total += max(1, len(known))
        else:
            total += 1 if list(modes) == ["default"] else max(1, len([m for m in modes if m in known]))
    return max(1, total)


def _connections(latencies: bool, options: Mapping[str, Any]) -> int | None:
    """The connections one run makes, where the options say: -n, or an open loop's rate x duration."""
    from ..core.spec import DEFAULT_REQUESTS

    n = options.get("connections") or options.get("requests_alias")
    if isinstance(n, int):
        return n
    duration, rate = options.get("duration_s"), options.get("rate")
    if isinstance(duration, (int, float)) and isinstance(rate, (int, float)):
        return int(duration * rate)
    if latencies:
        return DEFAULT_REQUESTS if duration is None else int(duration * CLOSED_LOOP_RATE)
    return None


def result_need(command: str, options: Mapping[str, Any]) -> int:
    """About how many bytes `command`'s --json file could take, from its options."""
    runs = _variants(options) * max(1, int(options.get("repeat") or 1))
    entry = _entry(command)
    if entry is None or not entry.per_connection:
        return runs * PER_RUN
    n = _connections(entry.latencies, options) or 0
    if entry.latencies:
        n = min(n, DISTINCT_LATENCIES)
    return runs * (PER_RUN + entry.per_connection * n)


def _merged_need(options: Mapping[str, Any]) -> int:
    import os

    total = 0
    for path in options.get("paths") or ():
        try:
            total += os.stat(path).st_size
        except (OSError, TypeError, ValueError):
            pass  # merge says what is wrong with it
    return total + PER_RUN


def check_room_for(command: str, options: Mapping[str, Any]) -> None:
    """ResultFileError (one line, exit 1) before `command` runs when the filesystem of its --json file (plot:
    its --output) has less free space than it could need."""
    json_path = options.get("json_path")
    if isinstance(json_path, str) and json_path and json_path != RESULT_TO_STDOUT:  # a pipe holds no file
        need = _merged_need(options) if command == "merge" else result_need(command, options)
        check_room(json_path, need)
    output = options.get("output")
    if command == "plot" and isinstance(output, str) and output:
        check_room(output, PICTURE, option="--output", what="the picture")
