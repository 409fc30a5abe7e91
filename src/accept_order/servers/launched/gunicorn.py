"""gunicorn (from PyPI, 23 or newer), launched by the tool with sync workers and a generated config.

Its modes are the two ways gunicorn listens: by default the master opens one socket that every worker
inherits, and a sync worker waits for it in select() (a thundering herd, with a timeout); with
`reuse_port` (since 23.0, gunicorn PR #2938) each worker opens its own SO_REUSEPORT socket after the
fork. Older gunicorns (Debian 12 ships 20.1) give every worker the master's one socket even with
reuse_port, so the version is checked. The access log (`%(p)s`, the worker's pid, and the client port)
is the witness of who served what.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.hints import pip_install
from ...core.kinds import BY_HASH, CLOSES_EACH, IDLE_CLOSE, ModeInfo, ServerKind
from ...core.models import Model
from ...core.spec import ServerSpec
from .base import LaunchedServer

if TYPE_CHECKING:
    from ...core.cures import LongLivedCure
    from ...core.target import Target

MIN_VERSION = (23, 0)
PACKAGE = pip_install("servers", "gunicorn>=23")


# A sync worker accepts one connection per loop (no batch) and then reads the request, which sleeps:
# its context switches are not wakeups. Each mode names the sync worker among its settings, as it is launched: to
# a server of another worker class (gthread: epoll-herd, no mode of these) inspect's rows said only 'reuse_port =
# False' of select, which such a server has already.
SYNC = 'worker_class = "sync"'
GUNICORN_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "select",
            "gunicorn's default: the master's one socket, each sync worker waits for it in select()",
            "every sync worker inherits the master's listening socket and waits for it in select(), which puts "
            "a non-exclusive wait entry on it for each: one connection wakes every idle worker (a thundering "
            "herd), and whoever accepts first serves it",
            None,
            "shared",
            herds=True,
            batches=False,
            settings=(SYNC, "reuse_port = False"),
        ),
        ModeInfo(
            "reuseport",
            "reuse_port = True: each worker opens its own SO_REUSEPORT socket after the fork (gunicorn 23+)",
            "with reuse_port each gunicorn worker binds its own SO_REUSEPORT socket, so the kernel picks a "
            "worker's accept queue by a hash of the connection's 4-tuple, whether or not that worker is busy",
            Model.HASH,
            "per-worker",
            batches=False,
            settings=(SYNC, "reuse_port = True"),
        ),
    )
}


def gunicorn_missing() -> str | None:
    """Why gunicorn cannot be launched here, or None."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        found = version("gunicorn")
    except PackageNotFoundError:
        return f"gunicorn is not installed: {PACKAGE}"
    numbers = tuple(int(part) for part in found.split(".")[:2] if part.isdigit())
    if numbers < MIN_VERSION:
        return f"gunicorn {found} is too old (its reuse_port shares the master's socket): {PACKAGE}"
    return None


def render_config(spec: ServerSpec, mode: ModeInfo, port: int, directory: str) -> str:
    """gunicorn.conf.py for one run (a Python file: gunicorn executes it); every path in `directory`."""
    address = f"[{spec.host}]" if ":" in spec.host else spec.host
    cpus = list(spec.cpus)
    return f"""# written by accept-order for one run; removed when it ends
import os

bind = [{f"{address}:{port}"!r}]
workers = {spec.workers}
worker_class = "sync"
backlog = {spec.backlog}
reuse_port = {mode.queue == "per-worker"}
timeout = 30
graceful_timeout = 5
keepalive = 0
accesslog = {os.path.join(directory, "access.log")!r}
access_log_format = "%(p)s %({{REMOTE_PORT}}e)s"
errorlog = {os.path.join(directory, "error.log")!r}
pidfile = {os.path.join(directory, "gunicorn.pid")!r}
worker_tmp_dir = {directory!r}
control_socket_disable = True  # gunicorn 24+ would otherwise listen on ~/.gunicorn/gunicorn.ctl
control_socket = {os.path.join(directory, "gunicorn.ctl")!r}
CPUS = {cpus!r}


def post_fork(server, worker):
    # like nginx's worker_cpu_affinity: worker i (the i-th spawned) on CPUS[i % len(CPUS)]
    if CPUS:
        os.sched_setaffinity(0, {{CPUS[(worker.age - 1) % len(CPUS)]}})
"""


class GunicornServer(LaunchedServer):
    name = "gunicorn"
    error_logs = ("error.log", "stderr.log")
    error_marks = ("[ERROR]", "Error")
    witness_source = "gunicorn access log"  # `%(p)s %({REMOTE_PORT}e)s`

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = GUNICORN_MODES[spec.mode]

    def command(self) -> list[str]:
        missing = gunicorn_missing()
        if missing:
            raise ServerUnavailable(missing)
        conf = os.path.join(self.directory, "gunicorn.conf.py")
        with open(conf, "w") as f:
            f.write(render_config(self.spec, self.mode, self.port, self.directory))
        return [sys.executable, "-m", "gunicorn", "-c", conf, "accept_order.servers.launched.gunicorn_app:app"]

    def environment(self) -> dict[str, str]:
        """The app reads the run's work from its environment."""
        return {
            "ACCEPT_ORDER_WORK_US": str(self.spec.work_us),
            "ACCEPT_ORDER_WORK_ITERS": str(self.spec.work_iters),
        }

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """gunicorn writes %(p)s as <PID>."""
        return super().parse_request([fields[0].strip("<>"), *fields[1:]] if fields else fields)

    def ready(self) -> bool:
        if not os.path.exists(os.path.join(self.directory, "gunicorn.pid")):
            return False
        # With reuse_port each worker listens on its own socket, opened after the fork: all of them.
        return self.listening(self.spec.workers if self.mode.queue == "per-worker" else 1)


class GunicornKind(ServerKind):
    name = "gunicorn"
    connections_at_once = "one a thread"  # sync: accept, serve, accept again; gthread a pool (gevent: a loop, not told)
    # gunicorn/workers/sync.py force_close()s every response; its gthread workers keep connections, but
    # wait in a selector of their own instead of the sync worker's select(): another accept mechanism
    closes_connections = "its sync workers close every connection after its answer (gunicorn's sync.py)"
    process_names = ("gunicorn",)
    summary = "PyPI's gunicorn (23 or newer) with sync workers, launched from a generated config"
    witness = GunicornServer.witness_source
    pool_setting = "gunicorn's gthread pool, sized by --threads or threads in its config"
    one_lock = "CPython's GIL"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import LongLivedCure, SideBySide

        return (
            LongLivedCure(
                'worker_class = "sync"',
                "gunicorn's default worker closes every connection after its answer (it ignores keepalive): "
                f"{CLOSES_EACH}",
                SideBySide(("select", "reuseport")),
            ),
            LongLivedCure(
                "keepalive = 5",
                # every worker class but sync reads it: gthread, gevent, the asgi worker, and uvicorn's worker
                # (uvicorn/workers.py: timeout_keep_alive = cfg.keepalive), whose idle connections close at it
                f"{IDLE_CLOSE} (every worker class but sync: gthread, gevent, asgi, uvicorn.workers.UvicornWorker; "
                "2 s by default)",
                "not measured: the tool runs gunicorn's sync workers, which ignore keepalive",
            ),
            LongLivedCure(
                "reuse_port = True",
                f"gunicorn 23+: each worker opens its own SO_REUSEPORT socket: {BY_HASH}",
                SideBySide(("select", "reuseport")),
                "reuseport",
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return GUNICORN_MODES

    def missing(self) -> str | None:
        return gunicorn_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to gunicorn: it accepts its own way")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return GunicornServer(spec)
