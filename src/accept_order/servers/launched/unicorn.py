"""Unicorn (Debian's unicorn, 6.0), launched by the tool: a master and preforked single-threaded workers on
the master's one socket, serving the Rack app of rack_app.py from a generated config.

The master binds the listening socket before it forks (with Unicorn's own TCP_DEFER_ACCEPT on Linux: a
connection is readable once its request is in). Each worker loops: a non-blocking accept on the listener;
after a connection it served, another at once (Unicorn's bet that a busy server has more queued); once
that finds none, IO.select, which is select(2) (pselect6 here) on the listener and the worker's pipe from
the master. Every idle worker's select holds a non-exclusive wait entry on the socket, so one connection
wakes them all (a thundering herd) and whoever accepts first serves it. Unicorn 6.0 has no EPOLLEXCLUSIVE
mode (puma#3934 names Unicorn's and Pitchfork's; this Unicorn does not have it): one mode.

Unicorn keeps no access log of its own; with `-E deployment` it wraps the app in Rack::CommonLogger writing
to its stderr (its default middleware), which the config sends to the private directory. The app hands that
log `PID:PORT` (rack_app.py): the witness. QUIT is Unicorn's graceful stop (each worker finishes the request
in hand); TERM would stop the workers at once.
"""

from __future__ import annotations

import os
import shutil
import signal
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.kinds import CLOSES_EACH, ModeInfo, ServerKind
from ...core.models import Mechanism
from ...core.spec import ServerSpec
from ...core.waiting import wait_for
from .base import SETTLE_TIMEOUT_S, LaunchedServer
from .rack_app import parse_common_log, ruby_error, write_app

if TYPE_CHECKING:
    from ...core.cures import LongLivedCure
    from ...core.target import Target

PACKAGE = "apt-get install unicorn"
SELECTS = ("23", "270")  # x86_64 select, pselect6: what IO.select waits in

# A worker is one thread, and with TCP_DEFER_ACCEPT a connection is accepted only once its request is in:
# reading it does not sleep (the tool's requests are one packet), so the worker sleeps only in select and its
# context switches are its wakeups (herd -w 3 -n 30: 90 for 30 connections). It accepts one connection per
# accept call, and after one it served tries once more before it selects: no --accept-batch.
UNICORN_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "prefork",
            "Unicorn's only way: preforked workers on the master's one socket, each waiting in select()",
            "every Unicorn worker inherits the master's listening socket and waits for it in select(), which "
            "puts a non-exclusive wait entry on it per worker: one connection wakes every idle worker (a "
            "thundering herd), and whoever accepts first serves it; a worker that just served tries one "
            "more accept before it selects again",
            None,
            "shared",
            herds=True,
            batches=False,
            switches_are_wakeups=True,
            settings=("worker_processes N", 'listen "HOST:PORT"'),
            seen_as=Mechanism.SELECT,
        ),
    )
}


def unicorn_missing() -> str | None:
    """Why Unicorn cannot be launched here, or None."""
    return None if shutil.which("unicorn") else f"unicorn is not installed: {PACKAGE}"


def render_config(spec: ServerSpec, port: int, directory: str) -> str:
    """unicorn.conf.rb for one run (Ruby: Unicorn evaluates it); every path in `directory`."""
    host = f"[{spec.host}]" if ":" in spec.host else spec.host
    cpus = list(spec.cpus)
    return f"""# written by accept-order for one run; removed when it ends
worker_processes {spec.workers}
# tries: 0: a port in use fails at once (Unicorn retries 5 times, 0.5 s apart, by default)
listen "{host}:{port}", backlog: {spec.backlog}, tries: 0
working_directory "{directory}"
pid "{os.path.join(directory, "unicorn.pid")}"
stderr_path "{os.path.join(directory, "unicorn.log")}"
stdout_path "{os.path.join(directory, "unicorn.out")}"
timeout 30
preload_app false
CPUS = {cpus!r}
after_fork do |server, worker|
  # like nginx's worker_cpu_affinity: worker i on CPUS[i % CPUS.size]
  Process.setaffinity(0, [CPUS[worker.nr % CPUS.size]]) if !CPUS.empty? && Process.respond_to?(:setaffinity)
end
"""


def in_select(pid: int) -> bool:
    """The worker (one thread) is asleep in select."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split(maxsplit=1)[0] in SELECTS
    except (OSError, IndexError):
        return False


class UnicornServer(LaunchedServer):
    name = "unicorn"
    graceful = signal.SIGQUIT
    error_logs = ("unicorn.log", "stderr.log")
    error_marks = ("Errno::", "ERROR", "Error", "error")
    request_log = "unicorn.log"  # Rack::CommonLogger's lines among Unicorn's own
    witness_source = "unicorn request log"  # Rack::CommonLogger, `ADDR - PID:PORT [...`

    def command(self) -> list[str]:
        missing = unicorn_missing()
        if missing:
            raise ServerUnavailable(missing)
        app = write_app(self.spec, self.directory)
        conf = os.path.join(self.directory, "unicorn.conf.rb")
        with open(conf, "w") as f:
            f.write(render_config(self.spec, self.port, self.directory))
        return [shutil.which("unicorn") or "unicorn", "-c", conf, "-E", "deployment", app]

    def last_error(self) -> str:
        # Unicorn's logger prefixes its own (`E, [date #PID] ERROR -- : ...`); Ruby's locations are dropped
        return ruby_error(super().last_error().partition(" -- : ")[2] or super().last_error())

    def ready(self) -> bool:
        """The pid file, the listener, and every worker in select."""
        import psutil  # here, not at the top: `modes` and `inspect` import every kind

        if self.master is None or not os.path.exists(os.path.join(self.directory, "unicorn.pid")):
            return False
        try:
            workers = self.workers_of(psutil.Process(self.master.pid))
        except psutil.Error:
            return True  # start() reports the exit
        return all(in_select(pid) for pid in workers) and self.listening(1)

    def settle(self) -> None:
        """Before a sequential connection: every worker back in select (not only asleep: a worker can sleep
        reading a request too)."""
        if not wait_for(lambda: all(in_select(pid) for pid in self._pids), SETTLE_TIMEOUT_S):
            self._unsettled += 1

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        return parse_common_log(fields)


class UnicornKind(ServerKind):
    name = "unicorn"
    connections_at_once = "one"  # accept, serve, accept again (unicorn/http_server.rb worker_loop)
    closes_connections = "it answers every request with Connection: close (unicorn/http_response.rb)"
    process_names = ("unicorn",)
    serves_on_one_thread = True
    summary = "Debian's Unicorn (6.0) with preforked workers and a Rack app, launched from a generated config"
    witness = UnicornServer.witness_source
    preferred_mode = "prefork"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import LongLivedCure, SideBySide

        return (
            LongLivedCure(
                None,
                f"Unicorn answers every request with Connection: close (unicorn/http_response.rb): {CLOSES_EACH} (its "
                "listen :reuseport is for Unicorns started apart, not for its workers)",
                SideBySide(("prefork",)),
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return UNICORN_MODES

    def missing(self) -> str | None:
        return unicorn_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to unicorn: it accepts one connection per call")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return UnicornServer(spec)
