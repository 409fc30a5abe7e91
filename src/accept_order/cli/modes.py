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
    """List the accept modes: how workers wait, what order the kernel predicts, availability here."""
    from rich.text import Text

    from ..servers.modes import describe_modes
    from .output import stdout

    out = stdout()
    for info in describe_modes():
        status = "available" if info.unavailable is None else f"not available: {info.unavailable}"
        traits = [f"{info.queue} queue", f"predicts {info.model or 'no order'}"]
        if info.herds:
            traits.append("thundering herd")
        out.print(Text.assemble((f"{info.name:13}", "bold"), f" {info.summary} ({'; '.join(traits)}; {status})"))
