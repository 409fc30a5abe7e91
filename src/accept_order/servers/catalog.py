"""Which servers the tool can drive, and each one's accept modes with their metadata.

Everything that needs a mode's predicted order, mechanism or queue kind asks here, with the server's name,
so the same mode name (`epoll`, `reuseport`) can mean the built-in workers' or nginx's version of the
mechanism.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import PlanError

SERVERS = ("builtin", "nginx")
DEFAULT_SERVER = "builtin"


@dataclass(frozen=True)
class ModeMeta:
    server: str
    name: str
    summary: str
    why: str
    model: str | None
    queue: str
    herds: bool
    batches: bool
    unavailable: str | None


def _builtin() -> dict[str, ModeMeta]:
    from .modes import MODES

    return {
        name: ModeMeta("builtin", name, m.summary, m.why, m.model, m.queue, m.herds, m.batches, m.unavailable())
        for name, m in MODES.items()
    }


def _nginx() -> dict[str, ModeMeta]:
    from .nginx_config import NGINX_MODES, ServerUnavailable, nginx_binary

    try:
        nginx_binary()
        missing = None
    except ServerUnavailable as exc:
        missing = str(exc)
    return {
        name: ModeMeta("nginx", name, m.summary, m.why, m.model, m.queue, m.herds, True, missing)
        for name, m in NGINX_MODES.items()
    }


def modes_of(server: str) -> dict[str, ModeMeta]:
    if server == "builtin":
        return _builtin()
    if server == "nginx":
        return _nginx()
    raise PlanError(f"unknown server {server!r}; choose one of: {', '.join(SERVERS)}")


def mode_meta(server: str, mode: str) -> ModeMeta:
    modes = modes_of(server)
    try:
        return modes[mode]
    except KeyError:
        raise PlanError(
            f"{server} has no mode {mode!r}; choose one of: {', '.join(modes)} (see 'accept-order modes')"
        ) from None


def all_mode_names() -> list[str]:
    """Every mode name of every server, each once (what --mode and --modes accept before the server is known)."""
    names: dict[str, None] = {}
    for server in SERVERS:
        from .modes import MODES
        from .nginx_config import NGINX_MODES

        names.update(dict.fromkeys(MODES if server == "builtin" else NGINX_MODES))
    return list(names)


def split_for(server: str, names: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """(modes of `server` this machine can run, {mode: why not}); None or "all": every mode of the server.
    A name the server does not have is a usage error."""
    modes = modes_of(server)
    wanted = list(modes) if names is None else list(names)
    available: list[str] = []
    skipped: dict[str, str] = {}
    for name in wanted:
        meta = mode_meta(server, name)
        if meta.unavailable:
            skipped[name] = meta.unavailable
        else:
            available.append(name)
    return available, skipped
