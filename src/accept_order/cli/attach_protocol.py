"""--attach at a server known to wait for an HTTP request, without --protocol: refused before any connection.

The line client (--protocol line, the default) sends nothing and waits for the server to write first. At an HTTP
server every connection then waits out --timeout: 'latency --attach <gunicorn> --port 8000 -n 300 -c 5' (PyPI's
gunicorn 27, 3 sync workers, each holding a silent connection until the client gave up) ran 13 minutes before it
said 'served nothing: 300 × timeout ... needs --protocol http'; at the default -n 100000 it would have run for days.
Every server kind this tool launches speaks HTTP, and inspect already tells them from /proc (registry.recognise)."""

from __future__ import annotations

from collections.abc import Sequence

import click

from ..core.spec import DEFAULT_KIND


def refuse_silent_line(pids: Sequence[int]) -> None:
    """UsageError where the first attached pid is a server kind known to wait for a request (not this tool's own
    workers, which write first); a process /proc cannot name, or a kind it does not know, is let through."""
    from ..probes.proc_processes import process_info
    from ..servers.registry import recognise

    info = process_info(pids[0]) if pids else None
    kind = recognise(info.name, info.argv) if info is not None else None
    if kind is None or kind.name == DEFAULT_KIND:
        return
    raise click.UsageError(
        f"--attach: pid {info.pid if info else pids[0]} is {kind.name}, which waits for an HTTP request before it "
        "answers: give --protocol http (--protocol line, the default, sends nothing and waits for the server to "
        "write first, so every connection would wait out --timeout)"
    )
