"""`accept-order modes`: the accept modes, what each predicts, and whether this machine has it."""

from __future__ import annotations

import click

from .options import examples


@click.command(
    name="modes",
    epilog=examples(
        "accept-order modes", "accept-order run --mode reuseport", "accept-order compare --modes blocking,epoll"
    ),
)
def modes() -> None:
    """List each server's accept modes: how workers wait, what order is predicted, availability here."""
    from rich.text import Text

    from ..servers.registry import launched_kinds, server_kind
    from .output import stdout

    out = stdout()
    for server in launched_kinds():
        kind = server_kind(server)
        out.print(
            Text(f"--server {server}" + (" (the default)" if server == "builtin" else ""), style="bold underline")
        )
        for meta in kind.modes().values():
            unavailable = kind.unavailable(meta.name)
            status = "available" if unavailable is None else f"not available: {unavailable}"
            predicts = {None: "no order", "cpu": "the client's CPU"}.get(meta.model, meta.model)
            traits = [f"{meta.queue} queue", f"predicts {predicts}"]
            if meta.herds:
                traits.append("thundering herd")
            out.print(Text.assemble((f"  {meta.name:13}", "bold"), f" {meta.summary} ({'; '.join(traits)}; {status})"))
