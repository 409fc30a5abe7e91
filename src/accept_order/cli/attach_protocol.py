"""--attach at a server of a kind that speaks HTTP, without --protocol: refused before any connection.

The line client (--protocol line, the default) sends nothing and waits for the server to write first. At an HTTP
server every connection then waits out --timeout: 'latency --attach <gunicorn> --port 8000 -n 300 -c 5' (PyPI's
gunicorn 27, 3 sync workers, each holding a silent connection until the client gave up) ran 13 minutes before it
said 'served nothing: 300 × timeout ... needs --protocol http'; at the default -n 100000 it would have run for days.
Every server kind this tool launches speaks HTTP as it launches it, and inspect tells them from /proc
(registry.recognise). The name says the program, not what this one speaks: a Node `net` server, HAProxy in `mode
tcp` or nginx's `stream` may write first to a line client, so the refusal names --protocol line for them too."""

from __future__ import annotations

from collections.abc import Sequence

import click

from ..core.spec import DEFAULT_KIND


def refuse_silent_line(pids: Sequence[int]) -> None:
    """UsageError where the first attached pid is a server kind this tool launches as an HTTP server (not this
    tool's own workers, which write first); a process /proc cannot name, or a kind it does not know, is let
    through."""
    from ..probes.proc_processes import process_info
    from ..servers.registry import recognise

    info = process_info(pids[0]) if pids else None
    kind = recognise(info.name, info.argv) if info is not None else None
    if kind is None or kind.name == DEFAULT_KIND:
        return
    # One of ours, a Node TCP server writing a greeting first, was refused as 'node, which waits for an HTTP request
    # before it answers: give --protocol http', where http then failed every connection as a bad reply: the name
    # says what runs there, not what it speaks, so both ways out are named
    raise click.UsageError(
        f"--attach: pid {info.pid if info else pids[0]} is {kind.name}, which as an HTTP server waits for a request "
        "before it answers, and --protocol line (the default) sends nothing, so every connection would wait out "
        "--timeout: give --protocol http, or --protocol line if this one writes first unasked"
    )


def refuse_unspoken(pids: Sequence[int], port: int) -> None:
    """UsageError where the first attached pid's kind says no --protocol is answered at `port` (ServerKind.
    attach_refused: uWSGI's --socket, whose binary protocol failed both; the refusal above asked for one of them),
    whatever --protocol was given."""
    from ..probes.proc_processes import process_info
    from ..servers.registry import recognise

    info = process_info(pids[0]) if pids else None
    if info is None:
        return
    kind = recognise(info.name, info.argv)
    why = kind.attach_refused(info.argv, port, info.pid) if kind is not None else None
    if kind is not None and why:
        raise click.UsageError(f"--attach: pid {info.pid} is {kind.name}, {why}")
