"""`accept-order modes`: the accept modes, what each predicts, and whether this machine has it."""

from __future__ import annotations

import click

from ..core.models import Model
from ..core.spec import DEFAULT_KIND
from .options import examples


@click.command(
    name="modes",
    epilog=examples(
        "accept-order modes", "accept-order run --mode reuseport", "accept-order compare --modes blocking,epoll"
    ),
)
def modes() -> None:
    """List each server's accept modes. How workers wait, what order is predicted, availability here."""
    from rich.table import Table
    from rich.text import Text

    from ..servers.registry import launched_kinds, server_kind
    from .output import stdout

    out = stdout()
    for server in launched_kinds():
        kind = server_kind(server)
        out.print(
            Text(f"--server {server}" + (" (the default)" if server == DEFAULT_KIND else ""), style="bold underline")
        )
        # A grid: a description that wraps stays in its own column instead of running back to column 0.
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, style="bold")
        grid.add_column()
        for meta in kind.modes().values():
            unavailable = kind.unavailable(meta.name)
            status = "available" if unavailable is None else f"not available: {unavailable}"
            words: dict[str | None, str] = {None: "no order", Model.CLIENT_CPU: "the client's CPU"}
            predicts = words.get(meta.model, meta.model)
            traits = [f"{meta.queue} queue", f"predicts {predicts}"]
            if meta.herds:
                traits.append("thundering herd")
            grid.add_row(f"  {meta.name:13}", f"{meta.summary} ({'; '.join(traits)}; {status})")
        out.print(grid)
