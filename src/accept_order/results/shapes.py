"""The shapes every result kind shares (results/schema.py): what served and what drove it, where, the
workers' and drivers' counters, the latency histogram, the kernel's evidence and the machine's state.
The dataclass types among them are registered, so a kind's `derive` gives every field of those types
the same checks. A kind's own shape is declared with its experiment (experiments/*/result.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..core import service_time
from ..core.histogram import LatencyHistogram
from ..core.hosts import HostOutcome
from ..core.measures import ConnectionRecord, DriverStats, Environment, ListenerRow, Verdict, WorkerCounters
from ..core.protocol import ROWS_BY_INDEX, ROWS_BY_PID
from ..core.spec import MAX_WORKERS, ConcurrentLoad, SequentialLoad, ServerSpec
from ..core.text import plural
from . import ServerCheck as ServerCheck
from . import check_servers_with as check_servers_with
from . import server_checks
from .schema import (
    MAX_COUNT,
    Anything,
    Flag,
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
        rules=(_known_server,),
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

# -- client hosts (--clients: core/hosts.py) ---------------------------------------------------------------

_SECONDS = Number(-float(MAX_COUNT), float(MAX_COUNT))  # a clock's offset, a start before the common one


def _host_served_adds_up(host: Mapping[str, Any], at: str) -> None:
    """A host's `served_total` (derived, for other tools) is what its histogram holds."""
    total, held = host.get("served_total"), histogram_total(host["histogram"])
    if total is not None and total != held:
        raise SchemaError(child(at, "served_total"), f"is {total}, but the host's histogram holds {held}")


# What one client host drove, as HostOutcome.to_dict writes it (its derived figures: served_total,
# requests_per_s, client_cpu_us_per_connection, rebuilt when read)
HOST_OUTCOME = known(
    HostOutcome,
    Record(
        {
            "destination": Text(1024),
            "served": COUNTS,
            "served_total": Integer(),
            "failed": ERRORS,
            "requests_per_s": Number(),
            "client_cpu_us_per_connection": Maybe(Number()),
            "wall_s": Number(),
            "histogram": HISTOGRAM,
            "drivers": ListOf(DRIVER_STATS),
            "clock_offset_s": Maybe(_SECONDS),
            "clock_uncertainty_s": Maybe(Number()),
            "started_s": Maybe(_SECONDS),
            "ended_s": Maybe(_SECONDS),
            "lost": Maybe(Text()),
            "due_s": Maybe(_SECONDS),
            "python": Text(),
            "version": Text(),
            "extra": MapOf(Anything()),
            "boot_id": Text(64),
        },
        frozenset({"destination", "histogram"}),
        (_host_served_adds_up,),
    ),
)
HOSTS = ListOf(HOST_OUTCOME)


def hosts_fit_workers(run: Mapping[str, Any], at: str) -> None:
    """Each client host's `served` of a run (or of a burst's cell, a ramp's step: `run` is then its server's
    part too) has at most one count per worker; its destinations are each named once."""
    workers = workers_of(run)
    seen: set[str] = set()
    for index, host in enumerate(run.get("hosts", [])):
        where = child(child(at, "hosts"), index)
        if len(host.get("served", [])) > workers:
            raise SchemaError(
                child(where, "served"),
                f"has {len(host['served'])} entries, one per worker, but the server had {workers}",
            )
        if host["destination"] in seen:
            raise SchemaError(child(where, "destination"), "names a host already given: each host is one entry")
        seen.add(host["destination"])


def hosts_add_up(run: Mapping[str, Any], at: str) -> None:
    """The run's histogram, failures and per-worker counts are its client hosts' added (none counted twice,
    none left out): a run with `hosts` was driven from them only (a lost host's connections are in neither)."""
    hosts = run.get("hosts")
    if not hosts:
        return
    durations: Counter[int] = Counter()
    failed: Counter[str] = Counter()
    for host in hosts:
        durations.update({us: n for us, n in host["histogram"]["counts"]})
        failed.update(host.get("failed", {}))
    own = Counter({us: n for us, n in run["histogram"]["counts"]})
    if +durations != +own:
        raise SchemaError(
            child(at, "hosts"),
            f"the hosts' histograms hold {sum(durations.values())} samples that are not the run's "
            f"{sum(own.values())} (each host's are part of the run's, exactly)",
        )
    if +failed != +Counter(run.get("errors", {})):
        raise SchemaError(child(at, "hosts"), "the hosts' failures are not the run's (errors): they add up to them")
    served: Counter[int] = Counter()  # per worker: a host's count of a worker it did not reach may be left out
    for host in hosts:
        served.update(dict(enumerate(host.get("served", []))))
    if +served != +Counter(dict(enumerate(run.get("served", [])))):
        raise SchemaError(
            child(at, "hosts"), "the hosts' per-worker counts (served) are not the run's: they add up to them"
        )


# -- the kernel's evidence (probes/evidence.py, and what the session and servers add to it) ---------------

_LISTENER = derive(ListenerRow, port=PORT)
_MACHINE_STATE = Record(
    {
        "load_average": ListOf(Number()),
        # busy: 0.4 on (host-wide, for what other processes used beside the run's own)
        "cpu_jiffies": Record(
            {"total": Integer(), "steal": Integer(), "busy": Integer()}, frozenset({"total", "steal"})
        ),
        "boot_id": Text(64),  # the kernel whose /proc/stat this is (client hosts that report it share its CPUs)
    }
)
MACHINE = Record({"before": _MACHINE_STATE, "after": _MACHINE_STATE})
# what a launched server logged running out of (servers/launched/base.py `shortages`)
SHORTAGES = ListOf(Record({"server": Text(), "log": Text(), "mark": Text(), "lines": Integer(), "first": Text()}))
# --observe-on: what observe saw on the server's host, per worker beside the replies' counts
# (experiments/observe/remote.py `joined`), or why it failed
OBSERVED_ON = Record(
    {
        "host": Text(1024),
        "error": Text(),
        "program": Text(),
        "traced": Flag(),
        "source": Text(),
        "wall_s": Number(),
        "mechanism": Maybe(Text()),
        "workers": ListOf(
            Record(
                {
                    "pid": Integer(),
                    "tid": Maybe(Integer()),
                    "accepts": Maybe(Integer()),
                    "served_by_replies": Maybe(Integer()),
                    "cpu_s": Maybe(Number()),
                    "connections_observed": Maybe(Integer()),
                    "bytes_in": Maybe(Integer()),
                    "bytes_out": Maybe(Integer()),
                },
                frozenset({"pid"}),
            )
        ),
        "agrees": Maybe(Flag()),
        "notes": ListOf(Text()),
        "counters": MapOf(SIGNED),  # the listen counters' deltas in the server's network namespace while observed
        "lost_hosts": ListOf(Text(1024)),  # client hosts lost mid-load: accepted, their replies not counted
        "under_way": Integer(),  # connections a stop cut off in flight: some perhaps accepted, none answered
    },
    frozenset({"host"}),
)
# Why a run of several loads (a burst's sizes, a ramp's steps, a sweep's caps) ended before its last one: the
# error's line (experiments/partial.py RunStopped). The file then holds the loads measured before it.
STOPPED = Maybe(Text())
MERGED_FILE = Record({"file": Text(), "started_at": Maybe(Text()), "title": Text(), "stopped": Text()})  # merge_*.py
EVIDENCE = Record(
    {
        "listeners": MapOf(ListOf(_LISTENER.but(optional=_LISTENER.fields))),
        "counters": MapOf(SIGNED),
        "counters_watched": ListOf(Text()),
        "counters_available": Flag(),
        # results/merge.py: why a merged load has no counters, and the hosts whose counters it added
        "counters_unmerged": Text(),
        "counters_hosts": ListOf(Text(1024)),
        # counters of this pid's namespace (an attached server's, not ours), or why none (EvidenceCapture.started)
        "counters_pid": Integer(),
        "counters_unread": Text(),
        "affinity": ListOf(Record({"index": Integer(), "pid": Integer(), "cpus": Maybe(ListOf(CPU))})),
        "shared_namespace": Flag(),
        "netns": Record({"inode": Maybe(Integer()), "private": Flag(), "why": Text()}),
        "note": Text(),
        "errors": ListOf(Text()),
        "machine": MACHINE,
        # a load from client hosts at a server elsewhere: none of its traffic crossed this host (servers/remote.py)
        "traffic_elsewhere": Flag(),
        # a server elsewhere: whether its rows are the replies' own worker indices or numbered by the pids the
        # replies named (core/protocol.py); absent in files before it, and where no reply named a worker
        "rows_by": OneOf((ROWS_BY_INDEX, ROWS_BY_PID)),
        # a merge that added such rows by index from files whose pids differed: a row names one pid of several
        "rows_of_several_pids": Flag(),
        # fd-pass's acceptor: usage deltas are signed (a missing reading after is taken as zero)
        "acceptor": Record(
            {
                "pid": Integer(),
                "policy": Text(),
                "passed": COUNTS,
                "lost": Integer(),
                "voluntary_switches": SIGNED,
                "involuntary_switches": SIGNED,
                "cpu_s": Number(-MAX_COUNT, MAX_COUNT),
            }
        ),
        # numbered_by: the server's field whose number, each row's third, places a request on its connection;
        # dropped: lines of the log lost on their way to the tool (counted by the kernel)
        "witness": Record(
            {"source": Text(), "requests": ListOf(ListOf(Anything())), "numbered_by": Text(), "dropped": Integer()}
        ),
        # followed: the master whose children were counted too; appeared: those children's accepts, by pid, that
        # were not attached (workers started during the run); master_accepted: the attached master's own accepts;
        # reading_before_s: the counts are bpftrace's last reading, taken this long before the window closed
        "accept_counts": Record(
            {
                "available": Flag(),
                "why": Text(),
                "counts": MapOf(Integer()),
                "followed": Integer(),
                "appeared": MapOf(Integer()),
                "master_accepted": Integer(),
                "reading_before_s": Number(),
            }
        ),
        "accept_log": Record({"available": Flag(), "why": Text()}),
        "worker_exit": Record(
            {"worker": Maybe(Integer()), "pid": Maybe(Integer()), "after_s": Maybe(Number()), "why": Text()}
        ),
        "shortages": SHORTAGES,
        "work_clock": OneOf(("thread", "process")),  # what HAProxy's --work spun on: its thread's CPU or process's
        "merged_from": Record({"files": ListOf(MERGED_FILE), "concurrent": Flag()}),
        "observed_on": ListOf(OBSERVED_ON),
        # run --attach of one process of several threads (servers/attached.py): said by registry.threads_note
        "threads": Record(
            {
                "pid": Integer(),
                "program": Text(),
                "argv": ListOf(Text()),
                "count": Integer(),
                "loops": Integer(),
                "epolls": Integer(),
            }
        ),
    }
)
