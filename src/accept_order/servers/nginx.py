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

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = NGINX_MODES[spec.mode]
        self._log: list[tuple[int, int]] = []  # (pid, client port) per request, from nginx's access log

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

    def last_error(self) -> str:
        for name in ("error.log", "stderr.log"):
            try:
                with open(os.path.join(self.directory, name), errors="replace") as f:
                    lines = [line.strip() for line in f if "[emerg]" in line or "[alert]" in line]
                if lines:  # the first names the cause; later ones ("still could not bind()") only follow from it
                    return lines[0][:300]
            except OSError:
                pass
        return "no message"

    def access_log(self) -> list[tuple[int, int]]:
        """(worker pid, client port) per request, in nginx's own order: the witness a run is checked against."""
        return list(self._log)

    def witness(self) -> dict[str, object]:
        """What the server itself says it served (after stop): nginx's access log, `$pid $remote_port`."""
        return {"source": "nginx access log", "requests": [[pid, port] for pid, port in self._log]}

    def read_logs(self) -> None:
        try:
            with open(os.path.join(self.directory, "access.log")) as f:
                self._log = [(int(p), int(port)) for p, port, *_ in (line.split() for line in f) if p.isdigit()]
        except (OSError, ValueError):
            self._log = []
