"""nginx, launched by the tool from a generated config (launched/base.py does the launching).

Its workers are the master's children; their pids in fork order are the worker indices. nginx's own access
log (`$pid` per request) is kept as the independent witness of who served what.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.kind_options import MUTEX_DELAY
from ...core.kinds import (
    BY_HASH,
    IDLE_CLOSE,
    ModeInfo,
    ServerKind,
    redraws,
)
from ...core.models import Mechanism
from ...core.spec import ServerSpec
from .base import LaunchedServer
from .nginx_config import NGINX_MODES, expectation, nginx_binary, render_config

if TYPE_CHECKING:
    from ...core.cures import LongLivedCure
    from ...core.target import Target


class NginxServer(LaunchedServer):
    name = "nginx"
    graceful = signal.SIGQUIT  # nginx's graceful shutdown: finish what is in hand, then exit
    error_logs = ("error.log", "stderr.log")
    error_marks = ("[emerg]", "[alert]")
    shortage_marks = ("worker_connections are not enough", "Too many open files")
    witness_source = "nginx access log"  # `$pid $remote_port $msec $connection_requests`
    numbered_by = "$connection_requests"

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = NGINX_MODES[spec.mode]

    def command(self) -> list[str]:
        spec = self.spec
        binary = nginx_binary()
        conf = os.path.join(self.directory, "nginx.conf")
        with open(conf, "w") as f:
            f.write(
                render_config(
                    self.directory,
                    self.mode,
                    host=spec.host,
                    port=self.port,
                    workers=spec.workers,
                    backlog=spec.listen_backlog,
                    multi_accept=spec.accept_batch == 0,
                    cpus=spec.cpus,
                    work_us=spec.work_us,
                    work_iters=spec.work_iters,
                    mutex_delay_ms=spec.mutex_delay_ms,
                    in_flight=spec.in_flight,
                    keepalive=spec.keepalive,
                )
            )
        return [binary, "-e", os.path.join(self.directory, "error.log"), "-p", self.directory, "-c", conf]

    def ready(self) -> bool:
        return os.path.exists(os.path.join(self.directory, "nginx.pid"))

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """`$pid $remote_port $msec $connection_requests`: (pid, port, the request's number on its
        connection); a line of an older format without the last: (pid, port)."""
        row = super().parse_request(fields)
        if row is None or len(fields) < 4 or not fields[3].isdigit():
            return row
        return (*row, int(fields[3]))


class NginxKind(ServerKind):
    name = "nginx"
    connections_at_once = "many"  # an event loop a worker, whatever multi_accept takes a turn
    process_names = ("nginx",)
    helpers = ("nginx: cache manager process", "nginx: cache loader process")
    serves_on_one_thread = True
    unseen = {
        Mechanism.EPOLL: "a setting that changes who keeps the connections (nginx's multi_accept) is in the server's "
        "config, not in /proc"
    }
    summary = "Debian's nginx with its Lua module, launched from a generated config"
    witness = NginxServer.witness_source
    default_accept_batch = 1  # multi_accept off, nginx's default
    options = (MUTEX_DELAY,)  # its accept_mutex mode's accept_mutex_delay

    def plain_listener(self, h2c: bool, beside: str) -> str | None:
        return (
            f"nginx: 'listen 127.0.0.1:8080;' in the same server block, with the {beside} listen's reuseport if it "
            "has one; the same workers accept on both"
        )

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import ClientLimit, IdleLimit, LongLivedCure, SideBySide

        return (
            LongLivedCure(
                "keepalive_requests 100;",
                redraws("nginx closes a connection after this many requests on it (1000 by default since 1.19.10)"),
                ClientLimit("keepalive_requests", launched="keepalive_requests 1000000000 under a kept load"),
            ),
            LongLivedCure(
                "keepalive_time 1m;",
                redraws(
                    "nginx 1.19.10+ closes a connection after the request in progress once it has been open "
                    "this long (1h by default)"
                ),
                ClientLimit("keepalive_time", timed=True, launched="keepalive_time 24h under a kept load"),
            ),
            LongLivedCure("keepalive_timeout 5s;", IDLE_CLOSE, IdleLimit("keepalive_timeout")),
            LongLivedCure(
                "listen ADDRESS:PORT reuseport;",
                f"a SO_REUSEPORT listener per worker: {BY_HASH}",
                SideBySide(("epoll", "reuseport")),
                "reuseport",
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return NGINX_MODES

    def missing(self) -> str | None:
        try:
            nginx_binary()
        except ServerUnavailable as exc:
            return str(exc)
        return None

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch with nginx is 0 (multi_accept on) or 1 (multi_accept off)")

    def expectation(self, spec: ServerSpec) -> tuple[str | None, str]:
        """epoll predicts no idle order with multi_accept on (--accept-batch 0)."""
        return expectation(self.mode(spec.mode), multi_accept=spec.accept_batch == 0)

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return NginxServer(spec)
