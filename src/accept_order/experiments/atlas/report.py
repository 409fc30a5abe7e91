"""The atlas table: one line per server and mode (the median over rounds when repeated), then what selects
each mode, and what did not run."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...render.text import plural
from .result import AtlasResult, AtlasRow

# A short name per order pattern, for an 80-column table (the full pattern is in the JSON and the CSV)
SHORT = {
    "rotation": "rotation",
    "one worker takes all": "one takes all",
    "round-robin": "round-robin",
    "most-recent-waiter": "LIFO",
    "the lock holder keeps them": "lock holder keeps",
    "no clear order": "no clear order",
    "lowest idle index": "lowest index",
    "hash-spread, more uneven": "uneven hash",
    "the client's CPU picks": "client's CPU",
    "no order beyond chance": "no order",
}


def _short(pattern: str | None) -> str:
    if pattern is None:
        return "-"
    if pattern.startswith("an order like "):  # seen, not the mechanism's: "like FIFO", "like runs of 2"
        return "like " + _short(pattern.removeprefix("an order like ").split(" (")[0])
    if pattern.startswith("runs of"):  # "runs of 16 per worker": the length is what a reader needs
        return pattern.split(" (")[0]
    if pattern.startswith("one per worker at start"):  # nginx's start-up, then the runs seen
        _, then, rest = pattern.split(" (")[0].partition(",")
        return "1 each" + then + rest.removesuffix(" per worker")
    if pattern.startswith("one each to "):  # "one each to 2 of the 3 workers": fewer connections than workers
        some, _, workers = pattern.removeprefix("one each to ").partition(" of the ")
        return f"1 each to {some} of {workers.split()[0]}"
    for prefix, short in SHORT.items():
        if pattern.startswith(prefix):
            return short
    return pattern.split(" (")[0]


def median_known(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _order(rows: Sequence[AtlasRow]) -> Text:
    patterns = Counter(_short(r.order) for r in rows)
    (common, count), *_ = patterns.most_common(1) or [("-", 0)]
    text = Text(common if len(rows) == 1 else f"{common} {count}/{len(rows)}")
    if any(r.expected is False for r in rows):
        text.append(" !", style="yellow")  # not what the mode's mechanism predicts
    return text


def _seen(mechanism: str, mode: str) -> str:
    return "=" if mechanism == mode else mechanism  # the built-in modes are named for their mechanism


def by_server_and_mode(result: AtlasResult) -> list[list[AtlasRow]]:
    groups: dict[tuple[str, str], list[AtlasRow]] = {}
    for row in result.rows:
        groups.setdefault((row.server, row.mode), []).append(row)
    return list(groups.values())


def atlas_table(result: AtlasResult) -> Table:
    table = Table(
        title="accept-order atlas", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    groups = by_server_and_mode(result)
    woken = any(r.woken is not None for r in result.rows)  # no server here counts its wakeups: no column
    # Names are never cut (a cut mode name is no name); the order's words wrap instead.
    table.add_column("server", no_wrap=True)
    table.add_column("mode", no_wrap=True)
    table.add_column("seen as", overflow="fold")
    table.add_column("idle order", min_width=12, overflow="fold")
    for name in ("jain", "top", *(["woken"] if woken else []), "p99"):
        table.add_column(name, justify="right", no_wrap=True)
    for rows in groups:
        first = rows[0]
        p99 = median_known([r.p99_us / 1000 if r.p99_us is not None else None for r in rows])
        cells: list[str | Text] = [
            first.server,
            first.mode,
            _seen(Counter(r.seen_as or "-" for r in rows).most_common(1)[0][0], first.mode),
            _order(rows),
            _fmt(median_known([r.jain for r in rows]), ".2f"),
            _fmt(median_known([r.busiest for r in rows]), ".0%") + ("*" if any(r.failed for r in rows) else ""),
        ]
        if woken:
            cells.append(_fmt(median_known([r.woken for r in rows]), ".1f"))
        table.add_row(*cells, _fmt(p99, ".2f"))
    return table


def legend(result: AtlasResult) -> str:
    """What the table's words and columns mean: only those it shows."""
    orders = {_short(r.order) for r in result.rows}
    words = ["seen as: the mechanism /proc showed while it ran (inspect; =: the mode's name)"]
    if any(o == "1 each" or o.startswith("1 each,") for o in orders):
        words.append(
            "1 each, then ...: one connection to each worker at start, then the runs seen, each one worker's "
            "connections in a row (nginx re-adds its listener at a worker's first accept and every 16 after: "
            "runs of 16)"
        )
    if any(o.startswith("1 each to ") for o in orders):
        words.append("1 each to n of m: each connection to a different worker, fewer connections than workers")
    if any(o.startswith("like ") for o in orders):
        words.append("like ...: the order seen, which the mode's mechanism does not produce")
    words.append("jain: Jain's index of the workers' shares under load (1: even); top: the busiest worker's share")
    if any(r.woken is not None for r in result.rows):
        words.append("woken: workers woken per connection, where countable")
    words.append("p99: ms under load")
    if any(r.expected is False for r in result.rows):
        words.append("!: not the order the mode's mechanism predicts")
    if any(r.failed for r in result.rows):
        words.append("*: some of the load failed")
    return "; ".join(words)


def _loops(result: AtlasResult) -> str:
    """Which loop the load generator ran (rows of a file before 0.3 do not say: they ran epoll)."""
    loops = sorted({row.loop for row in result.rows if row.loop})
    return f", drivers on {' and '.join(loops)}" if loops else ""


def atlas_report(result: AtlasResult) -> RenderableType:
    settings = result.settings
    load = settings.get("load", {})
    parts: list[RenderableType] = [atlas_table(result)]
    workers = int(settings.get("workers", 0))
    # a kind with workers of its own number (Caddy: one process, whatever -w says) ran with those: its top 100%
    # and Jain 1.00 are of one worker, not the 3 this line said every server had
    own = _own_numbers(result, workers)
    theirs = f" ({', '.join(own)}, {'its' if len(own) == 1 else 'their'} own number)" if own else ""
    parts.append(
        Text(
            f"{plural(workers, 'worker')} each{theirs}; idle order: "
            f"{settings.get('connections', '?')} sequential connections; under load: "
            f"{load.get('connections', '?')} connections, {load.get('concurrency', '?')} in flight{_loops(result)}"
            + _rounds(result),
            style="dim",
        )
    )
    parts.append(Text(legend(result), style="dim"))
    if result.environment:
        env = result.environment
        parts.append(Text(f"{env.system} {env.kernel}, {plural(env.cpu_count, 'CPU')}", style="dim"))
    settings_lines = Text("What selects each mode:\n", style="bold")
    for rows in by_server_and_mode(result):
        settings_lines.append(f"  {rows[0].server} {rows[0].mode}: {rows[0].setting or '-'}\n")
    parts.append(settings_lines)
    rounds = int(settings.get("repeat", 1) or 1)
    for row in result.rows:
        where = f"{row.server} {row.mode}" + (f" (round {row.round})" if rounds > 1 else "")
        if row.error:
            parts.append(Text(f"  {where}: stopped: {row.error}", style="yellow"))
        elif row.failed:
            parts.append(Text(f"  {where}: {row.failed} connections of the load failed (*)", style="yellow"))
    for name, why in result.skipped.items():
        parts.append(Text(f"  {name}: {why}", style="dim"))
    if result.interrupted:
        parts.append(Text(stopped_text(result), style="yellow"))
    return Group(*parts)


def _own_numbers(result: AtlasResult, workers: int) -> list[str]:
    """Each server whose rows ran other than `workers` workers, once: 'caddy: 1', or by mode where its modes ran
    different numbers ('puma: 1 in cluster, 2 in less-busy'), where 'puma: 1, puma: 2' named it twice."""
    ran: dict[str, dict[str, set[int]]] = {}
    for row in result.rows:
        if row.served:
            ran.setdefault(row.server, {}).setdefault(row.mode, set()).add(len(row.served))
    named = []
    for server, modes in sorted(ran.items()):
        other = {mode: numbers - {workers} for mode, numbers in modes.items() if numbers - {workers}}
        counts = {n for numbers in modes.values() for n in numbers}
        if len(counts) == 1 and other:
            named.append(f"{server}: {counts.pop()}")
        elif other:
            said = (f"{' or '.join(map(str, sorted(n)))} in {mode}" for mode, n in sorted(other.items()))
            named.append(f"{server}: {', '.join(said)}")
    return named


def _rounds(result: AtlasResult) -> str:
    """The footer's word on rounds: a median of each row's rounds, which a stop leaves unequal."""
    asked = int(result.settings.get("repeat", 1) or 1)
    if asked == 1:
        return ""
    if not result.interrupted:
        return f"; median of {asked} rounds"
    return f"; median of the rounds each row finished ({asked} asked)"


def stopped_text(result: AtlasResult) -> str:
    """What a stop kept and what it cut: the round it came in, the row cut short (left out: its figures would pass
    for the mode's), the rows of that round that finished, and what did not run."""
    variants = result.variants
    if not variants:  # a file written before the stop kept what it cut did not say
        return "Interrupted: the rows are those that finished."
    asked = int(result.settings.get("repeat", 1) or 1)
    done = len(result.rows)
    rounds_done, in_round = divmod(done, variants)
    if result.cut is None and in_round == 0:  # between two rounds (or after the last row)
        said = [f"Interrupted after round {rounds_done} of {asked}" if asked > 1 else "Interrupted after every row"]
        unrun = asked - rounds_done
        if unrun:
            said.append(f"{_rounds_word(rounds_done + 1, asked)} did not run")
        return "; ".join(said) + "."
    current = rounds_done + 1
    said = [f"Interrupted in round {current} of {asked}" if asked > 1 else "Interrupted"]
    if result.cut is not None:
        said.append(f"{result.cut} was cut short (left out{f' of round {current}' if asked > 1 else ''})")
    said.append(f"{in_round} of {variants} rows{f' of round {current}' if asked > 1 else ''} finished")
    unrun = variants - in_round - (result.cut is not None)
    if unrun:
        said.append(f"{unrun} did not run")
    if current < asked:
        said.append(f"{_rounds_word(current + 1, asked)} did not run")
    if asked > 1 and rounds_done:
        fewer = variants - in_round  # the cut one's row and those that did not run: the earlier rounds only
        rows = f"{fewer} row{'s' if fewer > 1 else ''} show{'' if fewer > 1 else 's'}"
        said.append(f"{rows} {rounds_done} round{'s' if rounds_done > 1 else ''} only")
    return "; ".join(said) + "."


def _rounds_word(first: int, last: int) -> str:
    return f"round {first}" if first == last else f"rounds {first}-{last}"
