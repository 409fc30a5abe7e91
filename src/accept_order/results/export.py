"""Saved results as data for other tools: CSV tables, and latency in HdrHistogram's percentile form.

Tables, by what a result holds: `records` (one row per connection: which worker served it, when, how
long, or its error), `histogram` (one row per distinct latency: the exact counts the histogram keeps),
`workers` (one row per worker: what it counted and what the kernel counted for it), `steps` (an
experiment's own rows, flattened). Which tables a result has, its experiment says (experiments/). Each
row names its run (the server's label), so several runs share a table. A string cell that a spreadsheet
would read as a formula (=, +, -, @) is quoted with a leading ', header cells too (a steps table's
columns are named by the file's keys).

`hdr_percentiles` writes the text that HdrHistogram's outputPercentileDistribution prints (values in ms,
5 ticks per half distance), which HdrHistogram's plotter and hdr-plot read.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..core.histogram import LatencyHistogram
from ..core.measures import DriverStats
from ..core.totals import loops_ran

TABLES = (
    "records",
    "histogram",
    "workers",
    "steps",
    "rounds",
    "intervals",
    "hosts",
)  # the names every experiment's tables come from
# what a result lacking a table says, and which table to try instead
# What a result lacks when a table is asked that its kind does not have; the error then names the tables it has.
_MISSING = {
    "records": "has no connection records",
    "histogram": "has no latency histogram",
    "workers": "keeps no per-worker table",
    "steps": "has no steps",
    "rounds": "has no repeated rounds",
    "intervals": "has no intervals over time",
    "hosts": "has no client hosts",
}


class ExportError(ValueError):
    """This result has no such table (a usage problem: the table asked for does not exist here)."""


# A run's name given by its kind's tables where its server's label names no run apart (a sweep's runs share one
# server and mode: each is named by its cap), set on the run's dict as it is exported, never saved in a file.
RUN_NAME = "run_name"


def label(run: dict[str, Any]) -> str:
    from ..core.spec import ServerSpec

    if isinstance(run.get(RUN_NAME), str):
        return str(run[RUN_NAME])
    return ServerSpec.from_dict(run["server"]).label if "server" in run else ""


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value  # a spreadsheet must not run it
    return value


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_cell(name) for name in header])
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def table(
    kind: str, tables: Mapping[str, Callable[[list[dict[str, Any]]], str]], name: str | None
) -> Callable[[list[dict[str, Any]]], str]:
    """The table `name` among a result kind's `tables` (its experiment's; the first by default), or
    ExportError saying which table to try instead."""
    default = next(iter(tables), None) or "records"
    name = name or default
    build = tables.get(name)
    if build is None:
        # a name of no kind's tables, or of another kind's only (latency's summary): this kind's to try instead,
        # not the tables every kind is asked about (TABLES), most of which it lacks
        missing = _MISSING.get(name, f"has no table {name!r}")
        article = "an" if kind[:1] in "aeiou" else "a"
        names = list(tables) or [default]
        choice = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        raise ExportError(f"{article} {kind} result {missing} (try --table {choice})")
    return build


def records(runs: list[dict[str, Any]]) -> str:
    """One row per connection of sequential runs: which worker served it, when, how long, or its error."""
    rows = []
    for run in runs:
        name = label(run)
        for r in run["records"]:
            row = [name, r["seq"], r.get("worker"), r.get("pid"), r["start_us"], r["latency_us"], r.get("error")]
            rows.append([*row, r.get("client_cpu")])
    return csv_text(RECORD_COLUMNS, rows)


# client_cpu: the CPU the client connected from (what a CPU-steered mode picks by; empty in files before 0.4)
RECORD_COLUMNS = ("run", "seq", "worker", "pid", "start_us", "latency_us", "error", "client_cpu")


def histogram(runs: list[dict[str, Any]]) -> str:
    """One row per distinct latency of each run: the exact counts its histogram keeps."""
    rows = []
    for run in runs:
        hist = LatencyHistogram.from_dict(run["histogram"])
        name = label(run)
        rows += [[name, us, n] for us, n in sorted(hist.to_dict()["counts"])]
    return csv_text(("run", "latency_us", "count"), rows)


def unnamed_only(served: list[int], histogram: Any) -> bool:
    """A load that served (its histogram's count) where no worker's count holds one: every reply named no worker."""
    return not any(served) and isinstance(histogram, dict) and LatencyHistogram.from_dict(histogram).count > 0


WORKER_FIELDS = ("index", "pid", "wakeups", "accepts", "empty", "max_batch", "voluntary_switches",
                 "involuntary_switches", "cpu_s")  # fmt: skip


def served_per_worker(run: dict[str, Any]) -> list[int] | None:
    """What each worker served: a load's own count ("served"), else counted from the connection records
    (run, compare, herd) or the accept sequence (serve); None when the run keeps none of them, or where its load
    served and no worker's count holds any (a --target whose replies named no worker: its file keeps zeros, which
    the report reads '-', not counts)."""
    served = run.get("served")
    if isinstance(served, list):
        return None if unnamed_only(served, run.get("histogram")) else served
    workers = run.get("server", {}).get("workers", 0)
    if "records" in run:
        by = [r.get("worker") for r in run["records"] if r.get("error") is None]
    elif "sequence" in run:
        by = list(run["sequence"])
    else:
        return None
    return [by.count(i) for i in range(workers)]


def worker_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for run in runs:
        served = served_per_worker(run)
        for c in run.get("counters", []):
            index = c.get("index")
            per = served[index] if served is not None and isinstance(index, int) and index < len(served) else ""
            rows.append([label(run), *(c.get(f) for f in WORKER_FIELDS), per])
    return rows


def workers(runs: list[dict[str, Any]]) -> str:
    """One row per worker: what it counted and what the kernel counted for it, and what it served."""
    return csv_text(("run", *WORKER_FIELDS, "served"), worker_rows(runs))


# One row per client host of a load (--clients), as HostOutcome.to_dict saves it: `failed_by` its failures by
# errno ("ECONNREFUSED 2; timeout 1"), `served_per_worker` its per-worker counts (space-separated)
HOST_COLUMNS = ("host", "served", "failed", "failed_by", "requests_per_s", "client_cpu_us_per_connection", "wall_s",
                "clock_offset_s", "clock_uncertainty_s", "started_s", "ended_s", "lost", "served_per_worker", "python",
                "version", "loop", "unnamed")  # fmt: skip


def host_row(host: dict[str, Any]) -> list[Any]:
    """A host's row of HOST_COLUMNS (its served and requests/s from its histogram and wall time: a file's
    derived figures are not trusted). `unnamed`: what it served that no worker's count holds (replies that named no
    worker, at a --target's stock page); its served_per_worker is left blank where that is all it served, not
    zeros read as counts (a plain nginx's hosts read '0 0 0' beside 100 served)."""
    served = LatencyHistogram.from_dict(host["histogram"]).count
    per_worker = host.get("served", [])
    failed = host.get("failed", {})
    wall = host.get("wall_s", 0.0)
    return [
        host["destination"],
        served,
        sum(failed.values()),
        "; ".join(f"{name} {n}" for name, n in sorted(failed.items(), key=lambda kv: -kv[1])),
        round(served / wall, 1) if wall > 0 else 0.0,
        host.get("client_cpu_us_per_connection"),
        wall,
        *(host.get(k) for k in ("clock_offset_s", "clock_uncertainty_s", "started_s", "ended_s", "lost")),
        "" if unnamed_only(per_worker, host["histogram"]) else " ".join(str(n) for n in per_worker),
        host.get("python", ""),
        host.get("version", ""),
        # the loop its drivers ran (empty before 0.3, epoll); two where its drivers differed
        loops_ran(DriverStats.from_dict(d) for d in host.get("drivers", [])),
        max(0, served - sum(per_worker)),
    ]


def hosts(runs: list[dict[str, Any]]) -> str:
    """One row per client host of each run (a header only for loads driven from one host)."""
    return csv_text(("run", *HOST_COLUMNS), ([label(run), *host_row(h)] for run in runs for h in run.get("hosts", [])))


def part_hosts(runs: list[dict[str, Any]], parts: str, part: str, column: str) -> str:
    """One row per client host of each of a run's loads (`parts`: a burst's cells, a ramp's steps), each named
    by its `part` (clients, offered) under `column`."""
    rows = (
        [label(run), p.get(part), *host_row(h)] for run in runs for p in run.get(parts, []) for h in p.get("hosts", [])
    )
    return csv_text(("run", column, *HOST_COLUMNS), rows)


def flat(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalars of a nested dict as `a.b` columns; lists of numbers joined with spaces."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            out.update(flat(item, name + "."))
        elif isinstance(item, list):
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in item):
                out[name] = " ".join(str(v) for v in item)
        else:
            out[name] = item
    return out


def zero_filled(parts: list[dict[str, Any]], key: str = "counters") -> list[dict[str, Any]]:
    """Each of a load's parts (a ramp's steps, a burst's cells) with its `key` counts given for every name any part
    has, 0 where it has none: a file keeps only the kernel counters that moved, so a counter another step moved and
    this one lacks stayed put here, as the reports say it (a ramp's overflows column: 0); a blank cell read as not
    read. Parts without `key` (a file before it) are left as they are."""
    names = list(dict.fromkeys(name for part in parts for name in part.get(key) or {}))
    return [part | {key: {n: part[key].get(n, 0) for n in names}} if key in part else part for part in parts]


def flat_table(rows: list[dict[str, Any]]) -> str:
    """Rows of `flat` columns as one CSV table, the columns in the order they first appear."""
    header: list[str] = []
    for row in rows:
        header += [k for k in row if k not in header]
    return csv_text(header, ([row.get(k, "") for k in header] for row in rows))


def histograms(runs: list[dict[str, Any]]) -> list[tuple[str, LatencyHistogram]]:
    """(label, histogram) of each run of a latency result."""
    return [(label(run), LatencyHistogram.from_dict(run["histogram"])) for run in runs]


def percentile_levels(ticks: int = 5) -> list[float]:
    """HdrHistogram's reporting percentiles: `ticks` steps per halving of the distance to 100%."""
    levels: list[float] = []
    p = 0.0
    while p < 100.0 - 1e-9 and len(levels) < 200:
        levels.append(p)
        halvings = int(math.log2(100.0 / (100.0 - p)))
        p += 100.0 / (ticks * 2 ** (halvings + 1))
    return levels


def hdr_percentiles(hist: LatencyHistogram, ticks: int = 5) -> str:
    """The percentile distribution as HdrHistogram prints it, values in milliseconds."""
    if not hist.count:
        return "#[no samples]\n"
    counts = sorted(hist.to_dict()["counts"])
    values = [us for us, _ in counts]
    cumulative = []
    total = 0
    for _, n in counts:
        total += n
        cumulative.append(total)
    lines = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}", ""]
    for level in percentile_levels(ticks):
        value = hist.percentile(level) if level > 0 else values[0]
        at = cumulative[values.index(value)]
        if at == total:
            break  # the maximum: its line, without 1/(1-p), ends the table
        # total / (total - at), not 1 / (1 - share): with many samples the share rounds to 1.0
        lines.append(f"{value / 1000:12.3f} {at / total:14.12f} {at:10d} {total / (total - at):14.2f}")
    lines.append(f"{values[-1] / 1000:12.3f} {1.0:14.12f} {total:10d}")
    mean, dev = hist.mean_us / 1000, hist.stdev_us / 1000
    lines.append(f"#[Mean    = {mean:12.3f}, StdDeviation   = {dev:12.3f}]")
    lines.append(f"#[Max     = {values[-1] / 1000:12.3f}, Total count    = {total:12d}]")
    lines.append(f"#[Buckets = {len(values):12d}, SubBuckets     = {len(values):12d}]")
    return "\n".join(lines) + "\n"


def as_json_text(doc: dict[str, Any]) -> str:
    import json

    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


__all__ = ["ExportError", "TABLES", "as_json_text", "hdr_percentiles", "table"]
