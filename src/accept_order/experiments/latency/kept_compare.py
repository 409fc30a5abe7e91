"""Several latency runs over kept connections side by side (a report of several modes, a sweep's caps) and over the
runs of --repeat: per worker the connections accepted and requests served, Jain's index, p99, the pool opened."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from .first_requests import fill_verdict, split_firsts
from .kept_report import accepted, by_kernel, kept_lines, ms, requests, requests_jain, worker_percentile
from .result import LatencyResult

# The widest per-worker cell kept on one line: 6 workers' p99s (41 with 3-digit ones) beside the mode and the first
# and later p99 still fit 80 columns
ONE_LINE = 42


def _counts(values: tuple[int, ...] | None) -> str:
    return "-" if values is None else " ".join(map(str, values))


def _label(result: LatencyResult) -> str:
    return result.server.label


def _row(r: LatencyResult, name: str) -> tuple[str, ...]:
    """One run's cells: its name, connections and requests per worker, Jain, p99 per worker, first and later p99."""
    took = accepted(r)
    split = split_firsts(r)  # None: a file from before they were kept apart
    firsts, later = (None, None) if split is None else (split[1].firsts, split[1].later)
    return (
        name,
        _counts(took),
        _counts(requests(r)),
        f"{requests_jain(r):.3f}" if sum(r.served) and (took is not None or not by_kernel(r)) else "-",
        " ".join(ms(worker_percentile(r, i, 99.0)) for i in range(len(r.served))),
        ms(firsts.percentile(99.0) if firsts is not None and firsts.count else None),
        ms(later.percentile(99.0) if later is not None and later.count else None),
    )


def kept_compare_table(
    results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label, column: str = "mode"
) -> Table | None:
    """Several runs over kept connections side by side: per worker connections, requests and p99; Jain over
    the requests; the p99 of the connections' first requests and of the later ones (the overall p99 is the table's
    above it, latency by mode's or the sweep's). None when no run kept its connections. `name` names each run's row
    under `column` (sweep: its cap, '4 limit')."""
    kept = [r for r in results if r.connections]
    if not kept:
        return None
    table = Table(
        title=f"kept connections by {column}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    # Two-line heads, and no overall p99 (the same figure as the table above it: latency by mode's p99, sweep's
    # lat-99%): with them on one line and it beside, 4 nginx workers' rows needed 104 columns and stacked at 100
    heads = (column, "accepted\nper worker", "requests\nper worker", "Jain", "p99 ms\nper worker")
    rows = [_row(r, name(r)) for r in kept]
    # first: each connection's first request, which also waited to be accepted; later: the rest
    for i, head in enumerate((*heads, "first\np99", "later\np99")):
        if "worker" not in head:
            table.add_column(head, justify="left" if head == column else "right")
            continue
        # a worker's figures on one line where they are few (a table too wide is stacked, render/fit.py, rather
        # than a list broken over two lines that reads as another row's); many workers' wrap between figures
        widest = max(len(row[i]) for row in rows)
        table.add_column(head, justify="left", min_width=widest if widest <= ONE_LINE else None)
    for row in rows:
        table.add_row(*row)
    return table


def kept_compare_parts(
    results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label, column: str = "mode"
) -> list[Any]:
    """The side-by-side table, then each run's pool and what a mode that serves to the end did, and whether its
    tail is the fill (its connections' first requests) or the steady state."""
    table = kept_compare_table(results, name, column)
    notes = [Text.assemble((f"{name(r)}: ", "bold"), line) for r in results for line in _notes(r)]
    return ([table] if table is not None else []) + notes


def _notes(result: LatencyResult) -> list[Text]:
    """A run's kept lines after the first (its pool, the server's closes, ...) and its fill verdict."""
    said = fill_verdict(result)
    return [*kept_lines(result)[1:], *([Text(said)] if said else [])]


def kept_repeat_table(variants: dict[str, list[LatencyResult]]) -> Table | None:
    """`--repeat` over kept connections: per variant, how the connections fell over the workers in how many
    runs (the counts per worker, largest first), in how many runs one worker held them all, and the median
    Jain's index over the requests and p99. None when no run kept its connections."""
    kept = {label: [r for r in runs if r.connections] for label, runs in variants.items()}
    if not any(kept.values()):
        return None
    table = Table(title="kept connections over the runs", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    pools = any(r.pool for runs in kept.values() for r in runs)
    rows = [_repeat_row(runs, pools) for runs in kept.values() if runs]
    labels = [label for label, runs in kept.items() if runs]
    # Two-line heads, and each split on a line of its own, held whole where it fits: joined with '; ' in one cell,
    # 3 runs of 4 workers read '15 1 0 0: 1; 13 3' over '0 0: 1; 10 6 0 0:' at 80 columns, a split broken where
    # its figures read as another's (at 100 and 120 too: '8 3 3' / '2: 1')
    heads = ("connections per worker\n(largest first): runs", "one worker\nheld all", "Jain", "p99 ms")
    table.add_column("mode", justify="left")
    for i, head in enumerate((*heads, "first\np99", "later\np99", *(("pool\nopened",) if pools else ()))):
        if i == 0:
            widest = max(len(line) for row in rows for line in row[0].splitlines())
            table.add_column(head, justify="left", min_width=widest if widest <= ONE_LINE else None)
        else:
            table.add_column(head, justify="right")
    for label, row in zip(labels, rows, strict=True):
        table.add_row(label, *row)
    return table


def _repeat_row(runs: list[LatencyResult], pools: bool) -> tuple[str, ...]:
    """One variant's cells over its runs: its splits (largest first, most runs first, one a line), the runs one
    worker held all in, the median Jain and p99, the first and later p99, the pool opened."""
    splits: dict[tuple[int, ...], int] = {}
    held = [took for r in runs if (took := accepted(r)) is not None]  # none where nobody counted them
    for took in held:
        split = tuple(sorted(took, reverse=True))
        splits[split] = splits.get(split, 0) + 1
    all_one = sum(1 for took in held if sum(took) and max(took) == sum(took))
    jains = [requests_jain(r) for r in runs if sum(r.served) and (not by_kernel(r) or accepted(r) is not None)]
    p99s = [r.histogram.percentile(99.0) for r in runs if r.histogram.count]
    spread = "\n".join(f"{' '.join(map(str, s))}: {n}" for s, n in sorted(splits.items(), key=lambda kv: -kv[1]))
    return (
        spread or "-",
        f"{all_one} of {len(held)}" if held else "-",
        f"{statistics.median(jains):.3f}" if jains else "-",
        ms(round(statistics.median(p99s)) if p99s else None),
        *_first_and_later(runs),
        *((_pool_text(runs),) if pools else ()),
    )


def _first_and_later(runs: list[LatencyResult]) -> tuple[str, str]:
    """The median over the runs of the connections' first requests' p99 and of the later ones' ('-' where no run
    kept them apart: files from before)."""
    firsts, later = [], []
    for r in runs:
        split = split_firsts(r)
        if split is not None and split[1].firsts.count and split[1].later.count:
            firsts.append(split[1].firsts.percentile(99.0))
            later.append(split[1].later.percentile(99.0))
    # the median as the --repeat table above this one takes it (analysis/stability.py): of an even number of runs the
    # mean of the middle two; the upper of them read 2 rounds' p99s 23.36 and 32.59 ms as 32.59 here, 27.97 there
    median = [round(statistics.median(p99s)) if p99s else None for p99s in (firsts, later)]
    return ms(median[0]), ms(median[1])


def _pool_text(runs: list[LatencyResult]) -> str:
    """How much of the pool opened over the runs: `32 of 32`, or `4 of 32 (5 runs)` when some stayed short
    (a mode that serves each connection to its end, its workers all holding one)."""
    sizes: dict[tuple[int, int], int] = {}
    for r in runs:
        if r.pool is not None:
            sizes[r.pool] = sizes.get(r.pool, 0) + 1
    return "; ".join(f"{o} of {p}" + (f" ({n} runs)" if len(sizes) > 1 else "") for (o, p), n in sizes.items())
