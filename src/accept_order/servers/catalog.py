"""Which servers the tool can drive, and each one's accept modes with their metadata.

Everything that needs a mode's predicted order, mechanism or queue kind asks here, with the server's name,
so the same mode name (`epoll`, `reuseport`) can mean the built-in workers' or nginx's version of the
mechanism.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import PlanError

if TYPE_CHECKING:
    from ..spec import ServerSpec

SERVERS = ("builtin", "nginx", "gunicorn", "node", "haproxy", "attached", "remote")
LAUNCHED = ("builtin", "nginx", "gunicorn", "node", "haproxy")  # what --server can start
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
    # A worker sleeps once per connection it is woken for (the built-in workers read nothing): voluntary
    # context switches per connection then count the workers one connection woke. nginx also sleeps
    # waiting for the request, so there they do not.
    switches_are_wakeups: bool = True
    # Its empty wakeups are its own timer's (accept-mutex's retry delay), not a connection's: left out of
    # the workers woken per connection.
    timed_waits: bool = False


def _builtin() -> dict[str, ModeMeta]:
    from .modes import MODES

    return {
        name: ModeMeta(
            "builtin",
            name,
            m.summary,
            m.why,
            m.model,
            m.queue,
            m.herds,
            m.batches,
            m.unavailable(),
            timed_waits=m.timed_waits,
        )
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
        name: ModeMeta("nginx", name, m.summary, m.why, m.model, m.queue, m.herds, True, missing, False)
        for name, m in NGINX_MODES.items()
    }


def _gunicorn() -> dict[str, ModeMeta]:
    from .gunicorn import GUNICORN_MODES, gunicorn_missing

    missing = gunicorn_missing()
    # A sync worker accepts one connection per loop (no batch) and then reads the request, which sleeps:
    # its context switches are not wakeups.
    return {
        name: ModeMeta("gunicorn", name, m.summary, m.why, m.model, m.queue, m.herds, False, missing, False)
        for name, m in GUNICORN_MODES.items()
    }


def _node() -> dict[str, ModeMeta]:
    from .node import NODE_MODES, node_missing

    missing = node_missing()
    return {
        name: ModeMeta("node", name, m.summary, m.why, m.model, "shared", m.herds, False, missing, False)
        for name, m in NODE_MODES.items()
    }


def _haproxy() -> dict[str, ModeMeta]:
    from .haproxy import HAPROXY_MODES, haproxy_missing

    missing = haproxy_missing()
    return {
        name: ModeMeta("haproxy", name, m.summary, m.why, m.model, m.queue, False, True, missing, False)
        for name, m in HAPROXY_MODES.items()
    }


def _attached() -> dict[str, ModeMeta]:
    from .attached import WHY

    summary = "a running server this tool did not start, attached by pid"
    return {"attached": ModeMeta("attached", "attached", summary, WHY, None, "unknown", False, True, None, False)}


def _remote() -> dict[str, ModeMeta]:
    from .remote import WHY

    summary = "a server on another host, known only by its address"
    return {"remote": ModeMeta("remote", "remote", summary, WHY, None, "unknown", False, True, None, False)}


def modes_of(server: str) -> dict[str, ModeMeta]:
    if server == "builtin":
        return _builtin()
    if server == "remote":
        return _remote()
    if server == "attached":
        return _attached()
    if server == "nginx":
        return _nginx()
    if server == "gunicorn":
        return _gunicorn()
    if server == "node":
        return _node()
    if server == "haproxy":
        return _haproxy()
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
    for server in LAUNCHED:
        names.update(dict.fromkeys(_mode_names(server)))
    return list(names)


def _mode_names(server: str) -> list[str]:
    """A launched server's mode names, without probing what is installed."""
    if server == "builtin":
        from .modes import MODES

        return list(MODES)
    if server == "gunicorn":
        from .gunicorn import GUNICORN_MODES

        return list(GUNICORN_MODES)
    if server == "node":
        from .node import NODE_MODES

        return list(NODE_MODES)
    if server == "haproxy":
        from .haproxy import HAPROXY_MODES

        return list(HAPROXY_MODES)
    from .nginx_config import NGINX_MODES

    return list(NGINX_MODES)


def default_mode(server: str) -> str:
    """epoll (nginx's default on Linux, the one users most often meet), or the server's first mode."""
    from .modes import DEFAULT_MODE

    names = _mode_names(server) if server in LAUNCHED else list(modes_of(server))
    return DEFAULT_MODE if DEFAULT_MODE in names else names[0]


def split_for(server: str, names: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """(modes of `server` this machine can run, {mode: why not}); None or "all": every mode of the server.
    A name the server does not have is a usage error."""
    modes = modes_of(server)
    wanted = list(modes) if names is None or list(names) == ["all"] else list(names)
    available: list[str] = []
    skipped: dict[str, str] = {}
    for name in wanted:
        meta = mode_meta(server, name)
        if meta.unavailable:
            skipped[name] = meta.unavailable
        else:
            available.append(name)
    return available, skipped


def default_accept_batch(server: str) -> int:
    """Each server's own default: the built-in workers accept until EAGAIN; nginx has multi_accept off;
    HAProxy's tune.maxaccept is 64 with threads."""
    if server == "haproxy":
        from .haproxy import DEFAULT_MAXACCEPT

        return DEFAULT_MAXACCEPT
    return 1 if server == "nginx" else 0


def variants(
    base: ServerSpec, modes: Sequence[str] | None, servers: Sequence[str] | None = None, batch_given: bool = True
) -> tuple[list[ServerSpec], dict[str, str]]:
    """The specs of a several-mode command: every server x every mode it has and this machine can run.
    `skipped` says why the others are left out (keyed "mode", or "server mode" with several servers)."""
    servers = list(servers or [base.server])
    unknown = [m for m in modes or () if m != "all" and m not in all_mode_names()]
    if unknown:
        raise PlanError(f"unknown mode(s): {', '.join(unknown)}; choose from {', '.join(all_mode_names())}")
    base.validated()  # the shared settings, checked even when no mode is left to run
    specs: list[ServerSpec] = []
    skipped: dict[str, str] = {}
    everything = modes is None or list(modes) == ["all"]
    for server in servers:
        known = modes_of(server)
        wanted = list(known) if everything else [m for m in modes or () if m in known]
        if not everything:
            for m in modes or ():
                if m not in known:
                    skipped[f"{server} {m}" if len(servers) > 1 else m] = f"{server} has no mode {m!r}"
        available, unavailable = split_for(server, wanted)
        for m, why in unavailable.items():
            skipped[f"{server} {m}" if len(servers) > 1 else m] = why
        batch = base.accept_batch if batch_given else default_accept_batch(server)
        specs += [base.replace(server=server, mode=m, accept_batch=batch) for m in available]
    if not specs and not skipped:
        raise PlanError("no modes given")
    return specs, skipped


def expectation(spec: ServerSpec) -> tuple[str | None, str]:
    """(predicted order model, mechanism) for this run's settings: usually the mode's own; nginx's epoll
    predicts differently with multi_accept on (--accept-batch 0)."""
    if spec.server == "nginx":
        from .nginx_config import NGINX_MODES
        from .nginx_config import expectation as nginx_expectation

        return nginx_expectation(NGINX_MODES[spec.mode], multi_accept=spec.accept_batch == 0)
    meta = mode_meta(spec.server, spec.mode)
    return meta.model, meta.why
