"""The file format: envelope, schema, loaders, merge, export; it knows no experiment and no server kind."""

from __future__ import annotations

from collections.abc import Callable

# Which server kinds and modes this version knows: (kind, mode) -> None, or ("kind" or "mode", why not).
# The kinds are two floors up (servers/registry.py): experiments/ hands their answer down before any result
# is read, so that this floor imports none of them; it is kept here, not in shapes.py, so that handing it
# down (with every experiment's first import) does not load the file format a run without --json never uses.
ServerCheck = Callable[[str, str], "tuple[str, str] | None"]
server_checks: list[ServerCheck] = []


def check_servers_with(check: ServerCheck) -> None:
    """Check every server a result names with `check` (the registry's; set once, by experiments/)."""
    server_checks[:] = [check]
