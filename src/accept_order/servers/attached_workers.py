"""The workers of a server attached by pid (servers/attached.py): of a master's children, those that take its
connections, found from who holds its listener, who it feeds over Unix sockets, and the kinds' helpers' titles."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import NotServing, PlanError

# psutil and the probes are imported where used: the registry lists the attached kind at start-up (issue 30)


def worker_pids(
    attach: Sequence[int], host: str | None = None, port: int | None = None, *, helpers: Sequence[str]
) -> list[int]:
    """One pid: its children that serve, oldest first (a master and its workers), itself first where it accepts
    beside them (uWSGI without --master: its worker 1), or itself if none does; several pids: those, as given.
    NotServing for a pid no process has (PlanError: none can). `helpers`: registry.HELPERS (the registry imports us).

    A master's children are not all workers: nginx's cache manager and loader, h2o's backtrace annotator, the
    resource tracker of a Python supervisor serve nothing. A worker holds the listener on host:port, or, where the
    master holds it alone (Node's primary under SCHED_RR), is fed connections by it over a Unix socketpair; and no
    kind names it a helper of its own by its title (`nginx: cache manager process`: ServerKind.helpers).

    A master still starting (it holds the listener before its workers take it) is waited for, at most
    attached_start.STARTING_S: read at once, it was its own one worker (attached_start.py)."""
    import psutil

    from ..probes.hidden_pids import unseen
    from ..probes.serving import PID_LIMIT
    from .attached_start import settled_workers

    try:
        if len(attach) == 1:
            master = psutil.Process(attach[0]).pid
            titles = tuple(helpers)

            def read(children: list[int]) -> tuple[list[int], bool, set[int]]:
                return _serving(master, children, host, port, titles)

            return settled_workers(master, read, lambda pid: named_helper(pid, titles)) or [master]
        for pid in attach:
            psutil.Process(pid)
        return list(attach)
    except psutil.NoSuchProcess as exc:  # a number no pid can be is usage (2); one not running now, the machine's (1)
        if not 0 < exc.pid <= PID_LIMIT:
            raise PlanError(f"--attach: no process {exc.pid}") from None
        raise NotServing(f"--attach: {unseen(exc.pid)}") from None  # gone, or hidden by /proc's hidepid
    except psutil.AccessDenied as exc:  # as observe's and inspect's (probes/serving.find_server)
        raise NotServing(f"--attach: not allowed to look at process {exc.pid}") from None


def _serving(
    master: int, children: list[int], host: str | None, port: int | None, helpers: tuple[str, ...]
) -> tuple[list[int], bool, set[int]]:
    """Of a master's children, those that take its connections (see worker_pids); all of them but the named
    helpers where no port is known to tell by. With whether the master holds the listener, and the children that
    hold it or are fed by the master (whatever they are: attached_start.py waits for the others)."""
    from ..probes.accept_waits import FORKS, SERVES
    from ..probes.owner import socket_holders
    from ..probes.serving import process_info

    def worker(pid: int) -> bool:
        return process_info(pid) is not None and not named_helper(pid, helpers)

    if host is None or not port:
        return [pid for pid in children if worker(pid)], False, set(children)
    holders = socket_holders(listener_inodes(host, port, [master, *children]), [master, *children])
    if not holders:  # none holds it: check_listening says so of the master and its children
        return [pid for pid in children if worker(pid)], False, set()
    held = [pid for pid in children if pid in holders]
    role = master_accepts(master, held, holders) if held and master in holders else None
    if role == FORKS:
        return [], True, set(held)  # the master accepts; its children serve a connection each (worker_pids: it)
    if role == SERVES:  # a worker beside its children (uWSGI without --master): the oldest of them
        return [master, *(pid for pid in held if worker(pid))], True, set(held)
    # who the master feeds is a scan of every process's fd table (2.4 s, 0.6 CPU-s here beside 400 processes): asked
    # only where it can matter, where no child holds the listener or a young one does not yet (attached_start)
    unheld = [pid for pid in children if pid not in holders]
    asked = master in holders and (not held or any(_young(pid) for pid in unheld))
    fed = _fed(master) if asked else frozenset()
    engaged = set(held) | (set(children) & fed)
    if held or master not in holders:
        return [pid for pid in held if worker(pid)], master in holders, engaged
    return [pid for pid in children if pid in fed and worker(pid)], True, engaged


def _young(pid: int) -> bool:
    from .attached_start import STARTING_S, age_s

    return (age_s(pid) or STARTING_S) < STARTING_S


def master_accepts(master: int, children: Sequence[int], holders: dict[int, set[int]]) -> str | None:
    """How the master takes connections beside its children that hold its listener: FORKS (a child per connection),
    SERVES (a worker beside them), or None (it does not: nginx's, gunicorn's master). probes/accept_waits.py."""
    from ..probes.accept_waits import parent_accepts

    return parent_accepts(master, children, holders[master])


def named_helper(pid: int, helpers: tuple[str, ...]) -> bool:
    """A child whose title (its command line, which nginx rewrites) starts with one of `helpers` (nginx's cache
    manager): it may hold the listener and is no worker. Another child that holds it is one, though it was not
    found among them (it took the listener after they were read: a master's workers starting) and
    check_listening refuses it."""
    from ..probes.serving import process_info

    info = process_info(pid)
    return info is not None and " ".join(info.argv).startswith(helpers)


def _fed(master: int) -> frozenset[int]:
    """The processes a master that alone holds its listeners talks to over Unix socketpairs (inspect's reading of
    an acceptor's workers: probes/serving.py); none where it cannot be read."""
    from ..probes.serving import find_server

    try:
        return find_server(master).fed
    except (NotServing, PlanError, OSError):
        return frozenset()


def listener_inodes(host: str, port: int, pids: Sequence[int]) -> set[int]:
    """The listening sockets on `port` (in the namespaces of `pids`) that connections made to `host` go to."""
    from ..probes.listeners import listening_sockets_of, serving_on

    return {row.inode for row in serving_on(listening_sockets_of(port, pids), host)}
