"""The consoles the CLI prints through (cli/output.py makes them): rich's, made safe for any text.

Apart from output.py so that rich, the largest import of all, loads with the first console a command makes
(a report, a note), not with every command: `--help` and a usage error print through click alone.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from ..core.text import escape_controls, has_controls


class SafeConsole(Console):
    """A console whose text can never carry a control character to the terminal: whatever a report
    holds (a --title, a file name, a string from a result file that was not escaped before), every
    control character in what it renders is printed as an escape (`\\x1b`). Line breaks stay; rich's
    own control segments (cursor moves of a progress bar) are not text and pass. Markup and emoji are
    off: a "[bold]" in a file name or a title prints as it is."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(highlight=False, markup=False, emoji=False, **kwargs)

    def on_broken_pipe(self) -> None:
        """rich's own (stdout to /dev/null, then exit 1) would decide the command's status: the error goes on
        to whoever writes (stderr: unless_stderr_gone; stdout's is an OutputError before rich sees it)."""
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            # a line break alone is rebuilt as it was (the lines split on it): answered without the pattern
            if segment.control or not has_controls(segment.text.replace("\n", "")):
                yield segment
            else:
                text = "\n".join(escape_controls(line) for line in segment.text.split("\n"))
                yield Segment(text, segment.style)


class ReportConsole(SafeConsole):
    """stdout's console, for reports. An indented paragraph keeps its indent on the lines it wraps onto
    (render/text.py hanging), and no line ends in spaces (rich pads wrapped lines and a table's last column).
    `piped` (not a terminal, no COLUMNS: a file, a pipe): prose is not wrapped at all, one line per
    paragraph as a file or a grep wants it; tables keep PIPED_WIDTH, and wrap their cells within it."""

    trims_lines = True  # render/simple_table.py writes its lines as rich's Table prints them through this render

    def __init__(self, piped: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.piped = piped

    def print(self, *objects: Any, **kwargs: Any) -> None:
        from ..render.text import hanging

        if self.piped:
            kwargs.setdefault("soft_wrap", True)
        super().print(*(hanging(item) for item in objects), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        from ..render.text import trimmed

        return trimmed(super().render(renderable, options))
