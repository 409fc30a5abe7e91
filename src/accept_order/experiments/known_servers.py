"""Which server kinds this version knows, told to the floors below before an experiment's parts are used.

Its own module, not parts.py's: the registry (experiments/__init__.py `imported`) tells them with the first
experiment function a command reaches, and a run that saves no file needs nothing else of parts.py.
"""

from __future__ import annotations


def know_servers() -> None:
    """Tell the floors below which server kinds this version has: a spec's label (core/spec.py LABELS, filled
    as the registry is imported) and a result file's server check (results/shapes.py). Every way to an
    experiment's parts (imported, Experiment.file_kind) comes through here; the start-up of the CLI does not."""
    from ..results import check_servers_with
    from ..servers import registry  # noqa: F401  (its import fills LABELS)

    check_servers_with(_unknown_server)


def _unknown_server(kind: str, mode: str) -> tuple[str, str] | None:
    """Whether a result's server is one this version knows (the registry answers; results/shapes.py asks)."""
    from ..servers.registry import KINDS

    if kind not in KINDS:
        return "kind", f"names server {kind!r}, which this version does not know"
    if mode not in KINDS[kind].modes():  # its name alone: a built-in mode's module (and socket) is not imported
        return "mode", f"names mode {mode!r}, which {kind} does not have in this version"
    return None
