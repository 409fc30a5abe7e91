"""`observe`'s report (the whole observation), its live view (the result so far, every interval) and the
plain line per interval printed where there is no terminal. Everything fits 80 columns."""

from __future__ import annotations

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ...render.text import plural
from ..inspect.cure_rows import cure_table, kind_named, kind_of
from .load_verdict import load_uneven
from .result import ObservedWorker, ObserveInterval, ObserveResult
from .verdict import through_io_uring, verdict

BAR = 16  # characters of the share bar
PLAIN_WIDTH = 80


def bar(share: float, width: int = BAR) -> str:
    filled = round(max(0.0, min(1.0, share)) * width)
    return "█" * filled + "░" * (width - filled)


def _who(result: ObserveResult) -> str:
    """`nginx, master 6877, port 8080, 3 workers`, and the pid asked about when it is none of those."""
    ports = ", ".join(map(str, result.ports))
    master = f", master {result.master}" if result.master is not None else ""
    units = plural(len(result.workers), "thread" if result.threaded else "worker")
    asked = result.target.removeprefix("pid ")
    known = {str(result.master), *(str(w.pid) for w in result.workers), *(str(w.tid) for w in result.workers)}
    found = f" (found from pid {asked})" if result.target.startswith("pid ") and asked not in known else ""
    return f"{result.name}{master}, port {ports}, {units}{found}"


def _counted(result: ObserveResult) -> list[int]:
    counts = result.counts
    return list(counts) if counts is not None else [0] * len(result.workers)


def _worker_cell(result: ObserveResult, worker: ObservedWorker) -> str:
    gone = " gone" if worker.exited_s is not None else ""
    return f"{worker.index}{gone}"


def _cpu_share(result: ObserveResult, worker: ObservedWorker) -> float | None:
    """The CPU it used while observed, as a share of one CPU (its CPU time over the time it was observed)."""
    span = worker.exited_s if worker.exited_s is not None else result.wall_s
    return None if worker.cpu_s is None or not span else worker.cpu_s / span


def _table(result: ObserveResult, live: bool, without: frozenset[str] = frozenset()) -> Table:
    """One row per worker: its share (bar and percent), connections (total, or per second when live),
    empty accepts, and %CPU: the CPU it used as a share of one CPU, as ps and top say it (over the last
    interval when live, over the whole observation in the report; the total can pass 100%). Live, with
    the load read: the connections each holds and its share of the last interval's bytes in, beside a
    shorter bar (80 columns). `without`: the headers of columns left out (a narrow terminal: _FittedTable)."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, show_footer=not live)
    loaded = live and result.loaded
    counts = _counted(result)
    total = sum(counts)
    last = result.intervals[-1] if result.intervals else None
    span = result.wall_s or 0.0
    what = "accepts" if result.traced else "seen~"
    headers = ["worker", "tid" if result.threaded else "pid", what, "share", "", "/s", "empty", "%CPU"]
    headers += ["held", "in"] if loaded else []
    per_s_total = (last.rate() if live and last else (total / span if span else 0.0)) if counts else 0.0
    rates = [_per_s(result, index, last if live else None) for index in range(len(result.workers))]
    places = _rate_places([*rates, per_s_total])
    used = [_cpu_share(result, worker) for worker in result.workers]
    cpu_total = f"{sum(u or 0.0 for u in used):.0%}" if any(u is not None for u in used) else "-"
    footers = ["total", "", f"{total:,}", "", "", _rate(per_s_total, places), _opt_sum(result), cpu_total]
    footers += ["", ""] if loaded else []
    held, moved = _live_load(result) if loaded else ([], [])
    kept = [index for index, header in enumerate(headers) if header not in without]
    for header, footer in zip(headers, footers, strict=True):
        if header not in without:
            table.add_column(
                header, footer=footer, justify="left" if header in ("worker", "") else "right", no_wrap=True
            )
    for index, worker in enumerate(result.workers):
        share = counts[index] / total if total else 0.0
        if live and last is not None:
            cpu = f"{last.cpu[index]:.0%}"
        else:
            cpu = "-" if used[index] is None else f"{used[index]:.0%}"
        cells = (
            _worker_cell(result, worker),
            str(worker.tid if worker.tid is not None else worker.pid),
            f"{counts[index]:,}" if result.counts is not None else "-",
            f"{share:.1%}" if total else "-",
            bar(share, BAR // 2 if loaded else BAR),
            _rate(rates[index], places) if result.counts is not None else "-",
            "-" if worker.empty is None else f"{worker.empty:,}",
            cpu,
            *([held[index], moved[index]] if loaded else []),
        )
        table.add_row(*(cells[i] for i in kept))
    return table


# Left out of the live table, in this order, where the terminal is too narrow for it: rich cuts every column
# to fit, and at 60 columns '1,085' read '1,0…' and a pid '293…' (at 40, '1…'); a number is never cut.
_NARROW_DROPS = ("", "pid", "tid", "empty", "in", "held", "%CPU", "share")


class _FittedTable:
    """The live table with as many columns as the terminal's width shows whole."""

    def __init__(self, result: ObserveResult) -> None:
        self.result = result

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        without: frozenset[str] = frozenset()
        table = _table(self.result, live=True)
        for header in _NARROW_DROPS:
            # measured unbounded: a measurement within the terminal's width is clamped to it
            if Measurement.get(console, options.update_width(10_000), table).maximum <= options.max_width:
                break
            without |= {header}
            table = _table(self.result, live=True, without=without)
        yield table


def _per_s(result: ObserveResult, index: int, last: ObserveInterval | None) -> float:
    """A worker's connections per second: over the last interval (live), else over the whole observation."""
    if last is not None:
        return last.accepts[index] / last.span_s if last.span_s else 0.0
    counts, span = _counted(result), result.wall_s or 0.0
    return counts[index] / span if span else 0.0


def _rate_places(rates: list[float]) -> int:
    """Decimals for the /s column, the same for every row and the total: enough that the slowest rate above 0
    does not read 0 (a Node cluster's 0.4/s per worker read 0 on each row beside a total of 1), at most 2."""
    slowest = min((r for r in rates if r > 0), default=10.0)
    return 0 if slowest >= 10 else 1 if slowest >= 1 else 2


def _rate(per_s: float, places: int) -> str:
    if 0 < per_s < 0.005:  # still under the last decimal: said as such, not as 0
        return "<0.01"
    return f"{per_s:,.{places}f}"


def _live_load(result: ObserveResult) -> tuple[list[str], list[str]]:
    """Per worker: connections held and share of the bytes in, at the last interval that sampled them
    (the whole observation's until one has)."""
    last = next((i for i in reversed(result.intervals) if i.held), None)
    if last is None:
        held = [w.connections_held or 0 for w in result.workers]
        moved = [w.bytes_in or 0 for w in result.workers]
    else:
        held, moved = list(last.held), list(last.bytes_in)
    total = sum(moved)
    return [f"{h:,}" for h in held], [f"{m / total:.0%}" if total else "-" for m in moved]


def _size(count: int) -> str:
    """Bytes in a few characters: 812 B, 40.1 kB, 3.2 MB (decimal units, as ss and nginx's logs count)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def load_table(result: ObserveResult) -> Table:
    """One row per worker: the connections it holds (at the end, at most, seen in all) and what they
    carried while observed, each with its share."""
    table = Table(
        title="Load: the connections each worker holds and what they carried",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        show_footer=True,
    )
    workers = result.workers
    held = [w.connections_held or 0 for w in workers]
    seen = [w.connections_observed or 0 for w in workers]
    received = [w.bytes_in or 0 for w in workers]
    sent = [w.bytes_out or 0 for w in workers]
    segments = [w.segments_in or 0 for w in workers]

    def share(values: list[int], index: int) -> str:
        return f"{values[index] / sum(values):.0%}" if sum(values) else "-"

    columns = [
        ("worker", "total"),
        ("held", f"{sum(held):,}"),
        ("peak", ""),
        ("seen", f"{sum(seen):,}"),
        ("bytes in", _size(sum(received))),
        ("share", ""),
        ("bytes out", _size(sum(sent))),
        ("share ", ""),
        ("segs in", f"{sum(segments):,}"),
    ]
    for header, footer in columns:
        table.add_column(header, footer=footer, justify="left" if header == "worker" else "right", no_wrap=True)
    for index, worker in enumerate(workers):
        table.add_row(
            _worker_cell(result, worker),
            f"{held[index]:,}",
            f"{worker.connections_held_peak or 0:,}",
            f"{seen[index]:,}",
            _size(received[index]),
            share(received, index),
            _size(sent[index]),
            share(sent, index),
            f"{segments[index]:,}",
        )
    return table


def _opt_sum(result: ObserveResult) -> str:
    empty = [w.empty for w in result.workers]
    return "-" if any(e is None for e in empty) else f"{sum(e or 0 for e in empty):,}"


def observe_report(result: ObserveResult) -> RenderableType:
    parts: list[RenderableType] = [Text(f"accept-order observe: {_who(result)}", style="bold")]
    how_long = (
        f"interrupted after {result.wall_s:.1f} s of {result.duration_s:g} s"
        if result.interrupted
        else (f"observed {result.wall_s:.1f} s")
    )
    parts.append(Text(f"{how_long}; observe itself drove no traffic at it and sent it no signal"))
    parts.append(_table(result, live=False))
    if result.loaded:
        parts.append(load_table(result))
    lines = verdict(result)
    parts.append(Text(lines[0] + ".", style="bold"))
    parts += [Text(line) for line in lines[1:]]
    if load_uneven(result):
        seen = result.mechanism.modes if result.mechanism is not None else ()
        heading = f"What changes how the load of long-lived connections splits ({result.name})"
        parts += cure_table(kind_named(result.recognised) or kind_of(result.program), seen, heading)
    exact = "exact" if result.traced else "approximate"
    missed = "; blind to accepts made through io_uring, as this server's are" if through_io_uring(result) else ""
    parts.append(Text(f"{exact}: {result.source}{missed}", style="dim"))
    env = result.environment
    if env is not None:
        parts.append(Text(f"{env.system} {env.kernel}, {plural(env.cpu_count, 'CPU')}, {env.hostname}", style="dim"))
    parts += [Text(f"note: {note}", style="yellow") for note in result.notes]
    return Group(*parts)


def live_view(result: ObserveResult) -> RenderableType:
    """The result so far: two heading lines and one line per worker with its share and last interval's rate."""
    last = result.intervals[-1] if result.intervals else None
    rate = "starting"
    if last is not None and result.counts is not None:
        # the rows' decimals: a whole number read '2 connections/s' above rows of 0.88 and 0.88 (0 under 0.5/s)
        rows = [_per_s(result, index, last) for index in range(len(result.workers))]
        rate = f"{_rate(last.rate(), _rate_places([*rows, last.rate()]))} connections/s"
    queue = "-" if result.queue_max is None else f"{result.queue_max:,}"
    overflows = result.counters.get("TcpExtListenOverflows", 0)
    approx = ", sampled (approximate)" if not result.traced else ""
    return Group(
        Text(f"observing {_who(result)} (Ctrl-C ends)"),
        Text(
            f"{result.wall_s:.0f} s of {result.duration_s:g} s: {rate}{approx}; max queue {queue}; "
            f"overflows {overflows:,}"
        ),
        _FittedTable(result),
    )


def interval_line(result: ObserveResult, width: int = PLAIN_WIDTH) -> str:
    """One plain line for the last interval (no terminal): time, connections per second, queue, shares."""
    last = result.intervals[-1] if result.intervals else None
    if last is None:
        said = f"observing {_who(result)}"
        if not result.traced:  # the longest that fits, never cut mid-word
            fits = [a for a in (" (approximate: not traced)", " (not traced)") if len(said) + len(a) <= width]
            said += fits[0] if fits else ""
        return said[:width]
    counts = last.accepts
    total = sum(counts)
    queue = "-" if last.queue_max is None else str(last.queue_max)  # (every interval samples it: never -)
    line = f"{last.end_s:6.1f}s {_rate(last.rate(), _rate_places([last.rate()])):>8}/s  max queue {queue:<4}"
    shares = [f"{100 * c / total:.0f}%" if total else "-" for c in counts]
    for index, share in enumerate(shares):
        more = f" +{len(shares) - index} more"
        word = f" {index}:{share}"
        if len(line) + len(word) + (len(more) if index < len(shares) - 1 else 0) > width:
            return line + more
        line += word
    held = f"  held {'/'.join(map(str, last.held))}" if last.held else ""  # open connections per worker
    return line + held if len(line) + len(held) <= width else line
