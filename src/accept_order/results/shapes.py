"""The shapes every result kind shares (results/schema.py): what served and what drove it, where, the
workers' and drivers' counters and the latency histogram (the client hosts' are results/host_shapes.py, the
kernel's evidence and the machine's state results/evidence_shapes.py).
The dataclass types among them are registered, so a kind's `derive` gives every field of those types
the same checks. A kind's own shape is declared with its experiment (experiments/*/result.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import service_time
from ..core.histogram import LatencyHistogram
from ..core.measures import ConnectionRecord, DriverStats, Environment, Verdict, WorkerCounters
from ..core.spec import MAX_WORKERS, NOT_STARTED, ConcurrentLoad, SequentialLoad, ServerSpec
from ..core.text import plural
from . import server_checks
from .schema import (
    MAX_COUNT,
    Integer,
    Items,
    ListOf,
    MapOf,
    Maybe,
    Number,
    OneOf,
    Record,
    Rule,
    SchemaError,
    Text,
    child,
    derive,
    known,
)

SIGNED = Integer(-MAX_COUNT, MAX_COUNT)  # kernel counter deltas: a gauge can go down
PORT = Integer(0, 65535)
# As many as a run may have (core/spec.py): reports and pictures draw one bar or row per worker, so 2**20 of
# them in a hand-edited file took minutes and gigabytes to plot.
WORKERS = Integer(1, MAX_WORKERS)
CPU = Integer(0, 1 << 20)
COUNTS = ListOf(Integer())  # per worker (served)
ERRORS = MapOf(Integer())  # failed connections by errno name
SKIPPED = MapOf(Text())  # a variant that did not run -> why
NOTES = ListOf(Text())
# A kept load's pool (load_summary.kept_fields): connections opened, planned, the fill's seconds (older files: none)
POOL = Record({"opened": Integer(), "planned": Integer(), "fill_s": Number()}, frozenset({"opened", "planned"}))


def _known_server(server: Mapping[str, Any], at: str) -> None:
    """A server kind and mode this version knows (a file naming another is wrong, not the command line).
    Files store the kind as "server" (its name in version 2); "kind", its name now, wins (spec.renamed)."""
    name = "kind" if "kind" in server else "server"
    kind = server.get(name, ServerSpec.kind)
    mode = server.get("mode", ServerSpec.mode)
    for check in server_checks:  # the registry's answer (results/__init__.py)
        wrong = check(kind, mode)
        if wrong is not None:
            field, why = wrong
            raise SchemaError(child(at, name if field == "kind" else "mode"), why)


def _backlog_given(server: Mapping[str, Any], at: str) -> None:
    """A file of a server this tool starts holds its --backlog: the backlog listen() was given, or for a kind with no
    setting for it (core/kinds.py no_backlog: Caddy, h2o) the default, not what its listen() got (the listeners'
    evidence says that). Only a server it did not start (attached, remote: core/spec.py NOT_STARTED) has none."""
    kind = server.get("kind" if "kind" in server else "server", ServerSpec.kind)
    if "backlog" in server and server["backlog"] is None and kind not in NOT_STARTED:
        raise SchemaError(
            child(at, "backlog"),
            f"is null, but {kind} is a server this tool starts, whose files always hold a backlog "
            "(only an attached or remote server's hold none)",
        )


def _one_amount(load: Mapping[str, Any], at: str) -> None:
    """A closed-loop load ran a number of connections or for a time: one of the two."""
    given = [name for name in ("connections", "duration_s") if load.get(name) is not None]
    if len(given) != 1:
        what = "gives both" if given else "gives neither"
        raise SchemaError(at, f"{what} connections and duration_s; a load has one of them")


def _counts_bounded(histogram: Mapping[str, Any], at: str) -> None:
    total = sum(n for _, n in histogram["counts"])
    if total > MAX_COUNT:
        raise SchemaError(child(at, "counts"), f"the counts add up to {total}, more than {MAX_COUNT}")


def histogram_total(histogram: Mapping[str, Any]) -> int:
    """The number of samples a (checked) histogram holds."""
    return sum(n for _, n in histogram["counts"])


def workers_of(run: Mapping[str, Any]) -> int:
    """How many workers a (checked) run's server had."""
    server = run.get("server", {})
    workers: int = server.get("workers", ServerSpec.workers)
    return workers


def at_most_workers(name: str, exactly: bool = False) -> Rule:
    """A rule: the list `name` of a run (one entry per worker) is no longer than its server had workers; `exactly`:
    as long, or empty (not read): a shorter one read as workers not counted ('-' in the kept connections' table)."""

    def rule(run: Mapping[str, Any], at: str) -> None:
        workers, items = workers_of(run), run.get(name, [])
        if len(items) > workers or (exactly and items and len(items) != workers):
            entries = plural(len(items), "entry", "entries")
            raise SchemaError(child(at, name), f"has {entries}, one per worker, but the server had {workers}")

    return rule


def names_workers(name: str, key: str | None = None) -> Rule:
    """A rule: each item of the list `name` of a run (its `key`, or the item itself) names a worker of
    its server (0..workers-1), or none (null)."""

    def rule(run: Mapping[str, Any], at: str) -> None:
        workers = workers_of(run)
        for index, item in enumerate(run.get(name, [])):
            worker = item.get(key) if key is not None else item
            if worker is not None and worker >= workers:
                where = child(child(at, name), index)
                raise SchemaError(
                    child(where, key) if key is not None else where,
                    f"names worker {worker}, but the server had {workers} (0..{workers - 1})",
                )

    return rule


SERVER = known(
    ServerSpec,
    derive(
        ServerSpec,
        workers=WORKERS,
        server=Text(),  # the kind, as files store it
        port=PORT,
        cpus=ListOf(CPU),
        mutex_delay_ms=Number(0, 1e9),
        rules=(_known_server, _backlog_given),
    ),
)
SEQUENTIAL_LOAD = known(SequentialLoad, derive(SequentialLoad, kind=OneOf(("sequential",))))
CONCURRENT_LOAD = known(
    ConcurrentLoad,
    derive(ConcurrentLoad, kind=OneOf(("closed-loop", "open-loop")), cpus=ListOf(CPU), rules=(_one_amount,)),
)
ENVIRONMENT = known(Environment, derive(Environment))


def _service_times_add_up(counters: Mapping[str, Any], at: str) -> None:
    """Each service-time bucket is one the workers make, each once, and the exact sum lies within them."""
    pairs = counters.get("service_us", [])
    for index, (lower, _) in enumerate(pairs):
        if service_time.bucket(lower) != lower or (index and lower <= pairs[index - 1][0]):
            raise SchemaError(child(child(at, "service_us"), index), f"{lower} is not the next bucket's lower bound")
    total = counters.get("service_sum_us")
    low = sum(lower * n for lower, n in pairs)
    if total is not None and not low <= total <= low + sum(service_time.width(lower) * n for lower, n in pairs):
        raise SchemaError(child(at, "service_sum_us"), f"is {total}, outside the buckets' range")


WORKER_COUNTERS = known(
    WorkerCounters,
    derive(
        WorkerCounters,
        affinity=ListOf(CPU),
        service_us=ListOf(Items((Integer(), Integer(1)))),
        rules=(_service_times_add_up,),
    ),
)
DRIVER_STATS = known(DriverStats, derive(DriverStats))
CONNECTION_RECORD = known(ConnectionRecord, derive(ConnectionRecord))
VERDICT = known(Verdict, derive(Verdict))
HISTOGRAM = known(
    LatencyHistogram,
    Record(
        {"unit": OneOf(("us",)), "counts": ListOf(Items((Integer(), Integer(1))))},
        frozenset({"unit", "counts"}),
        (_counts_bounded,),
    ),
)


# Why a run of several loads (a burst's sizes, a ramp's steps, a sweep's caps) ended before its last one: the
# error's line (experiments/partial.py RunStopped). The file then holds the loads measured before it.
STOPPED = Maybe(Text())
