"""The table of a load's client hosts (--clients): what each drove, its clock and its timing; below it, one line
for each host that started late, ended well after the others, had a clock known too loosely, or was lost.

A load's merged figures stay where every report shows them; this says how the hosts shared them. The hosts'
destinations and the reasons a host was lost come from the user and from other machines: escaped, as Text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ..core.hosts import ClientHosts, HostOutcome
from ..core.protocol import ABORTED
from ..core.text import escape_controls
from ..core.totals import loops_ran
from ..loads.hosts.driven import STARTED_LATE_S

# A straggler: a host that ended more than STRAGGLER_SHARE of the run's wall time and more than STRAGGLER_S
# after the first host to end. Both: on a short run 10% is a few ms, below what ssh's scheduling and the
# report's own round trip decide; on a long one 50 ms is noise. Past both, the run's last part was driven by
# fewer hosts than the rest (its tail is partly theirs alone).
STRAGGLER_SHARE = 0.10
STRAGGLER_S = 0.05
# A clock known to ± more than CLOCK_SHARE of the run's wall time or more than CLOCK_S: the hosts' common
# start, and when each started and ended, are then uncertain by as much (each bound alone is reason enough:
# 1% of the wall time shifts the hosts' overlap by 1%; 5 ms is more than an open loop's stripes at 200/s).
CLOCK_SHARE = 0.01
CLOCK_S = 0.005
# ... but never below CLOCK_FLOOR_S: a clock read over a LAN to ± 0.1-0.2 ms is as good as ssh's round trips allow,
# and a burst of 20 ms (1%: 0.2 ms) would otherwise warn about every host, every time
CLOCK_FLOOR_S = 0.001
ON_TIME_S = 0.001  # a start within this (or within the clock's uncertainty) of its time is "on time"
# A slow host: its p99 at least SLOW_RATIO times every other host's, each over SLOW_MIN connections or more (its p99
# then stands on 10 of them at least). Where the hosts drove one server over the same window, a tail one host alone
# has is that host's or its path's (a busy host, a farther one), not the server's; it goes into the merged tail.
# Hosts that started or ended apart (a straggler's time) ran partly alone, against a shorter or longer queue: their
# p99s are not comparable, and a host's failed connections (a timeout) are its slowest, above what it served.
# And its share of connections that slow must stand above the other hosts' by more than chance puts there: a server's
# own rare delay (a SYN dropped and sent again a second later, to ~1% of connections) falls on each host at random,
# and a host's p99 then lands on either side of it by chance (SLOW_Z: a one-sided test of two proportions, 1 in 740).
SLOW_RATIO = 1.5
SLOW_MIN = 1000
SLOW_Z = 3.0


@dataclass(frozen=True)
class HostsPart:
    """The client hosts of one load: `label` names it among several (a burst's clients, a ramp's step, a
    mode; None: the only one), `wall_s` its wall time, `rate` an open loop's (host i was due i/rate after the
    common start: loads/hosts/split.py stripe_s), `stopped` whether a stop (Ctrl-C, SIGTERM) cut it short: its
    hosts' connections aborted then were under way at the stop, which the report says apart from failures."""

    label: str | None
    hosts: Sequence[HostOutcome]
    wall_s: float
    rate: float | None = None
    stopped: bool = False

    def due_s(self, index: int) -> float:
        return 0.0 if not self.rate else index / self.rate


NAMED_HOSTS = 4  # hosts a report's headline names; beyond, it counts them


def on_hosts(clients: ClientHosts | None) -> str:
    """What a report's headline adds to the load generator's processes when they ran on client hosts: ' on
    each of 2 client hosts (c1, c2)'; '' for a load driven from this host."""
    if clients is None or not clients.destinations:
        return ""
    dests = [escape_controls(d) for d in clients.destinations]
    named = ", ".join(dests[:NAMED_HOSTS]) + (", ..." if len(dests) > NAMED_HOSTS else "")
    n = len(dests)
    return f" on each of {n} client hosts ({named})" if n > 1 else f" on client host {named}"


def _name(host: HostOutcome) -> Text:
    return Text(escape_controls(host.destination))


def _failed(host: HostOutcome, stopped: bool) -> Text:
    """The host's failures by cause; in a load cut short by a stop, those it aborted are not failures (the
    report's own line: 'under way at the stop (aborted by it: neither failed nor served)'), said apart."""
    under_way = host.errors.get(ABORTED, 0) if stopped else 0
    errors = {name: n for name, n in host.errors.items() if n and not (stopped and name == ABORTED)}
    failed = sum(errors.values())
    text = Text("0")
    if failed:
        by = ", ".join(f"{n} {escape_controls(name)}" for name, n in sorted(errors.items(), key=lambda kv: -kv[1]))
        text = Text(f"{failed} ({by})", style="red")
    if under_way:
        text.append(f"; {under_way} under way", style="yellow")
    return text


def _clock(host: HostOutcome) -> str:
    if host.offset_s is None:
        return "-"
    spread = f" ± {1000 * host.uncertainty_s:.2f}" if host.uncertainty_s is not None else ""
    return f"{1000 * host.offset_s:+.2f}{spread} ms"


def late_s(part: HostsPart, index: int) -> float | None:
    """How long after its start time host `index` of `part` began (None: it did not say)."""
    host = part.hosts[index]
    due = host.due_s if host.due_s is not None else part.due_s(index)  # files before due_s: by its place
    return None if host.started_s is None else host.started_s - due


def _started(part: HostsPart, index: int) -> Text:
    late = late_s(part, index)
    if late is None:
        return Text("-")
    if late <= max(ON_TIME_S, part.hosts[index].uncertainty_s or 0.0):
        return Text("on time")
    return Text(f"{1000 * late:.1f} ms", style="yellow" if late > STARTED_LATE_S else "")


def _ended(host: HostOutcome) -> str:
    return "-" if host.ended_s is None else f"{host.ended_s:.3f}"


def host_table(parts: Sequence[HostsPart], part_name: str | None = None, title: str = "per client host") -> Table:
    """One row per host of each part (`part_name` heads the column naming the part, when there are several)."""
    lost = any(h.lost is not None for p in parts for h in p.hosts)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    if part_name is not None:
        table.add_column(part_name, justify="right")
    table.add_column("host")
    # which loop each host's drivers ran: each host decides for itself (files before 0.3 do not say)
    loops = any(loops_ran(h.drivers) for p in parts for h in p.hosts)
    for name in ("served", "failed", "req/s", "CPU µs/conn", *(["loop"] if loops else []), "clock offset"):
        table.add_column(name, justify="left" if name == "loop" else "right")
    for name in ("started late", "ended s"):
        table.add_column(name, justify="right")
    if lost:
        table.add_column("lost")
    for part in parts:
        for index, host in enumerate(part.hosts):
            cpu = host.client_cpu_us
            row: list[Text | str] = [Text(escape_controls(part.label or ""))] if part_name is not None else []
            row += [
                _name(host),
                str(host.ok),
                _failed(host, part.stopped),
                f"{host.throughput:.0f}",
                "-" if cpu is None else f"{cpu:.0f}",
                *([loops_ran(host.drivers) or "-"] if loops else []),
                _clock(host),
                _started(part, index),
                _ended(host),
            ]
            if lost:
                row.append(Text("" if host.lost is None else f"lost: {escape_controls(host.lost)}", style="red"))
            table.add_row(*row)
    return table


def _who(part: HostsPart, host: HostOutcome) -> str:
    name = escape_controls(host.destination)
    return name if part.label is None else f"{name} ({escape_controls(part.label)})"


def _stragglers(part: HostsPart) -> list[Text]:
    ended = [h for h in part.hosts if h.lost is None and h.ended_s is not None]
    if len(ended) < 2:
        return []
    first = min(ended, key=lambda h: h.ended_s or 0.0)
    bound = max(STRAGGLER_SHARE * part.wall_s, STRAGGLER_S)
    lines = []
    for host in ended:
        after = (host.ended_s or 0.0) - (first.ended_s or 0.0)
        if after > bound:
            lines.append(
                Text(
                    f"Straggler: {_who(part, host)} ended {1000 * after:.0f} ms after the first host to end "
                    f"({escape_controls(first.destination)}); the load's last {1000 * after:.0f} ms were driven "
                    "by fewer hosts",
                    style="yellow",
                )
            )
    return lines


def _tail_us(host: HostOutcome) -> float:
    """The host's p99 over every connection it finished, its failed ones (the stop's aborted left out) counted as
    its slowest: infinite where the 99th percentile falls among them."""
    served = host.histogram.count
    rank = math.ceil(0.99 * (served + sum(n for why, n in host.errors.items() if why != ABORTED)))
    return math.inf if rank > served else host.histogram.percentile(100 * (rank - 0.5) / served)


def _same_window(part: HostsPart, indices: Sequence[int]) -> bool:
    """Whether these hosts drove over the same window: none started or ended a straggler's time apart from the
    others (a window not said, as in older files, is taken as the same)."""
    ended = [part.hosts[i].ended_s for i in indices]
    late = [late_s(part, i) for i in indices]
    if any(e is None for e in ended) or any(lateness is None for lateness in late):
        return True
    bound = max(STRAGGLER_SHARE * part.wall_s, STRAGGLER_S)
    apart = max(e or 0.0 for e in ended) - min(e or 0.0 for e in ended)
    return apart <= bound and max(x or 0.0 for x in late) - min(x or 0.0 for x in late) <= bound


def _at_least(host: HostOutcome, us: float) -> tuple[int, int]:
    """(how many of the host's connections took `us` or more, its failed ones among them; how many it finished)."""
    failed = sum(n for why, n in host.errors.items() if why != ABORTED)
    slow = sum(n for value, n in host.histogram.to_dict()["counts"] if value >= us)
    return slow + failed, host.histogram.count + failed


def _beyond_chance(mine: tuple[int, int], theirs: tuple[int, int]) -> bool:
    (k1, n1), (k2, n2) = mine, theirs
    pooled = (k1 + k2) / (n1 + n2)
    spread = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return spread > 0 and (k1 / n1 - k2 / n2) / spread >= SLOW_Z


def _slow(part: HostsPart) -> list[Text]:
    p99 = {i: _tail_us(h) for i, h in enumerate(part.hosts) if h.histogram.count >= SLOW_MIN and h.lost is None}
    if len(p99) < 2 or not _same_window(part, list(p99)) or math.inf in p99.values():
        return []
    lines = []
    for index, mine in p99.items():
        others = {i: us for i, us in p99.items() if i != index}
        worst = max(others, key=lambda i: others[i])
        bound = SLOW_RATIO * max(others[worst], 1)
        if mine < bound:
            continue
        (k1, n1), theirs = _at_least(part.hosts[index], bound), [_at_least(part.hosts[i], bound) for i in others]
        k2, n2 = sum(k for k, _ in theirs), sum(n for _, n in theirs)
        if _beyond_chance((k1, n1), (k2, n2)):
            lines.append(
                Text(
                    f"Slow host: {_who(part, part.hosts[index])}'s p99 was {mine / 1000:.2f} ms, "
                    f"{mine / max(others[worst], 1):.1f} times the other hosts' highest ({others[worst] / 1000:.2f} "
                    f"ms, {escape_controls(part.hosts[worst].destination)}); {k1:,} of its {n1:,} connections took "
                    f"{bound / 1000:.2f} ms or more, {k2:,} of the others' {n2:,}: against one server over the same "
                    "window, that tail is the host's own or its path's (a busier host, a farther one; over kept "
                    "connections, perhaps the workers that held its connections), and it is in the merged percentiles",
                    style="yellow",
                )
            )
    return lines


def host_notes(part: HostsPart) -> list[Text]:
    """What to say of one load's hosts beyond the table: each only where it applies."""
    lines = []
    for index, host in enumerate(part.hosts):
        late = late_s(part, index)
        if late is not None and late > STARTED_LATE_S and host.lost is None:
            lines.append(
                Text(f"Warning: {_who(part, host)} started {1000 * late:.0f} ms after its start time", style="yellow")
            )
    lines += _stragglers(part) + _slow(part)
    tolerated = max(CLOCK_FLOOR_S, min(CLOCK_SHARE * part.wall_s, CLOCK_S) if part.wall_s > 0 else CLOCK_S)
    for host in part.hosts:
        if host.uncertainty_s is not None and host.uncertainty_s > tolerated:
            lines.append(
                Text(
                    f"Warning: {_who(part, host)}'s clock is known to ± {1000 * host.uncertainty_s:.1f} ms only "
                    f"(its quickest round trip's half), more than this run tolerates ({1000 * tolerated:.1f} ms): "
                    "when it started and ended are as uncertain",
                    style="yellow",
                )
            )
    for host in part.hosts:
        if host.lost is not None:
            done = f"; {host.driven} of its connections are in the figures" if host.driven else ""
            done = done or "; none of its connections are in the figures"
            lines.append(Text(f"Lost: {_who(part, host)}: {escape_controls(host.lost)}{done}", style="red"))
    return lines


def host_parts(
    parts: Sequence[HostsPart], part_name: str | None = None, title: str = "per client host"
) -> list[RenderableType]:
    """The table and its lines for the loads that ran on client hosts (nothing for those that did not)."""
    parts = [p for p in parts if p.hosts]
    if not parts:
        return []
    lines: list[RenderableType] = [host_table(parts, part_name, title)]
    for part in parts:
        lines += host_notes(part)
    return lines
