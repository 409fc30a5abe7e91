"""Saved results as data for other tools: CSV tables, and latency in HdrHistogram's percentile form.

Tables, by what a result holds: `records` (one row per connection: which worker served it, when, how long,
or its error), `histogram` (one row per distinct latency: the exact counts the histogram keeps), `workers`
(one row per worker: what it counted and what the kernel counted for it), `steps` (burst's cells, ramp's
steps, reload's runs, flattened). Each row names its run (the server's label), so several runs share a
table. A string cell that a spreadsheet would read as a formula (=, +, -, @) is quoted with a leading '.

`hdr_percentiles` writes the text that HdrHistogram's outputPercentileDistribution prints (values in ms,
5 ticks per half distance), which HdrHistogram's plotter and hdr-plot read.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..histogram import LatencyHistogram

TABLES = ("records", "histogram", "workers", "steps")
DEFAULT_TABLE = {
    "run": "records",
    "compare": "records",
    "herd": "records",
    "serve": "workers",
    "latency": "histogram",
    "latency-compare": "histogram",
    "sweep": "histogram",
    "burst": "steps",
    "ramp": "steps",
    "reload": "steps",
}


class ExportError(ValueError):
    """This result has no such table (a usage problem: the table asked for does not exist here)."""


def _runs(kind: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["runs"]) if kind in ("compare", "herd", "latency-compare", "sweep", "burst", "reload") else [doc]


def _label(run: dict[str, Any]) -> str:
    from ..spec import ServerSpec

    return ServerSpec.from_dict(run["server"]).label if "server" in run else ""


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value  # a spreadsheet must not run it
    return value


def _csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def table(kind: str, doc: dict[str, Any], name: str | None = None) -> str:
    """One table of a saved result (version 2 document) as CSV."""
    name = name or DEFAULT_TABLE.get(kind, "records")
    if name == "records":
        return _records(kind, doc)
    if name == "histogram":
        return _histogram(kind, doc)
    if name == "workers":
        return _workers(kind, doc)
    if name == "steps":
        return _steps(kind, doc)
    raise ExportError(f"no table {name!r}; choose one of {', '.join(TABLES)}")


def _records(kind: str, doc: dict[str, Any]) -> str:
    if kind not in ("run", "compare", "herd", "serve"):
        raise ExportError(f"a {kind} result has no connection records (try --table histogram or workers)")
    rows = []
    for run in _runs(kind, doc):
        label = _label(run)
        if kind == "serve":  # who accepted each connection, in accept order: all serve knows
            rows += [[label, seq, worker, "", "", "", ""] for seq, worker in enumerate(run.get("sequence", []))]
            continue
        for r in run["records"]:
            rows.append(
                [label, r["seq"], r.get("worker"), r.get("pid"), r["start_us"], r["latency_us"], r.get("error")]
            )
    return _csv(("run", "seq", "worker", "pid", "start_us", "latency_us", "error"), rows)


def _histogram(kind: str, doc: dict[str, Any]) -> str:
    if kind not in ("latency", "latency-compare", "sweep"):
        raise ExportError(f"a {kind} result has no latency histogram (try --table records or workers)")
    rows = []
    for run in _runs(kind, doc):
        hist = LatencyHistogram.from_dict(run["histogram"])
        label = _label(run)
        rows += [[label, us, n] for us, n in sorted(hist.to_dict()["counts"])]
    return _csv(("run", "latency_us", "count"), rows)


def _workers(kind: str, doc: dict[str, Any]) -> str:
    if kind not in ("run", "compare", "herd", "serve", "latency", "latency-compare", "sweep"):
        raise ExportError(f"a {kind} result keeps no per-worker table (try --table steps)")
    fields = ("index", "pid", "wakeups", "accepts", "empty", "max_batch", "voluntary_switches",
              "involuntary_switches", "cpu_s")  # fmt: skip
    rows = []
    for run in _runs(kind, doc):
        served = run.get("served")
        for c in run.get("counters", []):
            index = c.get("index")
            per = served[index] if isinstance(served, list) and isinstance(index, int) and index < len(served) else ""
            rows.append([_label(run), *(c.get(f) for f in fields), per])
    return _csv(("run", *fields, "served"), rows)


def _flat(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalars of a nested dict as `a.b` columns; lists of numbers joined with spaces."""
    flat: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            flat.update(_flat(item, name + "."))
        elif isinstance(item, list):
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in item):
                flat[name] = " ".join(str(v) for v in item)
        else:
            flat[name] = item
    return flat


def _steps(kind: str, doc: dict[str, Any]) -> str:
    rows: list[dict[str, Any]] = []
    if kind == "burst":
        for run in doc["runs"]:
            rows += [
                {"run": _label(run), **_flat({k: v for k, v in c.items() if k != "drivers"})} for c in run["cells"]
            ]
    elif kind == "ramp":
        rows = [{"run": _label(doc), **_flat(s)} for s in doc["steps"]]
    elif kind == "reload":
        keep = ("how", "migrate", "worker", "at_s", "gone_s", "held", "served", "finished", "errors", "counters")
        rows = [{"run": _label(r), **_flat({k: r.get(k) for k in keep})} for r in doc["runs"]]
    else:
        raise ExportError(f"a {kind} result has no steps (try --table {DEFAULT_TABLE.get(kind, 'records')})")
    header: list[str] = []
    for row in rows:
        header += [k for k in row if k not in header]
    return _csv(header, ([row.get(k, "") for k in header] for row in rows))


def latency_runs(kind: str, doc: dict[str, Any]) -> list[tuple[str, LatencyHistogram]]:
    """(label, histogram) of each run of a latency kind; ExportError for any other kind."""
    if kind not in ("latency", "latency-compare", "sweep"):
        raise ExportError(f"a {kind} result has no latency histogram for --format hdr")
    return [(_label(run), LatencyHistogram.from_dict(run["histogram"])) for run in _runs(kind, doc)]


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
        share = at / total
        lines.append(f"{value / 1000:12.3f} {share:14.12f} {at:10d} {1 / (1 - share):14.2f}")
    lines.append(f"{values[-1] / 1000:12.3f} {1.0:14.12f} {total:10d}")
    mean, dev = hist.mean_us / 1000, hist.stdev_us / 1000
    lines.append(f"#[Mean    = {mean:12.3f}, StdDeviation   = {dev:12.3f}]")
    lines.append(f"#[Max     = {values[-1] / 1000:12.3f}, Total count    = {total:12d}]")
    lines.append(f"#[Buckets = {len(values):12d}, SubBuckets     = {len(values):12d}]")
    return "\n".join(lines) + "\n"


def as_json_text(doc: dict[str, Any]) -> str:
    import json

    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


__all__ = ["DEFAULT_TABLE", "ExportError", "TABLES", "as_json_text", "hdr_percentiles", "latency_runs", "table"]
