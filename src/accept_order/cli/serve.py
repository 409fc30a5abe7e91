"""`accept-order serve`: keep a server up for connections made by hand (nc), then print the tally.

The built-in workers count what they accept and stamp when; a launched server (nginx, HAProxy, ...) is
tallied from its own log, the witness every other command checks a run against.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from ..core.spec import DEFAULT_KIND
from ..core.text import plural
from .app import handle_errors
from .common import host_warnings, report_and_save
from .options import examples, json_option, mode_option, server_options
from .output import RESULT_TO_STDOUT, stderr, stdout
from .specs import server_spec

if TYPE_CHECKING:
    from ..core.target import Target

# Debian/Ubuntu's netcat-openbsd waits for the end of its standard input after the reply, so with a
# terminal on stdin `nc HOST PORT` hangs after the first answer: -d tells it not to read stdin.
NC_HINT = "for i in $(seq 6); do nc -d {host} {port}; done"
# An HTTP server answers a request: nc sends it from the pipe, and the server closes after an HTTP/1.0 answer.
NC_HTTP_HINT = r"for i in $(seq 6); do printf 'GET / HTTP/1.0\r\n\r\n' | nc {host} {port}; done"


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
    """Keep workers up for connections made by hand (e.g. nc). Ctrl-C or SIGTERM stops them and prints the
    tally."""
    from ..api import serve as serve_until_stopped
    from ..experiments.order.report import serve_report

    server = server_spec(options)
    host_warnings()
    out = stderr() if json_path == RESULT_TO_STDOUT else stdout()  # `--json -`: stdout holds the JSON alone

    def announce(target: Target) -> None:
        host, port = target.address
        workers = plural(server.workers, "worker")
        what = f"mode {server.mode}" if server.kind == DEFAULT_KIND else f"{server.kind}, mode {server.mode}"
        out.print(f"accept-order serve: {what}, {workers} listening on {host}:{port}")
        for index, pid in enumerate(target.pids):
            out.print(f"  worker {index} pid {pid}")
        hint = (NC_HTTP_HINT if target.protocol.request else NC_HINT).format(host=host, port=port)
        out.print(f"try: {hint}    (Ctrl-C or kill -TERM {os.getpid()} to stop)", soft_wrap=True)
        out.file.flush()

    result = serve_until_stopped(server, announce)
    report_and_save(lambda: serve_report(result), json_path, "serve", result)
