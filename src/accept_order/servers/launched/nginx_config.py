"""nginx as a server to drive: its accept modes, and the private config the tool writes for a run.

Every file nginx touches (config, pid file, logs, temp files) lives in a private temporary directory:
the system's nginx config, pid file and logs are never read or written.
"""

from __future__ import annotations

import os
import resource

from ...core.errors import ServerUnavailable
from ...core.kinds import ModeInfo
from ...core.models import Model
from .installed import installed

MODULE_DIR = "/usr/lib/nginx/modules"
MODULES = ("ndk_http_module.so", "ngx_http_lua_module.so")
PACKAGES = "nginx-light libnginx-mod-http-lua"


def _mode(name: str, summary: str, why: str, model: Model, events: str = "", queue: str = "shared") -> ModeInfo:
    # What each mode depends on (ModeInfo.settings): reuseport its listen alone, since nginx adds a reuseport
    # listener to every worker's epoll whatever accept_mutex says (ngx_event_process_init); the others a
    # listen without reuseport, and accept_mutex.
    listen = "listen ADDRESS:PORT reuseport;" if queue == "per-worker" else "listen ADDRESS:PORT; (no reuseport)"
    # nginx also sleeps waiting for the request: its context switches are not wakeups
    return ModeInfo(name, summary, why, model, queue, settings=(*([events] if events else []), listen))


NGINX_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        _mode(
            "epoll",
            "nginx's default on Linux: each worker's epoll holds the shared listener with EPOLLEXCLUSIVE",
            "each worker adds the shared listener to its own epoll with EPOLLEXCLUSIVE and the kernel wakes the "
            "first idle one in the socket's wait queue; since nginx 1.21.6 a worker re-adds its listener at its "
            "first accept and every 16 after (ngx_reorder_accept_events), which moves it to the back of the "
            "queue: one connection per worker at start, then runs of 16",
            Model.RUNS_OF_16,
            "accept_mutex off;",
        ),
        _mode(
            "accept-mutex",
            "accept_mutex on: only the worker holding a lock in shared memory has the listener in its epoll",
            "with accept_mutex on only the worker that holds the lock in shared memory listens; the others try "
            "again after accept_mutex_delay (500 ms), and an idle holder takes the lock back first, so "
            "sequential connections keep going to one worker",
            Model.LOCK_HOLDER,
            "accept_mutex on;",
        ),
        _mode(
            "reuseport",
            "listen ... reuseport: one SO_REUSEPORT listener per worker",
            "with reuseport each nginx worker has its own listening socket and accept queue, and the kernel picks "
            "the queue by a hash of the connection's 4-tuple, whether or not that worker is busy",
            Model.HASH,
            queue="per-worker",
        ),
    )
}


MULTI_ACCEPT_WHY = (
    "with multi_accept on a worker accepts until EAGAIN, and that path returns before the every-16 re-add "
    "(ngx_reorder_accept_events), so the worker at the head of the socket's exclusive wait queue keeps every "
    "sequential connection; which worker that is depends on how the start-up went"
)


def expectation(mode: ModeInfo, multi_accept: bool) -> tuple[str | None, str]:
    """(predicted order model, mechanism) of a mode under this run's multi_accept setting: with multi_accept
    on, epoll predicts no idle order (one worker keeps them all, but which one varies)."""
    if mode.name == "epoll" and multi_accept:
        return None, MULTI_ACCEPT_WHY
    return mode.model, mode.why


def nginx_binary() -> str:
    """The nginx executable, or ServerUnavailable naming the Debian packages to install."""
    path = installed("nginx")
    if path is None:
        raise ServerUnavailable(f"nginx is not installed here: apt-get install {PACKAGES}")
    missing = [m for m in MODULES if not os.path.exists(os.path.join(MODULE_DIR, m))]
    if missing:
        raise ServerUnavailable(f"nginx's Lua module is missing ({', '.join(missing)}): apt-get install {PACKAGES}")
    return path


# A kept connection's life is the client's to end (after its K requests, or at the run's end): nginx's own
# limits on it (1000 requests, an hour, 75 s idle by default) are lifted past any run's. keepalive_requests
# is an ngx_uint_t; an open loop's connection may idle long between its requests.
KEEPALIVE = "keepalive_requests 1000000000; keepalive_time 24h; keepalive_timeout 24h;"

MIN_WORKER_CONNECTIONS = 1024  # nginx's default is 512: room for a few by hand (serve) and health checks
CONNECTION_MARGIN = 64  # a worker's connection slots besides the load's: its listeners (one per worker
# with reuseport), and what nginx keeps for itself
FILE_MARGIN = 64  # a worker's descriptors besides its connections: logs, the config's files, epoll


def worker_connections(in_flight: int, workers: int) -> int:
    """worker_connections for a load holding `in_flight` connections open at once. Per worker, and any
    one worker may hold them all (accept_mutex hands a whole burst to the lock holder); a worker out of them
    logs "worker_connections are not enough" and drops connections (the report says so)."""
    return max(MIN_WORKER_CONNECTIONS, in_flight + workers + CONNECTION_MARGIN)


def worker_rlimit(connections: int) -> str:
    """worker_rlimit_nofile when the workers' inherited open-file limit would not hold `connections`:
    raised up to the hard limit (beyond it only with CAP_SYS_RESOURCE, which the master may lack; a worker
    then meets EMFILE, logs "Too many open files", and the report says so)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = connections + FILE_MARGIN
    if soft == resource.RLIM_INFINITY or need <= soft:
        return ""
    return f"worker_rlimit_nofile {need if hard == resource.RLIM_INFINITY else min(need, hard)};\n"


def cpu_masks(cpus: tuple[int, ...], workers: int) -> str:
    """worker_cpu_affinity's bitmasks: worker i on cpus[i % len(cpus)], like the built-in workers' pinning."""
    width = max(cpus) + 1
    return " ".join(format(1 << cpus[i % len(cpus)], f"0{width}b") for i in range(workers))


def lua_handler(work_us: int, work_iters: int) -> str:
    """The seed's handler: an optional busy loop, then a line naming the worker."""
    lines = ["local i = 0"]
    if work_iters:
        lines.append(f"for names = 1, {work_iters} do i = i + 1 end")  # seed 000's loop, as written there
    if work_us:
        lines.append(f"local stop = os.clock() + {work_us / 1e6!r}")
        lines.append("while os.clock() < stop do i = i + 1 end")
    lines.append('ngx.say("worker ", ngx.worker.pid())')
    return "\n        ".join(lines)


def render_config(
    directory: str,
    mode: ModeInfo,
    *,
    host: str,
    port: int,
    workers: int,
    backlog: int,
    multi_accept: bool,
    cpus: tuple[int, ...],
    work_us: int,
    work_iters: int,
    mutex_delay_ms: float = 500.0,
    in_flight: int = 0,
    keepalive: bool = False,
) -> str:
    """nginx.conf for one run; every path in `directory`. `keepalive`: the load keeps its connections for
    several requests (or the whole run), and nginx must not close them first (KEEPALIVE)."""
    address = f"[{host}]" if ":" in host else host
    listen = f"{address}:{port}{' reuseport' if mode.queue == 'per-worker' else ''} backlog={backlog}"
    affinity = f"worker_cpu_affinity {cpu_masks(cpus, workers)};\n" if cpus else ""
    modules = "".join(f"load_module {os.path.join(MODULE_DIR, m)};\n" for m in MODULES)
    events = " ".join(s for s in mode.settings if s.startswith("accept_mutex "))
    connections = worker_connections(in_flight, workers)
    return f"""# written by accept-order for one run; removed when it ends
{modules}daemon off;
master_process on;
worker_processes {workers};
{affinity}{worker_rlimit(connections)}pid {directory}/nginx.pid;
error_log {directory}/error.log notice;
events {{
    worker_connections {connections};
    use epoll;
    multi_accept {"on" if multi_accept else "off"};
    accept_mutex_delay {max(1, round(mutex_delay_ms))}ms;
    {events}
}}
http {{
    log_format accept_order '$pid $remote_port $msec $connection_requests';
    access_log {directory}/access.log accept_order;
    # Every temp path too: left to its compiled-in default, nginx creates /var/lib/nginx/... when missing.
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    {KEEPALIVE if keepalive else "keepalive_timeout 30s;"}
    server {{
        listen {listen};
        location / {{
            default_type text/plain;
            content_by_lua_block {{
        {lua_handler(work_us, work_iters)}
            }}
        }}
    }}
}}
"""
