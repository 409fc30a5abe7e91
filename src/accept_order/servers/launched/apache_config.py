"""Apache httpd (Debian's apache2, 2.4) as a server to drive: its accept modes, and the private config the
tool writes for a run.

What each mode sets up, read from /proc here (Linux 6.18, Apache 2.4.71, APR 1.7.2):

- prefork, one `Listen`: every child blocks in accept4() on the one shared socket. Debian's build defines
  SINGLE_LISTEN_UNSERIALIZED_ACCEPT, so with a single listener the accept mutex is never taken.
- prefork-mutex, two `Listen`s (as a server on 80 and 443 has): now the accept mutex serialises the
  children. Debian's default mechanism is pthread (APR_USE_PTHREAD_SERIALIZE): a process-shared robust
  priority-inheriting mutex, so the holder alone waits in epoll_wait on both listeners and every other
  idle child sleeps in FUTEX_LOCK_PI (wchan rt_mutex_schedule), as uWSGI's thunder lock does.
- event (Debian's default MPM): each child has one listener thread that waits in epoll_wait on an epoll of
  its own watching the shared socket without EPOLLEXCLUSIVE, and hands what it accepts to a worker thread
  of the same child: the listener threads are a thundering herd.
- buckets: event with `ListenCoresBucketsRatio R`: online CPUs / R listeners (buckets), each a SO_REUSEPORT
  socket of its own; child slot i listens on bucket i % buckets only.

Every file Apache touches (config, pid file, logs, the handler) lives in the private directory; /etc/apache2
is never read (no Include of Debian's config) and the system service is never started.
"""

from __future__ import annotations

import os
import pwd

from ...core.errors import ServerUnavailable
from ...core.kinds import LockFirst, ModeInfo
from ...core.models import Mechanism, Model
from ...core.spec import ServerSpec
from .installed import installed

PACKAGE = "apt-get install apache2"
MODULE_DIR = "/usr/lib/apache2/modules"
MODULES = {
    "prefork": "mod_mpm_prefork.so",
    "event": "mod_mpm_event.so",
    "lua": "mod_lua.so",
    "authz_core": "mod_authz_core.so",  # without an authorization provider every request is a 500
}
# Kept connections (ServerSpec.keepalive): as many requests on one as the client sends (0: no limit), and
# idle between them (an open loop's) for as long as any run lasts; the client closes them.
KEEPALIVE = "KeepAlive On\nMaxKeepAliveRequests 0\nKeepAliveTimeout 86400"
THREADS_PER_CHILD = 25  # Apache's own default for event: each child's worker threads
#: who the children run as when the tool is root (Apache refuses to serve as root)
USERS = ("www-data", "nobody")
#: every MPM reads ListenCoresBucketsRatio (listen.c): without it one listener, with it the buckets mode
NO_BUCKETS = "ListenCoresBucketsRatio 0 (the default)"

# A child (prefork) or its listener thread (event) accepts one connection per wakeup, and then reads the
# request, which sleeps: no batches, and context switches are not wakeups.
APACHE_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "prefork",
            "mpm_prefork, one Listen: every child blocks in accept() on the shared socket (no accept mutex)",
            "with a single listener Debian's Apache (SINGLE_LISTEN_UNSERIALIZED_ACCEPT) takes no accept mutex: "
            "every prefork child blocks in accept() on the one socket, the kernel queues them FIFO "
            "(prepare_to_wait_exclusive) and wakes the head, so idle children take turns",
            Model.FIFO,
            "shared",
            batches=False,
            multiplexes=False,  # a prefork child serves a kept connection to its end before it accepts again
            settings=("LoadModule mpm_prefork_module", "Listen ADDRESS:PORT (one)", NO_BUCKETS),
            seen_as=Mechanism.BLOCKING,
        ),
        ModeInfo(
            "prefork-mutex",
            "mpm_prefork with two Listens (80 and 443): the accept mutex decides which child waits",
            "with more than one listener prefork children take the accept mutex (Debian's default: a "
            "process-shared priority-inheriting pthread mutex) before waiting: the holder alone waits in "
            "epoll_wait on every listener, the other idle children in FUTEX_LOCK_PI, and each unlock hands "
            "the mutex to the longest waiter, so idle children take turns (no herd)",
            Model.FIFO,
            "shared",
            batches=False,
            multiplexes=False,  # as prefork: one connection per child, served to its end
            settings=(
                "LoadModule mpm_prefork_module",
                "Listen ADDRESS:PORT",
                "Listen ADDRESS:OTHER_PORT",
                "Mutex pthread",
                NO_BUCKETS,
            ),
            seen_as=Mechanism.ACCEPT_MUTEX,
        ),
        ModeInfo(
            "event",
            "mpm_event (Debian's default): a listener thread per child, each in its own epoll on the shared socket",
            "each event child has one listener thread waiting in epoll_wait on an epoll of its own that watches "
            "the shared socket without EPOLLEXCLUSIVE: one connection wakes every idle child's listener thread "
            "(a thundering herd), whichever accepts first hands it to one of its worker threads",
            None,
            "shared",
            herds=True,
            batches=False,
            settings=(
                "LoadModule mpm_event_module",
                f"ThreadsPerChild {THREADS_PER_CHILD}",
                NO_BUCKETS,
            ),
            seen_as=Mechanism.EPOLL_HERD,
        ),
        ModeInfo(
            "buckets",
            "mpm_event with ListenCoresBucketsRatio: a SO_REUSEPORT listener per bucket (online CPUs / ratio)",
            "ListenCoresBucketsRatio R opens online-CPUs / R listening sockets with SO_REUSEPORT and child slot "
            "i waits on socket i mod buckets only, so the kernel picks the bucket by a hash of the connection's "
            "4-tuple, whether or not its children are busy (children sharing a bucket herd on it)",
            Model.HASH,
            "per-worker",
            batches=False,
            settings=(
                "LoadModule mpm_event_module",
                f"ThreadsPerChild {THREADS_PER_CHILD}",
                "ListenCoresBucketsRatio R",
            ),
            seen_as=Mechanism.REUSEPORT,
        ),
    )
}


# prefork.c's SAFE_ACCEPT: with one listener (SINGLE_LISTEN_UNSERIALIZED_ACCEPT) no mutex, with two or more every
# child takes it before its pollset (an epoll watching every listener without EPOLLEXCLUSIVE, waited in only by the
# holder); `Mutex none` is refused for mpm-accept. Under a keep-alive load every child serves a kept connection to
# its end, running, while the mutex sits unused: taken for its pollset's waiter, each looked like a herd worker
# (wrk -c16 at 3 children: no child waiting for the lock in 200 samples). The event MPM's children are threaded.
LOCK_FIRST = LockFirst(
    "Apache prefork's children take the accept mutex before they wait on two or more listeners (known of the kind: "
    "a lock no one waits for is not seen in /proc)",
    threads=1,
    listeners=2,
)


def apache_binary() -> str:
    """The apache2 executable, or ServerUnavailable naming the Debian package."""
    path = installed("apache2")
    if path is None:
        raise ServerUnavailable(f"apache2 is not installed here: {PACKAGE}")
    missing = [m for m in MODULES.values() if not os.path.exists(os.path.join(MODULE_DIR, m))]
    if missing:
        raise ServerUnavailable(f"apache2's modules are missing ({', '.join(missing)}): {PACKAGE}")
    return path


def apache_missing() -> str | None:
    try:
        apache_binary()
    except ServerUnavailable as exc:
        return str(exc)
    return None


def online_cpus() -> int:
    """What Apache counts buckets from: sysconf(_SC_NPROCESSORS_ONLN), not this process's affinity."""
    return max(1, os.sysconf("SC_NPROCESSORS_ONLN"))


def bucket_ratio(workers: int, cpus: int) -> int:
    """The smallest ListenCoresBucketsRatio that gives no more buckets than workers: Apache starts at least
    one child per bucket (prefork_run/event_run raise StartServers and MaxRequestWorkers to it)."""
    ratio = 1
    while cpus // ratio > max(1, workers):
        ratio += 1
    return ratio


def buckets(workers: int, cpus: int) -> int:
    """How many listeners ListenCoresBucketsRatio makes (listen.c: cpus / ratio, 1 unless that is above 1)."""
    return max(1, cpus // bucket_ratio(workers, cpus))


def run_as() -> tuple[str, str] | None:
    """(user, group) the children switch to when we are root; None when not root (they stay as we are)."""
    if os.geteuid() != 0:
        return None
    import grp

    for name in USERS:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        try:
            group = grp.getgrgid(entry.pw_gid).gr_name
        except KeyError:
            group = f"#{entry.pw_gid}"
        return name, group
    raise ServerUnavailable(f"no user to run Apache's children as (none of {', '.join(USERS)} exists)")


def handler_lua(work_us: int, work_iters: int) -> str:
    """The handler: the optional work, then `worker PID` (the child's pid: /proc/self is the process, in any
    thread). The work is timed by the wall clock (r:clock(), µs): os.clock() is the whole process's CPU,
    which an event child's other threads would advance too."""
    return f"""-- written by accept-order for one run; removed when it ends
local pid
function handle(r)
    if not pid then
        local f = io.open("/proc/self/stat")
        pid = f:read("*n")
        f:close()
    end
    local i = 0
    for _ = 1, {work_iters} do i = i + 1 end
    if {work_us} > 0 then
        local stop = r:clock() + {work_us}
        while r:clock() < stop do i = i + 1 end
    end
    r.content_type = "text/plain"
    r:puts("worker " .. pid .. "\\n")
    return apache2.OK
end
"""


def render_config(spec: ServerSpec, mode: ModeInfo, port: int, other_port: int, directory: str) -> str:
    """httpd.conf for one run; every path in `directory`. `other_port`: prefork-mutex's second listener."""
    address = f"[{spec.host}]" if ":" in spec.host else spec.host
    workers = spec.workers
    prefork = mode.name.startswith("prefork")
    mpm = "prefork" if prefork else "event"
    listen = f"Listen {address}:{port}\n"
    if mode.name == "prefork-mutex":
        listen += f"Listen {address}:{other_port}\nMutex pthread mpm-accept\n"
    if mode.name == "buckets":
        listen += f"ListenCoresBucketsRatio {bucket_ratio(workers, online_cpus())}\n"
    if prefork:
        # exactly `workers` children, none killed for being idle, none added (ServerLimit caps it)
        sizing = (
            f"StartServers {workers}\nServerLimit {workers}\nMaxRequestWorkers {workers}\n"
            f"MinSpareServers 1\nMaxSpareServers {workers}\n"
        )
    else:
        threads = workers * THREADS_PER_CHILD
        # event keeps MaxSpareThreads / buckets idle threads per bucket and ends a child beyond that: a limit
        # of every thread in every bucket ends none, however the children fall into buckets
        spare = threads * (buckets(workers, online_cpus()) if mode.name == "buckets" else 1)
        sizing = (
            f"StartServers {workers}\nServerLimit {workers}\nThreadsPerChild {THREADS_PER_CHILD}\n"
            f"ThreadLimit {THREADS_PER_CHILD}\nMaxRequestWorkers {threads}\n"
            f"MinSpareThreads 1\nMaxSpareThreads {spare}\n"
        )
    user = run_as()
    identity = f"User {user[0]}\nGroup {user[1]}\n" if user else ""
    return f"""# written by accept-order for one run; removed when it ends
ServerRoot {directory}
DefaultRuntimeDir {directory}
PidFile {directory}/httpd.pid
ErrorLog {directory}/error.log
LogLevel notice
LoadModule mpm_{mpm}_module {MODULE_DIR}/{MODULES[mpm]}
LoadModule lua_module {MODULE_DIR}/{MODULES["lua"]}
LoadModule authz_core_module {MODULE_DIR}/{MODULES["authz_core"]}
{identity}ServerName accept-order
{listen}ListenBacklog {spec.backlog}
{sizing}MaxConnectionsPerChild 0
{KEEPALIVE if spec.keepalive else "KeepAlive Off"}
# the witness: the child's pid, the client's port, the method (a request of ours or Apache's own) and the
# requests served on the connection before this one (%k: 0 for its first)
LogFormat "%P %{{remote}}p %m %k" accept_order
CustomLog {directory}/access.log accept_order
LuaScope thread
LuaMapHandler ^/ {directory}/handler.lua handle
"""
