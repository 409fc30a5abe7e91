"""`accept-order serve`: keep a server up for connections made by hand (nc), then print the tally.

The built-in workers count what they accept and stamp when; a launched server (nginx, HAProxy, ...) is
tallied from its own log, the witness every other command checks a run against.
"""

from __future__ import annotations

import os
from typing import Any, Protocol, cast

import click

from ..render.text import plural
from ..servers.target import Target
from .app import handle_errors
from .common import host_warnings, report_and_save
from .options import examples, json_option, mode_option, server_options
from .output import stdout
from .specs import server_spec

# Debian/Ubuntu's netcat-openbsd waits for the end of its standard input after the reply, so with a
# terminal on stdin `nc HOST PORT` hangs after the first answer: -d tells it not to read stdin.
NC_HINT = "for i in $(seq 6); do nc -d {host} {port}; done"
# An HTTP server answers a request: nc sends it from the pipe, and the server closes after an HTTP/1.0 answer.
NC_HTTP_HINT = r"for i in $(seq 6); do printf 'GET / HTTP/1.0\r\n\r\n' | nc {host} {port}; done"


class Serving(Target, Protocol):
    """What serve needs beyond a Target (the built-in pool and every launched server have it)."""

    def wait_for_death(self) -> None:
        """Block until a worker (or a launched server's master) dies, then raise WorkerError naming it."""
        ...

    def sequence(self) -> list[int]:
        """After stop: the worker of each connection, by accept time (built-in) or in the server's log."""
        ...


@click.command(
    epilog=examples(
        "accept-order serve --mode blocking --port 1024 &",
        "for i in $(seq 6); do nc -d 127.0.0.1 1024; done   # -d: nc must not wait for stdin",
        "kill %1                                              # SIGTERM: stop, print the tally",
        "accept-order serve --server nginx --port 8080       # nginx: send it a request, e.g. with curl",
    )
)
@mode_option()
@server_options()
@json_option("Write the tally as JSON when the server stops.")
@handle_errors
def serve(json_path: str | None, **options: Any) -> None:
    """Keep workers up for connections by hand (e.g. nc); Ctrl-C or SIGTERM stops them and prints the tally."""
    from ..experiments.order.report import serve_report
    from ..experiments.order.result import ServeResult
    from ..session import lifecycle

    server = server_spec(options)
    host_warnings()
    out = stdout()
    targets: list[Serving] = []

    def wait_for_stop(started: Target) -> None:
        target = cast(Serving, started)  # the built-in pool and every launched server can be waited on
        targets.append(target)
        # The banner is inside the try: a Ctrl-C that follows it at once (before the wait begins) must
        # still stop the server the normal way, with the tally.
        try:
            host, port = target.address
            workers = plural(server.workers, "worker")
            what = f"mode {server.mode}" if server.kind == "builtin" else f"{server.kind}, mode {server.mode}"
            out.print(f"accept-order serve: {what}, {workers} listening on {host}:{port}")
            for index, pid in enumerate(target.pids):
                out.print(f"  worker {index} pid {pid}")
            hint = (NC_HTTP_HINT if target.protocol.request else NC_HINT).format(host=host, port=port)
            out.print(f"try: {hint}    (Ctrl-C or kill -TERM {os.getpid()} to stop)", soft_wrap=True)
            out.file.flush()
            target.wait_for_death()  # returns only by raising: a worker died, or Ctrl-C / SIGTERM
        except KeyboardInterrupt:
            return  # Ctrl-C and SIGTERM are how a server is stopped: the tally follows, exit 0

    def describe() -> str:
        counted = getattr(targets[0], "accepted_so_far", None) if targets else None
        if counted is None:
            return "serve stopped (nc clients are not ours to count)"
        return (
            f"serve stopped after the workers had accepted {counted()} connections (nc clients are not ours to count)"
        )

    _, measured = lifecycle(server, wait_for_stop, describe, stamps=True)
    sequence = tuple(targets[0].sequence())
    result = ServeResult(server, measured.environment, measured.port, measured.counters, sequence, measured.evidence)
    report_and_save(serve_report(result), json_path, "serve", result.to_dict())
