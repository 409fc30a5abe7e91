"""A client host lost during a run ends every command alike (LoadError, exit 1, after the report and the file), in
one line that says what the file holds: per load where the host drove some in full.

The line said 'the report and FILE hold what the other hosts drove' of every mode, also where the host was lost in
one mode's load and reached again for the next: 'latency --modes epoll,reuseport --clients c1,c2' with c2 lost
while epoll ran said so of reuseport's too, which c2 drove its share of. Each load the command ran is judged on its
own (core/host_outcome.hosts_lost_in): those a lost host had no full share of hold what the others drove, the rest what
every host drove."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .output import RESULT_TO_STDOUT
from .served_nothing import Tally, end_if_nothing_served


def end_if_unmeasured(
    tallies: Sequence[Tally], result: Any, json_path: str | None, loads: Sequence[tuple[str, Any]] = ()
) -> None:
    """After the report and the file, the one end of every command that drives loads: NothingServed (exit 1) where
    a run of `tallies` served nothing (cli/served_nothing.py), naming the client hosts lost too; else LoadError
    (exit 1) where a client host was lost during the run (mid-load, or not reached again for a later load), in one
    line naming it and why, as every other runtime failure does. The run went on without it and its result stands,
    already saved and shown; but its figures are the other hosts' alone, which a script that reads exit 0 as
    'measured as asked' would not know. `loads`: each load the command ran, named as its report names it ('epoll',
    'accept-batch 1', 'the 400/s step'), so that the line says which of them the lost hosts drove in full (none
    given: one load, or the result as one). The result is walked once for both (core/host_outcome.hosts_lost_in):
    each command walked it for the served-nothing line, then again for its own."""
    from ..core.errors import LoadError

    said = hosts_lost_said(result, json_path, loads)
    end_if_nothing_served(tallies, said)
    if said is not None:
        raise LoadError(said)


def hosts_lost_said(result: Any, json_path: str | None, loads: Sequence[tuple[str, Any]] = ()) -> str | None:
    """The lost client hosts' line (None: no host lost), which the served-nothing line names too."""
    from ..core.host_outcome import hosts_lost_in

    lost, reported = hosts_lost_in(result, [load for _, load in loads])
    if not lost:
        return None
    if len(lost) == 1:
        [(name, why)] = lost.items()
        said = f"client host {name} was lost during the run: {why}"
    else:
        said = f"client hosts {', '.join(lost)} were lost during the run: " + "; ".join(
            f"{name}: {why}" for name, why in lost.items()
        )
    if json_path == RESULT_TO_STDOUT:
        kept = "the result on stdout holds"
    elif json_path:
        kept = f"the report and {json_path} hold"
    else:
        kept = "the report holds"
    return f"{said}; {kept} {held(set(lost), [name for name, _ in loads], reported)}"


def held(lost: set[str], names: Sequence[str], reported: Sequence[set[str]]) -> str:
    """What the loads (`names`, each with the hosts that `reported` it) hold with the `lost` hosts: the other hosts'
    driving, where a lost host had no full share of a load; every host's, in a load each of them drove to its end (a
    host lost in one mode, back for the next)."""
    from ..core.text import and_join

    whole = [name for name, hosts in zip(names, reported, strict=True) if lost <= hosts]
    short = [name for name, hosts in zip(names, reported, strict=True) if not lost <= hosts]
    if not whole or not short:
        return "what the other hosts drove"
    return f"what the other hosts drove in {and_join(short)}, and what every host drove in {and_join(whole)}"
