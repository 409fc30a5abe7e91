"""Caddy (Debian's caddy, 2.6, a Go program), launched by the tool from a generated Caddyfile.

Caddy is one process. Its listener (with SO_REUSEPORT, which Caddy sets for its config reloads: one socket
here) is watched edge-triggered, without EPOLLEXCLUSIVE, by Go's netpoller: one epoll instance for the
whole process, in whose epoll_pwait one thread at a time blocks. One goroutine per listener accepts in a
loop until EAGAIN, then parks; whichever thread next polls the netpoller makes it runnable, and any thread
holding a Go P runs it: the thread that calls accept4 is the Go scheduler's choice, and the next accept may
be on another (a bpftrace of 30 sequential connections here: 3 threads took turns, in no order). So there
are no workers below the process: no thread has a queue, a wait or a connection of its own, and nothing
Caddy logs or can put in a reply names a thread. The tool treats Caddy as one worker, the process
(`fixed_workers`: --workers does not apply); Go's GOMAXPROCS (the threads running Go code at once, one
per CPU by default) is left as Caddy runs.

The reply is `worker PID`: Caddy 2.6 has no pid placeholder, so the master is started through `sh -c
'ACCEPT_ORDER_PID=$$ exec caddy ...'` (exec keeps the pid) and the Caddyfile answers `{env.ACCEPT_ORDER_PID}`.
The witness is Caddy's access log (JSON, `remote_port` per request; the one process's pid).
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.kinds import ModeInfo, ServerKind
from ...core.models import Mechanism
from ...core.spec import ServerSpec
from ..watched import ThreadedUsage, thread_ids
from .base import LaunchedServer

if TYPE_CHECKING:
    import psutil

    from ...core.cures import LongLivedCure
    from ...core.target import Target

PACKAGE = "apt-get install caddy"
EPOLL_PWAIT = "281"  # x86_64: where Go's netpoller blocks

# The thread that blocks in the netpoller is not the one that reads the request or answers it: a thread's
# context switches are not wakeups of a worker. One accept loop accepts until EAGAIN: no --accept-batch.
CADDY_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "netpoller",
            "Caddy's only way: one process, one accept loop, Go's netpoller (one epoll) watching the listener",
            "Caddy is one process: one goroutine accepts from the one listener until EAGAIN, woken through Go's "
            "netpoller, one epoll instance in which one thread at a time waits; whichever thread the Go "
            "scheduler gives the goroutine runs the accept, so every connection is the one process's",
            None,
            "shared",
            batches=False,
            own_batch=0,  # until EAGAIN (the model's batch): bpftrace saw 96 queued taken in one wakeup
            settings=("GOMAXPROCS: Go's default (one per CPU)",),
            seen_as=Mechanism.EPOLL,  # one thread waits, in epoll_pwait on the epoll that watches the listener
        ),
    )
}


def caddy_missing() -> str | None:
    """Why Caddy cannot be launched here, or None."""
    return None if shutil.which("caddy") else f"caddy is not installed: {PACKAGE}"


# Kept connections (ServerSpec.keepalive): Caddy has no limit on requests per connection; its idle timeout
# (5 min by default) is lifted past any run's, the client closes them. Its log numbers neither connections nor
# requests on one: the witness tells connections apart by client port.
KEEPALIVE = "\n\t\ttimeouts {\n\t\t\tidle 24h\n\t\t}"


def render_config(spec: ServerSpec, port: int, directory: str) -> str:
    """The Caddyfile for one run; every path in `directory`, no admin endpoint, no automatic HTTPS."""
    return f"""# written by accept-order for one run; removed when it ends
{{
	admin off
	auto_https off
	storage file_system {os.path.join(directory, "data")}
	servers {{
		protocols h1{KEEPALIVE if spec.keepalive else ""}
	}}
}}
http://:{port} {{
	bind {spec.host}
	log {{
		output file {os.path.join(directory, "access.log")}
		format json
	}}
	respond "worker {{env.ACCEPT_ORDER_PID}}
"
}}
"""


def polls(pid: int) -> bool:
    """One of the process's threads is blocked in the netpoller (epoll_pwait)."""
    for tid in thread_ids(pid):
        try:
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                if f.read().split(maxsplit=1)[0] == EPOLL_PWAIT:
                    return True
        except (OSError, IndexError):
            continue
    return False


class CaddyServer(LaunchedServer):
    name = "caddy"
    error_logs = ("stderr.log",)
    error_marks = ('"level":"error"', "Error:", "error")
    witness_source = "caddy access log"  # JSON, request.remote_port; the one process

    def command(self) -> list[str]:
        missing = caddy_missing()
        if missing:
            raise ServerUnavailable(missing)
        conf = os.path.join(self.directory, "Caddyfile")
        with open(conf, "w") as f:
            f.write(render_config(self.spec, self.port, self.directory))
        caddy = shutil.which("caddy") or "caddy"
        pidfile = os.path.join(self.directory, "caddy.pid")
        run = ["run", "--config", conf, "--adapter", "caddyfile", "--pidfile", pidfile]
        # exec keeps the pid the shell had: $$ is Caddy's own, for its reply
        return ["/bin/sh", "-c", 'ACCEPT_ORDER_PID=$$ exec "$0" "$@"', caddy, *run]

    def environment(self) -> dict[str, str]:
        """Caddy's own files (autosaved config, storage) in the private directory, not in $HOME."""
        return {
            "HOME": self.directory,
            "XDG_CONFIG_HOME": os.path.join(self.directory, "config"),
            "XDG_DATA_HOME": os.path.join(self.directory, "data"),
        }

    def last_error(self) -> str:
        """Caddy's JSON error line's message and error, or its CLI's `Error: ...` line."""
        import json  # here, not at the top: `modes` and `inspect` import every kind

        line = super().last_error()
        try:
            entry = json.loads(line)
        except ValueError:
            return line
        return "; ".join(str(entry[key]) for key in ("msg", "error") if key in entry) or line

    def workers_of(self, master: psutil.Process) -> list[int]:
        """The one process (once the shell has exec'd Caddy: before that there is nothing to wait for)."""
        return [master.pid] if master.name() == "caddy" else []

    def ready(self) -> bool:
        """The pid file, the listener, and a thread blocked in the netpoller."""
        if self.master is None or not os.path.exists(os.path.join(self.directory, "caddy.pid")):
            return False
        return polls(self.master.pid) and self.listening(1)

    def start(self) -> None:
        super().start()
        self._usage = ThreadedUsage(self._pids)  # every thread's: Go's threads are interchangeable
        if self.spec.cpus:  # worker 0 on the first CPU: every thread (new ones inherit it from their creator)
            for pid in self._pids:
                for tid in thread_ids(pid):
                    try:
                        os.sched_setaffinity(tid, {self.spec.cpus[0]})
                    except OSError:
                        continue

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """(the one process, request.remote_port) from a JSON line of the access log (split on white space,
        which only the request's own strings held)."""
        import json

        try:
            port = json.loads(" ".join(fields))["request"]["remote_port"]
        except (ValueError, KeyError, TypeError):
            return None
        return (self._pids[0], int(port)) if self._pids and str(port).isdigit() else None


class CaddyKind(ServerKind):
    name = "caddy"
    connections_at_once = "many"  # a goroutine a connection, on Go's netpoller
    process_names = ("caddy",)
    summary = "Debian's Caddy (2.6, Go): one process, Go's netpoller, launched from a generated Caddyfile"
    witness = CaddyServer.witness_source
    preferred_mode = "netpoller"
    fixed_workers = 1
    sleeps = "every thread of its one process"  # Go's threads take turns at its accept loop: ThreadedUsage
    # 'latency --server nginx,caddy ... --work 1ms' headed 'work 1 ms busy loop' for both, and Caddy served 6,924
    # requests at 0.106 ms of CPU each beside nginx's 493 at 1.1 ms
    no_work = (
        "Caddy 2.6 has no handler that could burn them (its Caddyfile answers with respond), so it would answer at "
        "once beside servers that burn them"
    )
    no_backlog = "Caddy 2.6 has no setting for it: Go's listen() asks for the kernel's limit, net.core.somaxconn"

    def plain_listener(self, h2c: bool, beside: str) -> str | None:
        return f"Caddy: an 'http://127.0.0.1:8080' site address beside the {beside} one, for the same routes"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import LongLivedCure, SideBySide

        return (
            LongLivedCure(
                None,
                "Caddy is one process whose accept loop and connections are goroutines that Go's scheduler runs "
                "on any of its threads: no worker holds connections of its own, so there is no split to change "
                "(`servers { timeouts { idle 30s } }` closes idle connections)",
                SideBySide(("netpoller",)),
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return CADDY_MODES

    def missing(self) -> str | None:
        return caddy_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to caddy: Go accepts until EAGAIN")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return CaddyServer(spec)
