"""granian (PyPI, 2.8 or newer), launched by the tool with `--workers N` serving the ASGI app: a Python
master and N forked worker processes, each running the accept loop in Rust (tokio).

On Linux granian 2.8 (its PR #897) gives each worker a TCP socket of its own: the master only checks that
the address binds, and each worker binds a SO_REUSEPORT socket and listens on it (read from /proc on
Linux 6.18: N listeners on the port, none held by the master, each in one worker's epoll without
EPOLLEXCLUSIVE). The kernel then picks a worker's accept queue by a hash of the connection's 4-tuple. There
is no option to share one socket instead, nor one to turn this off: which it is depends on the version.
2.2.2 (PR #546) first gave each worker its own socket, 2.3.0 (PR #579) went back to the master's one
socket shared by every worker (SO_REUSEPORT set on it, which on one socket changes nothing), and 2.8.0
(PR #897) came back to per-worker sockets; granian#849 reports the imbalance of the shared one. Versions
before 2.8 are refused rather than described wrongly.

`--loop asyncio` is given so that the Python side does not depend on whether uvloop happens to be
installed (the accept loop is tokio's either way), and `--http 1`. The app (asgi.py) answers `worker PID`
and logs `PID CLIENT_PORT` per request: the witness. SIGTERM is granian's graceful stop.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.hints import pip_install
from ...core.kinds import BY_HASH, CLOSES_EACH, ModeInfo, ServerKind
from ...core.models import Model
from ...core.spec import ServerSpec
from .asgi import AsgiServer

if TYPE_CHECKING:
    from ...core.cures import LongLivedCure
    from ...core.target import Target

MIN_VERSION = (2, 8)
MIN_BACKLOG = 128  # granian refuses a smaller --backlog
PACKAGE = pip_install("servers", "granian>=2.8")

# tokio accepts in a loop of its own and then reads the request: no batch of ours applies, and its context
# switches are not wakeups.
GRANIAN_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "reuseport",
            "--workers N (granian 2.8+ on Linux): each worker binds its own SO_REUSEPORT socket",
            "each granian worker binds and listens on a SO_REUSEPORT socket of its own, so the kernel picks a "
            "worker's accept queue by a hash of the connection's 4-tuple, whether or not that worker is busy",
            Model.HASH,
            "per-worker",
            batches=False,
            settings=("--workers N",),
        ),
    )
}


def granian_missing() -> str | None:
    """Why granian cannot be launched here, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("granian")
    except PackageNotFoundError:
        return f"granian is not installed: {PACKAGE}"
    numbers = tuple(int(part) for part in found.split(".")[:2] if part.isdigit())
    if numbers < MIN_VERSION:
        return f"granian {found} is too old (before 2.8 its workers share one socket on Linux): {PACKAGE}"
    return None


class GranianServer(AsgiServer):
    name = "granian"
    error_marks = ("[ERROR]", "Error")
    witness_source = "granian app's request log"  # `PID CLIENT_PORT`, written by the app (asgi.py)

    def command(self) -> list[str]:
        missing = granian_missing()
        if missing:
            raise ServerUnavailable(missing)
        target = self.app()
        return [
            sys.executable, "-m", "granian", target,
            "--interface", "asgi",
            "--working-dir", self.directory,
            "--host", self.spec.host,
            "--port", str(self.port),
            "--workers", str(self.spec.workers),
            "--backlog", str(self.spec.backlog),
            "--loop", "asyncio",
            "--http", "1",
            "--no-ws",
            "--pid-file", f"{self.directory}/granian.pid",
            *(KEEPALIVE if self.spec.keepalive else ()),
        ]  # fmt: skip

    def ready(self) -> bool:
        """Every worker has opened its own listener, and its event loop watches it."""
        return self.listening(self.spec.workers) and super().ready()


# Kept connections (ServerSpec.keepalive): granian keeps HTTP/1 connections by default with no limit on their
# requests, but closes one that waits longer than its header read timeout for its next request (run here: 1 s
# set, a request after 2.5 s idle found it closed); its highest, 60 s, is the longest a kept connection may idle.
KEEPALIVE = ("--http1-keep-alive", "--http1-header-read-timeout", "60000")


class GranianKind(ServerKind):
    name = "granian"
    connections_at_once = "many"  # tokio's event loops
    process_names = ("granian",)
    summary = "PyPI's granian (2.8 or newer) with --workers N, serving an ASGI app written for the run"
    witness = GranianServer.witness_source
    preferred_mode = "reuseport"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import ClientLimit, LongLivedCure, SideBySide

        return (
            LongLivedCure(
                "--no-http1-keep-alive",
                f"granian closes each HTTP/1 connection after its answer: {CLOSES_EACH}",
                ClientLimit("--no-http1-keep-alive", requests=1),
            ),
            LongLivedCure(
                "--workers N",
                f"granian 2.8+: a SO_REUSEPORT socket per worker: {BY_HASH}",
                SideBySide(("reuseport",)),
                "reuseport",
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return GRANIAN_MODES

    def missing(self) -> str | None:
        return granian_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to granian: it accepts its own way")
        if spec.listen_backlog < MIN_BACKLOG:
            raise PlanError(f"granian takes --backlog {MIN_BACKLOG} or more, got {spec.backlog}")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return GranianServer(spec)
