"""How a report prints, for the layout tests: a renderable as the report's console prints it at a width, on a
colour terminal or off one, and a count of the calls rich makes to lay text out. Tests import these from conftest
too."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def printed_like_the_report(renderable: object, width: int, color: bool) -> str:
    """`renderable` between two lines of text, as the report's console prints it (no markup, highlighting
    or emoji) at `width` columns, on a colour terminal or off one: what a layout test compares."""
    import io

    from rich.console import Console, Group
    from rich.text import Text

    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        force_terminal=color,
        color_system="truecolor" if color else None,
        markup=False,
        highlight=False,
        emoji=False,
    )  # fmt: skip
    console.print(Group(Text("before"), renderable, Text("after")), crop=False)  # type: ignore[arg-type]
    return out.getvalue()


@contextlib.contextmanager
def counted_calls(cls: type, name: str) -> Iterator[list[int]]:
    """Count the calls of the method `cls.name` while inside ([count]; restored on the way out): how many
    Texts rich wraps or truncates to print something, i.e. how many it laid out line by line."""
    original = getattr(cls, name)
    calls = [0]

    def counted(self: object, *args: object, **kwargs: object) -> object:
        calls[0] += 1
        return original(self, *args, **kwargs)

    setattr(cls, name, counted)
    try:
        yield calls
    finally:
        setattr(cls, name, original)
