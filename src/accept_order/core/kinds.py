"""A server kind as a type: its name, its accept modes, what it needs installed, its own checks, how to
make one, the witness it keeps, and what changes how the load of its long-lived connections splits
(`LongLivedCure`). Every kind is one module that defines a `ServerKind` subclass, listed
once in servers/registry.py; nothing else dispatches on a kind's name.

A mode of any kind is described by one type, `ModeInfo`: what the mechanism predicts (the idle order
model, the queue, a herd), whether --accept-batch applies, and the server's own settings that select it
(what `inspect` looks for in a running server).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from .errors import PlanError
from .models import Mechanism, Model
from .spec import DEFAULT_BACKLOG, DEFAULT_MODE, check_range
from .text import and_join

if TYPE_CHECKING:
    from .cures import ClientLimit as ClientLimit
    from .cures import IdleLimit as IdleLimit
    from .cures import LongLivedCure as LongLivedCure
    from .cures import Measured as Measured
    from .cures import SideBySide as SideBySide
    from .handoff import HandOffRead
    from .spec import ServerSpec
    from .target import Target


def __getattr__(name: str) -> object:
    """The cures' records (SideBySide, ClientLimit, IdleLimit, LongLivedCure, Measured) are in cures.py,
    imported on first use; callers that import them from here, as before, get them from there."""
    if name in ("SideBySide", "ClientLimit", "IdleLimit", "LongLivedCure", "Measured"):
        from . import cures

        return getattr(cures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ModeInfo(NamedTuple):
    """One accept mode of one server kind, as analysis, reports and `modes` read it (never by its name).
    A NamedTuple, not a frozen dataclass: the same to every caller (immutable, equal by value, the same repr),
    and Python 3.11 compiles a dataclass's methods at import (~4.5 M instructions a class, every kind's start-up;
    benchmarks/bench_startup.py)."""

    name: str
    summary: str  # one line for `modes`
    why: str  # the kernel mechanism, in a sentence a verdict can quote
    model: Model | None  # the order it predicts (core/models.py); None: no order
    queue: str  # "shared", "per-worker" or "unknown"
    herds: bool = False  # one connection wakes every idle worker
    batches: bool = True  # --accept-batch applies
    # Where it does not: the connections one wakeup takes, as the server's own loop takes them (0: until EAGAIN,
    # asyncio's and Go's accept loops; 1: one, then back to the wait). The queueing model reads it as the batch.
    own_batch: int = 1
    # A worker sleeps once per connection it is woken for (the built-in workers read nothing): voluntary
    # context switches per connection then count the workers one connection woke. A server that also
    # sleeps waiting for the request (nginx, gunicorn) breaks that, so for it they are not wakeups.
    switches_are_wakeups: bool = False
    # Its empty wakeups are its own timer's (accept-mutex's retry delay), not a connection's.
    timed_waits: bool = False
    # The server's own settings that select this mode, as written in its config or command line: each
    # `KNOB VALUE`, `KNOB = VALUE` or `KNOB: VALUE` (`knob` reads the KNOB). Two modes' settings of one knob
    # are alternatives; a mode names every knob its mechanism depends on, and one it does not name has no
    # effect on it (nginx's reuseport names its listen, not accept_mutex). `inspect` offers the knobs that
    # differ from the mode it sees.
    settings: tuple[str, ...] = ()
    # The built-in mode `inspect` sees when a running server uses this one (what /proc shows: a wait call, an
    # epoll's flags, one socket or several); None: this mode's own name (the built-in modes).
    seen_as: Mechanism | None = None
    # The dispatch discipline analysis/model_check.py simulates, when `queue` and `model` cannot say it
    # (analysis/queueing.py's names); None: read from them.
    discipline: str | None = None
    # Kept connections (several requests each) wait in the worker's own wait beside the listener (True), or
    # each is served to its end before the worker accepts again (False: a blocking accept, Apache prefork):
    # then connections beyond the workers wait, unserved, until one of the held ones closes.
    multiplexes: bool = True

    @property
    def mechanism(self) -> str:
        """This mode in the tool's own vocabulary, as `inspect` names it from /proc."""
        return self.seen_as or self.name

    def knobs(self) -> dict[str, tuple[str, ...]]:
        """Its settings by knob, in their order: {"accept_mutex": ("accept_mutex on;",)}."""
        knobs: dict[str, tuple[str, ...]] = {}
        for setting in self.settings:
            knobs[knob(setting)] = (*knobs.get(knob(setting), ()), setting)
        return knobs


class LockFirst(NamedTuple):
    """A lock a kind's workers take before they wait on their listeners, which /proc cannot always show: a lock
    that is free, or held by a worker busy between its wakeup and its accept, has no thread sleeping in it. A
    process of `threads` threads holding at least `listeners` of its namespace's listening sockets takes it (the
    layout /proc does show); `why` says so in the reading (experiments/inspect)."""

    why: str
    threads: int
    listeners: int

    def applies(self, threads: int, listeners: int) -> bool:
        return threads == self.threads and listeners >= self.listeners

    def among(self, listening: frozenset[int]) -> Callable[[int, frozenset[int]], bool]:
        """Whether a process of so many threads, holding these sockets, takes the lock first: its listeners are
        counted among `listening`, every listener of its network namespace (inspect --port knows only the
        port's, and a second listener may be on another)."""
        return lambda threads, sockets: self.applies(threads, len(sockets & listening))


def knob(setting: str) -> str:
    """What a setting sets: its first word, up to a space, `=` or `:` (`accept_mutex on;`: accept_mutex,
    `thunder-lock = true`: thunder-lock, `num-threads: N`: num-threads, `--mode epoll`: --mode)."""
    return re.split(r"[\s=:]", setting.strip(), maxsplit=1)[0]


class KindOption(NamedTuple):
    """A setting only some kinds read, declared by each kind that reads it (ServerKind.options): the
    ServerSpec field it sets (a result file stores it by that name), its command-line flag and help, and
    what it may be. `duration`: the flag takes a duration (500ms) and the field holds milliseconds.
    A server or mode that does not read it refuses it when set (servers/kind_option_checks.py): `whose` names
    who reads it in that line ("the built-in fd-pass mode's"), `modes` the modes that read it, of the kinds that
    declare it (an option only some of a kind's modes use; (): each of their modes), and `hints` what to say
    instead to a kind that is asked ((kind, sentence) pairs). The command line's options and the checks are
    built from the kinds' declarations (servers/registry.py)."""

    field: str
    flag: str
    help: str
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()
    duration: bool = False
    whose: str = ""
    modes: tuple[str, ...] = ()
    hints: tuple[tuple[str, str], ...] = ()

    def check(self, value: object) -> None:
        """PlanError unless `value` is one this option may have."""
        if self.choices:
            if value not in self.choices:
                raise PlanError(f"{self.flag} is one of {', '.join(self.choices)}, got {value!r}")
            return
        unit = "ms" if self.duration else ""
        check_range(self.flag, value, self.low, self.high, unit)


# The words several kinds' cures share: how a listener per worker splits a pool, what an idle timeout does
# to it, and a server that keeps no connection past its answer.
BY_HASH = (
    "the kernel picks the worker by a hash of the connection's addresses and ports, busy or not: a pool "
    "opened at idle is spread about evenly, with chance's spread, and nothing moves a connection afterwards"
)
IDLE_CLOSE = (
    "closes a connection idle this long after an answer; a pool busy enough never reaches it, and one that "
    "does is reopened, and placed again by the accept mode"
)
CLOSES_EACH = "no connection outlives its request, and every request is placed again by the accept mode"


def redraws(what: str) -> str:
    """What a server's limit on a connection's life does to the split: `what` the limit is, then why."""
    return (
        f"{what}; the client opens a new connection, which the accept mode places again: the split is "
        "redrawn that often instead of fixed for the connection's life"
    )


class ServerKind:
    """What serves. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: `--server NAME` can start it (attached and remote servers are found, not started)
    launched: ClassVar[bool] = True
    #: its own account of who served what, checked against ours (None: it keeps none)
    witness: ClassVar[str | None] = None
    #: its own default for --accept-batch (0: accept until EAGAIN)
    default_accept_batch: ClassVar[int] = 0
    #: the settings only some kinds read that this one does (KindOption), in the order --help lists them
    options: ClassVar[tuple[KindOption, ...]] = ()
    #: the default mode when --mode is not given: epoll where it has one, else its first
    preferred_mode: ClassVar[str] = DEFAULT_MODE
    #: a server whose number of workers is its own, not a setting (Caddy: one process, whose Go threads take
    #: turns running its one accept loop): --workers does not apply, and every spec of it has this many
    fixed_workers: ClassVar[int | None] = None
    #: how `inspect` recognises a running server of this kind: its process name, or a word of its command
    #: line's first arguments (`python -m gunicorn`, `nginx: worker process`)
    process_names: ClassVar[tuple[str, ...]] = ()
    #: the process titles its helpers start with, children of its master that serve no connection (nginx's
    #: cache manager and loader): not counted as workers when a master is attached by pid (registry.HELPERS)
    helpers: ClassVar[tuple[str, ...]] = ()
    #: its workers are the threads of one process, each accepting for itself (HAProxy's nbthread), so
    #: `observe` counts per thread; other kinds' threads (a pool, Go's runtime) are not workers
    threads_are_workers: ClassVar[bool] = False
    #: whose voluntary context switches a worker's 'sleeps' count, as its reports' legend says it: the main thread's
    #: (/proc/PID/status) unless the kind counts others (Puma: its server thread's, its wakeups; attached: every one);
    #: None: the worker's own, a process of one thread (the built-in workers)
    sleeps: ClassVar[str | None] = "each worker's main thread alone"
    #: each serving thread runs an event loop of its own, whose epoll watches the listener, beside threads that
    #: serve none (h2o's num-threads and its timer thread): one server per such epoll, to the queueing model
    loops_are_workers: ClassVar[bool] = False
    #: one thread of each process runs every request (Node's and uvicorn's event loop, an nginx worker): its
    #: other threads (libuv's pool, a logger) serve none, so one process is one server to the queueing model
    serves_on_one_thread: ClassVar[bool] = False
    #: how many connections each worker serves at once (the latency model's one a wakeup and its accept gaps as the
    #: service, experiments/latency/model_one_at_a_time.py): "one", accepting the next only once the last is served
    #: (Unicorn); "many", an event loop serving all it holds interleaved (nginx, HAProxy), whose few empty accepts
    #: and short accept gaps are its loop's turns, not one connection served each; "one a thread", one where each
    #: worker is one thread, its config deciding (gunicorn's sync worker or gthread, uWSGI with or without threads,
    #: Apache prefork or event); None: not known
    connections_at_once: ClassVar[str | None] = None
    #: its busy loop (--work-iters) is probes/work.py's `spin` run by this interpreter, so its cost can be
    #: timed here before a run; other servers' loops (nginx's LuaJIT) are their own
    spins_here: ClassVar[bool] = False
    #: a lock its workers take before they wait on their listeners, in a mode `inspect` sees as accept-mutex, where
    #: /proc shows no lock while no one waits for it (Apache prefork's accept mutex under a keep-alive load)
    lock_first: ClassVar[LockFirst | None] = None
    #: the names of the threads that wait on a worker's listeners, where its other threads wait in loops of their own
    #: that never had them (Puma's 'puma srv' beside its reactor's epoll): `inspect` takes those others for no
    #: worker's, and any other thread it sees on a listener (Puma's control server, 'puma ctl'). With all busy no
    #: thread waits on the listener, which by layout alone reads as Apache's event children at their limit (idle in
    #: epolls without it); (): any thread may wait on it
    listener_threads: ClassVar[tuple[str, ...]] = ()
    #: the thread pool of each worker in the config this tool writes for it, in words the latency model says beside
    #: workers of several threads (Puma's "Puma's pool of up to 5 threads in each, ..."); None: no pool it sets
    launched_pool: ClassVar[str | None] = None
    #: each worker's pool of threads by the setting that sizes it in this server's own terms, said beside a model that
    #: counts each worker one server where this tool did not write the config (a server of this kind attached by pid,
    #: its program recorded as inspect names it: evidence `program`); None: the general sentence
    pool_setting: ClassVar[str | None] = None
    #: the lock that lets one of a worker's threads compute at a time (CPython's GIL), said with pool_setting; None:
    #: its threads compute at once (C's)
    one_lock: ClassVar[str | None] = None
    #: what `inspect` cannot see in /proc of this kind's settings, by the mechanism it names (nginx's
    #: multi_accept under epoll); said with the mechanism
    unseen: ClassVar[Mapping[str, str]] = {}
    #: a threaded server that hands each accepted connection to another thread's queue (HAProxy's
    #: multi-queue): what `observe` says when it counts threads that accept
    handoff: ClassVar[str | None] = None
    #: why this kind cannot keep a connection open for a load's several requests (its workers answer one
    #: and close it), said when a load asks it to (--requests-per-connection other than 1, --pool); None:
    #: it keeps them (a launched kind's config then lets the client decide when each one closes)
    closes_connections: ClassVar[str | None] = None
    #: why this kind cannot burn --work/--work-iters per request (Caddy: its Caddyfile answers with `respond`);
    #: None: it burns them. Refused where given, and left out of the commands the tool suggests for it
    no_work: ClassVar[str | None] = None
    #: why this kind's listen() takes no backlog from this tool (Caddy's Go and h2o 2.2 ask for the kernel's limit,
    #: net.core.somaxconn, and have no setting for it); None: its config or command line gives --backlog. A
    #: --backlog other than the default is refused: 'run --server caddy --backlog 64' saved 64 as its backlog
    #: while its listener's, read by netlink in the same file, was 4096
    no_backlog: ClassVar[str | None] = None

    #: what changes how the load of its long-lived connections splits over its workers, in the order a
    #: report lists them (experiments/inspect/cures.py assembles them); (): none declared
    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        """What changes how the load of its long-lived connections splits over its workers, in the order a
        report lists them (experiments/inspect/cures.py assembles them); (): none declared. A kind declares
        them in a property of its own, their records (core/cures.py) imported there: made when asked."""
        return ()

    def label(self, spec: ServerSpec) -> str:
        """How reports name a server of this kind: `nginx epoll`."""
        return f"{self.name} {spec.mode}"

    def called(self, modes: Sequence[str] = ()) -> tuple[str, bool]:
        """How a sentence names this kind (`nginx`), or some of its modes (`nginx's epoll mode`), and whether
        that name is plural (its verb then agrees)."""
        if not modes:
            return self.name, False
        return f"{self.name}'s {and_join(modes)} mode{'s' * (len(modes) > 1)}", len(modes) > 1

    def launch_note(self, spec: ServerSpec) -> str | None:
        """What this tool's launch of the kind does that the same server started by a user does not, where a
        result depends on it: one line in each report of a run of it (None: nothing)."""
        return None

    def plain_listener(self, h2c: bool, beside: str) -> str | None:
        """How a plain HTTP/1.1 listener is added beside this kind's TLS one (or its HTTP/2-without-TLS one: `h2c`;
        `beside` names it: 'TLS', 'http2'), in its own config's words, for the advice at a port the load cannot be
        answered on (experiments/target_unanswered.py); None: no words of its own."""
        return None

    def modes(self) -> Mapping[str, ModeInfo]:
        """Every mode, as data: never probes the machine."""
        raise NotImplementedError

    def lock_first_of(self, argv: Sequence[str], pid: int | None = None) -> LockFirst | None:
        """The lock_first of a running server of this kind started with `argv` (`pid`: its process, whose
        environment, root and working directory its config is read with): a kind whose lock is a setting (uWSGI's
        --thunder-lock) reads what it was started with."""
        return self.lock_first

    def attach_refused(self, argv: Sequence[str], port: int, pid: int | None = None) -> str | None:
        """Why no --protocol of this tool is answered by a running server of this kind at `port`, started with `argv`
        (`pid`: its process, whose environment and files its config is read with), said after 'pid P is KIND, ';
        --attach there is refused before any connection (uWSGI's --socket speaks its own binary protocol). None:
        nothing known against it (the default)."""
        return None

    def why_of(self, mode: ModeInfo, argv: Sequence[str], pid: int | None = None) -> str:
        """inspect's 'Why' of a running server of this kind seen as `mode`, started with `argv` (`pid`: its process):
        the mode's own sentence, unless a setting it was started with, which /proc does not show, changes it
        (HAProxy's tune.listener.multi-queue, read from its config)."""
        return mode.why

    def settings_unread(self, argv: Sequence[str], pid: int | None = None) -> str | None:
        """What lock_first_of(argv, pid) could not read of the server's settings, said with inspect's reading (a
        lock set there, not known, leaves busy workers looking like a herd); None: nothing to say."""
        return None

    def handed_on(self, threaded: bool, listeners: int, workers: int, read: HandOffRead | None = None) -> str | None:
        """The handoff note where this kind's threads, sharing a listener, hand what they accept on (observe's
        note and verdict); None where they cannot: processes, a listener per thread (HAProxy's shards), or a config
        read while it ran (`read`, handoff_read's) that turns the hand-off off."""
        if read is not None and read.hands_on is False:
            return None
        return self.handoff if threaded and listeners < workers else None

    def handoff_read(self, argv: Sequence[str], pid: int) -> HandOffRead | None:
        """What a running server of this kind (`pid`, started with `argv`) says in its own config of handing on what
        its threads accept, which /proc does not show (HAProxy's tune.listener.multi-queue): observe reads it while
        the server runs, where handed_on says it may hand on, and saves it; None: nothing to read (the default)."""
        return None

    def missing(self) -> str | None:
        """What to install for this kind to run here, or None."""
        return None

    def unavailable(self, mode: str) -> str | None:
        """Why `mode` cannot run here, or None."""
        return self.missing()

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        """The server a spec names, not yet started. `stamps`: workers keep each accept's time (serve)."""
        raise NotImplementedError

    def mode(self, name: str) -> ModeInfo:
        modes = self.modes()
        try:
            return modes[name]
        except KeyError:
            raise PlanError(
                f"{self.name} has no mode {name!r}; choose one of: {', '.join(modes)} (see 'accept-order modes')"
            ) from None

    def default_mode(self) -> str:
        names = list(self.modes())
        return self.preferred_mode if self.preferred_mode in names else names[0]

    def check(self, spec: ServerSpec) -> None:
        """This kind's own validation of a spec (ServerSpec.validated checks what every kind shares)."""
        self.mode(spec.mode)
        for option in self.options:
            option.check(getattr(spec, option.field))
        if self.no_work and (spec.work_us or spec.work_iters):
            raise PlanError(f"--work and --work-iters do not apply to {self.name}: {self.no_work}")
        if self.no_backlog and spec.backlog not in (None, DEFAULT_BACKLOG):
            raise PlanError(f"--backlog does not apply to {self.name}: {self.no_backlog}")

    def as_found(self, spec: ServerSpec) -> ServerSpec:
        """The spec a run is planned with: what this kind reads of its server as the run is planned added (an
        attached server's listeners' backlogs: servers/attached.py), so that the command line and the Python API,
        whose runs are all planned (servers/registry.py `plan`), hold the same; a spec the tool starts as it is."""
        return spec

    def expectation(self, spec: ServerSpec) -> tuple[str | None, str]:
        """(predicted order model, mechanism) for this run's settings: the mode's own, unless a setting
        changes it (nginx's multi_accept)."""
        info = self.mode(spec.mode)
        return info.model, info.why
