"""nginx, launched by the tool from a generated config (servers/launched.py does the launching).

Its workers are the master's children; their pids in fork order are the worker indices. nginx's own access
log (`$pid` per request) is kept as the independent witness of who served what.
"""

from __future__ import annotations

import os
import signal

from ..spec import ServerSpec
from .launched import LaunchedServer
from .nginx_config import NGINX_MODES, nginx_binary, render_config


class NginxServer(LaunchedServer):
    name = "nginx"
    graceful = signal.SIGQUIT  # nginx's graceful shutdown: finish what is in hand, then exit
    error_logs = ("error.log", "stderr.log")
    error_marks = ("[emerg]", "[alert]")
    witness_source = "nginx access log"  # `$pid $remote_port $msec`

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
                    backlog=spec.backlog,
                    multi_accept=spec.accept_batch == 0,
                    cpus=spec.cpus,
                    work_us=spec.work_us,
                    work_iters=spec.work_iters,
                    mutex_delay_ms=spec.mutex_delay_ms,
                )
            )
        return [binary, "-e", os.path.join(self.directory, "error.log"), "-p", self.directory, "-c", conf]

    def ready(self) -> bool:
        return os.path.exists(os.path.join(self.directory, "nginx.pid"))
