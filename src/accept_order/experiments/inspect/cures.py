"""What changes the split of load when one worker holds most long-lived connections (keep-alive pools,
HTTP/2, WebSockets), per server kind. An accept mode decides only where a connection lands when it is
accepted, and a long-lived one stays there: the cures are also the server's limits on a connection's life
(a connection that ends is opened again and placed again) and balancers that count what each worker holds.

Each setting was checked against the installed server (its config check, help, source) or its own
documentation; what a row says that the documentation does not was run here (the row says so). A row's
`measure` is the accept-order command that measures it on a pool load, or says why there is none yet
(then, after a colon, the nearest command: the client's side of a limit). `PID` and `PORT` in a command
stand for the running server's.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass

from ...core.kinds import ServerKind
from ...core.spec import DEFAULT_KIND
from ...servers.builtin import BuiltinKind
from ...servers.launched.apache import ApacheKind
from ...servers.launched.caddy import CaddyKind
from ...servers.launched.granian import GranianKind
from ...servers.launched.gunicorn import GunicornKind
from ...servers.launched.h2o import H2oKind
from ...servers.launched.haproxy import HaproxyKind
from ...servers.launched.lighttpd import LighttpdKind
from ...servers.launched.nginx import NginxKind
from ...servers.launched.node import NodeKind
from ...servers.launched.puma import PumaKind
from ...servers.launched.unicorn import UnicornKind
from ...servers.launched.uvicorn import UvicornKind
from ...servers.launched.uwsgi import UwsgiKind
from ...servers.remote import RemoteKind

COMMAND = "accept-order "  # where a measure's command starts
NONE_OF_ITS_OWN = "no setting of its own"  # the setting of a kind's one row when it has none
NONE_KNOWN = "no setting known"  # a server this tool does not know, or one attached (of any kind)
# The pool load: -c connections opened one after another at idle, then requests over them (K requests per
# connection, 0: it lives for the whole run), each request 1 ms of CPU.
CONCURRENCY = 32
RESTARTS = 100  # the client's K that stands for a server's limit of 100 requests per connection


@dataclass(frozen=True)
class Cure:
    """One thing that changes the split of load on long-lived connections of one server kind. `setting`:
    the exact configuration line or command-line flag (NONE_OF_ITS_OWN, NONE_KNOWN: a row saying why there
    is none); `what`: what it does to that split; `measure`: the accept-order command that measures it on
    a pool load, or a sentence saying why there is none (and then, after a colon, the nearest one);
    `available`: False when what it needs is not installed here, `reason` saying what."""

    setting: str
    what: str
    measure: str
    available: bool = True
    reason: str = ""

    @property
    def command(self) -> str | None:
        """The accept-order command line in `measure`, or None where it has none."""
        at = self.measure.find(COMMAND)
        return self.measure[at:] if at >= 0 else None


Measure = Callable[[ServerKind], str]


@dataclass(frozen=True)
class _Row:
    """A cure as declared below: `measure` made for the kind (or said as it is); `mode`: the kind's mode it
    is (None: a setting /proc cannot see); `visible`: /proc shows it whole in that mode (not fd-pass's
    policy), so that it is left out when it is all /proc shows: set already."""

    setting: str
    what: str
    measure: Measure | str
    mode: str | None = None
    visible: bool = True


def pool(kind: ServerKind, modes: str, requests: int = 0, extra: str = "") -> str:
    """The command that measures `modes` (a --modes list) of `kind` on the pool load (one request per
    connection for a kind that closes each after its answer: it refuses a pool, closes_connections)."""
    server = "" if kind.name == DEFAULT_KIND else f" --server {kind.name}"
    kept, per = ("", "") if kind.closes_connections else (" --pool", f" --requests-per-connection {requests}")
    return f"accept-order latency{server} --modes {modes}{extra}{kept} -c {CONCURRENCY}{per} --work 1ms --duration 10s"


def modes(*names: str, extra: str = "") -> Measure:
    """Measured as the kind's modes `names` side by side."""
    return lambda kind: pool(kind, ",".join(names), extra=extra)


def client_side(name: str, requests: int = RESTARTS) -> Measure:
    """A limit the tool does not set on the server it launches: the client closing each connection after
    `requests` requests redraws the split as that limit would."""
    return lambda kind: (
        f"the tool does not pass {name} to the {kind.name} it launches yet; a client that closes after "
        f"{requests} request{'s' if requests > 1 else ''} redraws the split as the server would (compare "
        f"--requests-per-connection 0): {pool(kind, kind.default_mode(), requests)}"
    )


def idle(name: str) -> str:
    return (
        "not measured: no load of this tool leaves a connection idle (each sends its next request as soon as "
        f"it has its answer), so {name} never fires under it"
    )


HASH = (
    "the kernel picks the worker by a hash of the connection's addresses and ports, busy or not: a pool "
    "opened at idle is spread about evenly, with chance's spread, and nothing moves a connection afterwards"
)
IDLE = (
    "closes a connection idle this long after an answer; a pool busy enough never reaches it, and one that "
    "does is reopened, and placed again by the accept mode"
)
CLOSES = "no connection outlives its request, and every request is placed again by the accept mode"


def redraws(what: str) -> str:
    return (
        f"{what}; the client opens a new connection, which the accept mode places again: the split is "
        "redrawn that often instead of fixed for the connection's life"
    )


ROWS: dict[type[ServerKind], tuple[_Row, ...]] = {
    BuiltinKind: (
        _Row(
            "--mode fd-pass --policy least-busy",
            "one acceptor process accepts every connection and hands it to the worker holding the fewest open "
            "ones it was handed (a kept connection counts until it closes; ties go round): a pool is spread "
            "over the workers by count, whoever was idle first",
            modes("epoll", "fd-pass", extra=" --policy least-busy"),
            "fd-pass",
            visible=False,
        ),
        _Row(
            "--mode reuseport", f"a SO_REUSEPORT listener per worker: {HASH}", modes("epoll", "reuseport"), "reuseport"
        ),
    ),
    NginxKind: (
        _Row(
            "keepalive_requests 100;",
            redraws("nginx closes a connection after this many requests on it (1000 by default since 1.19.10)"),
            client_side("keepalive_requests"),
        ),
        _Row(
            "keepalive_time 1m;",
            redraws(
                "nginx 1.19.10+ closes a connection after the request in progress once it has been open "
                "this long (1h by default)"
            ),
            client_side("keepalive_time"),
        ),
        _Row("keepalive_timeout 5s;", IDLE, idle("keepalive_timeout")),
        _Row(
            "listen ADDRESS:PORT reuseport;",
            f"a SO_REUSEPORT listener per worker: {HASH}",
            modes("epoll", "reuseport"),
            "reuseport",
        ),
    ),
    HaproxyKind: (
        _Row(
            "tune.listener.multi-queue on",
            "HAProxy's default since 2.3: the thread that accepts hands each connection to whichever of two "
            "threads holds fewer of the listener's connections (its accept queue counted), so a pool is "
            "spread over the threads by count, whichever thread was woken",
            lambda kind: (
                "the tool runs HAProxy with it on (threads) and cannot turn it off; against a socket "
                "per thread: " + pool(kind, "threads,shards")
            ),
            "threads",
        ),
        _Row(
            "bind ADDRESS:PORT thread T (one per thread)",
            f"a SO_REUSEPORT socket per thread, which only that thread accepts from: {HASH}",
            modes("threads", "shards"),
            "shards",
        ),
        _Row(
            "option httpclose",
            f"in the frontend: HAProxy closes each client connection after its answer: {CLOSES} (HAProxy 2.6 "
            "has no other limit on requests per client connection)",
            client_side("option httpclose", requests=1),
        ),
        _Row("timeout http-keep-alive 5s", IDLE, idle("timeout http-keep-alive")),
    ),
    ApacheKind: (
        _Row(
            "MaxKeepAliveRequests 100",
            redraws(
                "with KeepAlive On, Apache closes a connection after this many requests on it (100 by "
                "default, 0: no limit)"
            ),
            client_side("MaxKeepAliveRequests"),
        ),
        _Row("KeepAliveTimeout 5", IDLE, idle("KeepAliveTimeout")),
        _Row(
            "KeepAlive Off",
            f"Apache closes every connection after its answer: {CLOSES}",
            client_side("KeepAlive Off", requests=1),
        ),
        _Row(
            "ListenCoresBucketsRatio R",
            f"a SO_REUSEPORT listener per bucket of children: {HASH}",
            modes("event", "buckets"),
            "buckets",
        ),
    ),
    LighttpdKind: (
        _Row(
            "server.max-keep-alive-requests = 100",
            redraws("lighttpd closes a connection after this many requests on it"),
            client_side("server.max-keep-alive-requests"),
        ),
        _Row("server.max-keep-alive-idle = 5", IDLE, idle("server.max-keep-alive-idle")),
    ),
    H2oKind: (
        _Row(
            "http1-request-timeout: 10",
            "h2o 2.2's timeout for an HTTP/1 request to come, which also closes a keep-alive connection idle "
            "that long (set to 1 here: closed 1 s after its answer); a busy pool never reaches it, and a "
            "reopened connection is placed again (h2o 2.2 has no limit on requests per connection, no "
            "SO_REUSEPORT)",
            idle("http1-request-timeout"),
        ),
        _Row("http2-idle-timeout: 10", f"for HTTP/2: {IDLE}", idle("http2-idle-timeout")),
    ),
    CaddyKind: (
        _Row(
            NONE_OF_ITS_OWN,
            "Caddy is one process whose accept loop and connections are goroutines that Go's scheduler runs "
            "on any of its threads: no worker holds connections of its own, so there is no split to change "
            "(`servers { timeouts { idle 30s } }` closes idle connections)",
            modes("netpoller"),
        ),
    ),
    NodeKind: (
        _Row(
            "server.maxRequestsPerSocket = 100",
            redraws(
                "Node 16.10+ (0 by default: no limit) answers the request that reaches it with Connection: "
                "close, and any later one on that connection with 503, so a client that honours it closes"
            ),
            client_side("server.maxRequestsPerSocket"),
        ),
        _Row("server.keepAliveTimeout = 5000", f"{IDLE} (ms; 5000 by default)", idle("server.keepAliveTimeout")),
        _Row(
            "cluster.schedulingPolicy = cluster.SCHED_RR",
            "Node's default: the primary accepts every connection and hands it to the workers in turn (to one "
            "that has taken its last one), so a pool opened at idle is spread by turns, whatever each worker "
            "already holds (Node 20 has no reusePort: a second listener got EADDRINUSE here)",
            modes("sched-none", "sched-rr"),
            "sched-rr",
        ),
    ),
    GunicornKind: (
        _Row(
            'worker_class = "sync"',
            f"gunicorn's default worker closes every connection after its answer (it ignores keepalive): {CLOSES}",
            modes("select", "reuseport"),
        ),
        _Row(
            "keepalive = 5",
            f"{IDLE} (gthread and gevent workers only; 2 s by default)",
            "not measured: the tool runs gunicorn's sync workers, which ignore keepalive",
        ),
        _Row(
            "reuse_port = True",
            f"gunicorn 23+: each worker opens its own SO_REUSEPORT socket: {HASH}",
            modes("select", "reuseport"),
            "reuseport",
        ),
    ),
    UwsgiKind: (
        _Row(
            "http-socket = ADDRESS:PORT",
            f"uWSGI closes each connection after its answer (run here: a second request on it found it closed): "
            f"{CLOSES}",
            modes("default", "thunder-lock"),
        ),
        _Row(
            "http11-socket = ADDRESS:PORT",
            "keeps connections alive, and a worker serves one at a time for as long as it stays open (run here: "
            "with one worker a second connection had no answer in 3 s while the first was open): each "
            "long-lived connection holds a whole worker, and the rest wait in the listen queue",
            "not measured: the tool does not pass http11-socket to the uwsgi it launches yet",
        ),
        _Row(
            "reuse-port = true",
            "sets SO_REUSEPORT on the master's one socket, which every worker still shares (uWSGI's help: BSD "
            "only): no listener per worker, no split by hash",
            modes("default", "reuse-port"),
            "reuse-port",
        ),
    ),
    UvicornKind: (
        _Row(
            "--timeout-keep-alive 5",
            f"{IDLE} (5 s by default; uvicorn has no limit on requests per connection, no socket per worker)",
            idle("--timeout-keep-alive"),
        ),
    ),
    GranianKind: (
        _Row(
            "--no-http1-keep-alive",
            f"granian closes each HTTP/1 connection after its answer: {CLOSES}",
            client_side("--no-http1-keep-alive", requests=1),
        ),
        _Row("--workers N", f"granian 2.8+: a SO_REUSEPORT socket per worker: {HASH}", modes("reuseport"), "reuseport"),
    ),
    PumaKind: (
        _Row(
            "max_fast_inline 10",
            redraws(
                "after this many requests on a connection (10 by default), a worker whose threads are all "
                "busy while another connection waits on the listener answers with Connection: close "
                "(puma/request.rb)"
            ),
            client_side("max_fast_inline", requests=10),
        ),
        _Row("persistent_timeout 20", f"{IDLE} (20 s by default)", idle("persistent_timeout")),
        _Row(
            "wait_for_less_busy_worker 0.005",
            "a worker with a busy thread waits up to 5 ms before it accepts, so an idle worker takes a new "
            "connection first: it moves reopened connections under load, not a pool opened at idle",
            modes("cluster", "less-busy"),
            "less-busy",
        ),
    ),
    UnicornKind: (
        _Row(
            NONE_OF_ITS_OWN,
            f"Unicorn answers every request with Connection: close (unicorn/http_response.rb): {CLOSES} (its "
            "listen :reuseport is for Unicorns started apart, not for its workers)",
            modes("prefork"),
        ),
    ),
}

ENVOY = _Row(
    "connection_balance_config: {exact_balance: {}}",
    "Envoy's listener balancer: under a lock, each connection goes to the worker thread holding the fewest, "
    "so the counts stay nearly exactly even (Envoy's advice for a few long-lived connections)",
    "the tool does not launch Envoy; one started by hand is measured attached: accept-order latency --attach "
    f"PID --port PORT --protocol http --pool -c {CONCURRENCY} --requests-per-connection 0 --duration 10s",
)
UNKNOWN = (
    _Row(
        NONE_KNOWN,
        "a server this tool does not know: its own limit on requests per connection or on a connection's life "
        "(nginx's keepalive_requests, Apache's MaxKeepAliveRequests, ...) redraws the split each time a "
        "connection ends, and a listener per worker (SO_REUSEPORT) spreads a pool by a hash",
        "the client's side of such a limit, on the running server: accept-order latency --attach PID --port "
        f"PORT --protocol http --pool -c {CONCURRENCY} --requests-per-connection {RESTARTS} --duration 10s",
    ),
    ENVOY,
)
REMOTE = (
    _Row(
        NONE_OF_ITS_OWN,
        "a server on another host, known by its address only: the rows of the kind it is apply (inspect it "
        "on its host)",
        "not measured: only `run --target` drives a server known by its address, and not with a pool",
    ),
    ENVOY,
)


def long_lived_cures(kind: ServerKind | None, seen: tuple[str, ...]) -> tuple[Cure, ...]:
    """What changes the split of load on long-lived connections of a server of `kind` (None: one this tool
    does not know), whose modes that /proc cannot tell from what it shows are `seen` (empty: not known).
    A cure that is a mode, seen whole in /proc, is left out when it is all /proc shows: set already."""
    if kind is None or not kind.launched:
        rows = REMOTE if isinstance(kind, RemoteKind) else UNKNOWN
        envoy = None if shutil.which("envoy") else "Envoy is not installed here"
        return tuple(
            Cure(r.setting, r.what, str(r.measure), *((False, envoy) if r is ENVOY and envoy else ())) for r in rows
        )
    cures = []
    for row in ROWS.get(type(kind), ()):
        if row.visible and row.mode is not None and seen == (row.mode,):
            continue
        what = row.what
        if row.mode in seen:
            cannot = "them apart" if len(seen) > 1 else "the rest of it"
            what += f" (may be set already: /proc shows {kind.name}'s {' or '.join(seen)}, and cannot tell {cannot})"
        measure = row.measure if isinstance(row.measure, str) else row.measure(kind)
        why = kind.unavailable(row.mode) if row.mode is not None and row.mode in kind.modes() else kind.missing()
        cures.append(Cure(row.setting, what, measure, why is None, why or ""))
    return tuple(cures)
