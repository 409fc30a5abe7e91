"""What this tool's launch of a server does that the same server started by a user does not (the kind's
launch_note: uvicorn's TCP_NODELAY), as the lines a report of runs of it says, each once."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from ..core.spec import ServerSpec
from ..servers.kind_notes import launch_note


def launch_parts(servers: Iterable[ServerSpec]) -> list[Text]:
    """One yellow line per distinct note of these runs' servers (two uvicorn asyncio runs say it once)."""
    notes = dict.fromkeys(note for server in servers if (note := launch_note(server)) is not None)
    return [Text(note, style="yellow") for note in notes]
