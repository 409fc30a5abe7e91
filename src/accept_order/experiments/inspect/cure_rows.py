"""The rows of cures.py shown in a report: what changes how the load of long-lived connections splits over
a server's workers, and the command that measures it. Derived when shown (a saved result's program and
mechanism say the kind and its modes), so a file saved before a row was written shows it too. inspect's
report shows them when the server's processes hold connections; observe's when the load share parts from
the accept share, or is uneven."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ...core.kinds import ServerKind
from ...servers.registry import KINDS, recognise, server_kind


def kind_named(name: str | None) -> ServerKind | None:
    """The kind inspect recognised (None: one this tool does not know)."""
    return server_kind(name) if name is not None and name in KINDS else None


def kind_of(program: str) -> ServerKind | None:
    """The kind a program's name says (observe keeps the workers' command name)."""
    return recognise(program, ())


def cure_table(kind: ServerKind | None, seen: tuple[str, ...], heading: str) -> list[RenderableType]:
    """A heading and one row per cure: the setting, then what it does and what measures it (wrapped)."""
    # here: shown only where the server holds connections, and cures.py brings five dataclasses (core/cures.py's
    # four and its own: Python 3.11 compiles each one's methods), which an idle server's report does not use
    from .cures import long_lived_cures

    cures = long_lived_cures(kind, seen)
    if not cures:
        return []
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("setting", no_wrap=False, overflow="fold", ratio=1)
    table.add_column("what it does; what measures it", no_wrap=False, overflow="fold", ratio=2)
    for cure in cures:
        missing = "" if cure.available else f" (not here: {cure.reason})"
        table.add_row(Text(cure.setting), Text(f"{cure.what}{missing}\n{cure.measure}"))
    return [Text(heading, style="bold"), table]
