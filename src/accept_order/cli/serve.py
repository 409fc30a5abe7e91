"""`accept-order serve`: keep workers up for connections made by hand (nc), then print the tally."""

from __future__ import annotations

from typing import Any

import click

from ..render.text import plural
from .app import handle_errors
from .common import host_warnings, report_and_save
from .options import examples, json_option, mode_option, server_options
from .output import stdout
from .specs import server_spec

# Debian/Ubuntu's netcat-openbsd waits for the end of its standard input after the reply, so with a
# terminal on stdin `nc HOST PORT` hangs after the first answer: -d tells it not to read stdin.
NC_HINT = "for i in $(seq 6); do nc -d {host} {port}; done"


@click.command(
    epilog=examples(
        "accept-order serve --mode blocking --port 1024 &",
        "for i in $(seq 6); do nc -d 127.0.0.1 1024; done   # -d: nc must not wait for stdin",
        "kill %1                                              # SIGTERM: stop, print the tally",
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
    from ..servers.pool import WorkerPool
    from ..session import lifecycle

    server = server_spec(options)
    host_warnings()
    out = stdout()
    pools: list[WorkerPool] = []

    def wait_for_stop(target: Any) -> None:
        assert isinstance(target, WorkerPool)
        pools.append(target)
        # The banner is inside the try: a Ctrl-C that follows it at once (before the wait begins) must
        # still stop the server the normal way, with the tally.
        try:
            host, port = target.address
            workers = plural(server.workers, "worker")
            out.print(f"accept-order serve: mode {server.mode}, {workers} listening on {host}:{port}")
            for index, pid in enumerate(target.pids):
                out.print(f"  worker {index} pid {pid}")
            hint = NC_HINT.format(host=host, port=port)
            out.print(f"try: {hint}    (Ctrl-C or kill -TERM {__import__('os').getpid()} to stop)", soft_wrap=True)
            out.file.flush()
            target.wait_for_death()  # returns only by raising: a worker died, or Ctrl-C / SIGTERM
        except KeyboardInterrupt:
            return  # Ctrl-C and SIGTERM are how a server is stopped: the tally follows, exit 0

    def describe() -> str:
        accepted = pools[0].accepted_so_far() if pools else 0
        return f"serve stopped after the workers had accepted {accepted} connections (nc clients are not ours to count)"

    _, measured = lifecycle(server, wait_for_stop, describe, stamps=True)
    result = ServeResult(
        server, measured.environment, measured.port, measured.counters, tuple(pools[0].sequence()), measured.evidence
    )
    report_and_save(serve_report(result), json_path, "serve", result.to_dict())
