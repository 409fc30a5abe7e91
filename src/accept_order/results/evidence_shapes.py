"""The kernel's evidence as a result file holds it (probes/evidence.py, and what the session and servers add to
it): the listeners and counters, the machine's state before and after, what a launched server logged running out
of, what --observe-on saw on the server's host, and what a merge or an attached server adds."""

from __future__ import annotations

from ..core.measures import ListenerRow
from ..core.protocol import ROWS_BY_INDEX, ROWS_BY_PID
from .schema import (
    MAX_COUNT,
    Anything,
    Flag,
    Integer,
    ListOf,
    MapOf,
    Maybe,
    Number,
    OneOf,
    Record,
    Text,
    derive,
)
from .shapes import COUNTS, CPU, PORT, SIGNED

_LISTENER = derive(ListenerRow, port=PORT)
_MACHINE_STATE = Record(
    {
        "load_average": ListOf(Number()),
        # busy: 0.4 on (host-wide, for what other processes used beside the run's own)
        "cpu_jiffies": Record(
            {"total": Integer(), "steal": Integer(), "busy": Integer()}, frozenset({"total", "steal"})
        ),
        # this tool's cgroup's CPU limit and how long each level up was throttled so far (core/cgroup_cpu.py)
        "cgroup_cpu": Record(
            {"throttled_us": ListOf(Integer()), "limit": Text(128), "at_s": Number()}, frozenset({"throttled_us"})
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


# a merged file's own merged_from, kept in its entry (merge_nested.py): its files' names and starts, one level checked
# ('runs', 'starts': those of a merged_from dropped below merge_nested.KEPT_LEVELS, kept in its place)
_DROPPED = {"runs": Integer(1), "starts": ListOf(Text())}
_MERGED_BELOW = Record(
    {"files": ListOf(Record({"file": Text(), "started_at": Maybe(Text()), **_DROPPED})), "concurrent": Flag()}
)
MERGED_FILE = Record(
    {
        "file": Text(),
        "started_at": Maybe(Text()),
        "title": Text(),
        "stopped": Text(),
        "merged_from": _MERGED_BELOW,
        **_DROPPED,
    }
)  # merge_*.py
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
        # a --target's: how its namespace was told, where a connection made to it did (servers/remote.py)
        "counters_landed": Text(),
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
        # reading_before_s: the counts are bpftrace's last reading, taken this long before the window closed;
        # empty: the accepts that came back EAGAIN, by pid (merge adds them: a string there was a traceback)
        "accept_counts": Record(
            {
                "available": Flag(),
                "why": Text(),
                "counts": MapOf(Integer()),
                "empty": MapOf(Integer()),
                # by gap bucket (probes/accept_program.GAP_BUCKETS), which merge adds: unchecked, a string's count
                # ended merge in a TypeError
                "gaps": MapOf(Integer()),
                "followed": Integer(),
                "appeared": MapOf(Integer()),
                "master_accepted": Integer(),
                "reading_before_s": Number(),
            }
        ),
        "accept_log": Record({"available": Flag(), "why": Text()}),
        # the server's threads' seconds on a CPU and waiting for one (probes/cpu_waits.py), which the model's
        # service time is stretched by and merge adds (unchecked, merge added a true as 1 s and kept a negative)
        "cpu_waits": Record({"run_s": Number(), "waited_s": Number()}, frozenset({"run_s", "waited_s"})),
        # each worker's looks at its system call through a latency run, idle ones (waiting for a connection) and
        # busy ones off the CPU by call (probes/busy_waits.py), which the model's service time may be taken from
        "busy_waits": Record(
            {
                "span_s": Number(),
                # reads of the connections the server held accepted and open, by how many each found (one that
                # did not see its listener not counted: probes/held_connections.py)
                "held": MapOf(Integer()),
                "workers": ListOf(
                    Record(
                        {
                            "pid": Integer(),
                            "threads": Integer(),
                            "looks": Integer(),
                            "idle": Integer(),
                            "waits": MapOf(Integer()),
                            "threads_end": Integer(),
                            "looked_s": Number(),
                            "busy_s": Number(),
                            "slept_s": Number(),
                        }
                    )
                ),
            },
            frozenset({"span_s", "workers"}),
        ),
        "worker_exit": Record(
            {"worker": Maybe(Integer()), "pid": Maybe(Integer()), "after_s": Maybe(Number()), "why": Text()}
        ),
        "shortages": SHORTAGES,
        "work_clock": OneOf(("thread", "process")),  # what HAProxy's --work spun on: its thread's CPU or process's
        "merged_from": Record({"files": ListOf(MERGED_FILE), "concurrent": Flag()}),
        "observed_on": ListOf(OBSERVED_ON),
        # run --attach: the program serving, as inspect names it (servers/attached.py); None: one it does not know
        "program": Record({"pid": Integer(), "name": Text(), "recognised": Maybe(Text())}),
        # run --attach of one process of several threads (servers/attached.py): said by servers/kind_notes.threads_note
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
