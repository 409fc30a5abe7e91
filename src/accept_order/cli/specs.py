"""Parsed options -> frozen specs. The one place the CLI turns what the user typed into what runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..core.spec import DEFAULT_KIND, SequentialLoad, ServerSpec, pinned

if TYPE_CHECKING:  # imported where a concurrent load is made: not by `run` (issue 30: start-up)
    from ..core.concurrent_load import ConcurrentLoad
    from ..core.hosts import ClientHosts


# Where an option was given by its user, its default typed or not; the default itself (and default_map's) is not
GIVEN = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)


def typed(name: str) -> bool:
    """Whether the option of this parameter name was given (on the command line or in the environment), whatever its
    value: `--policy round-robin` is given, though it is the default."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and name in ctx.params and ctx.get_parameter_source(name) in GIVEN)


def given_kind_options() -> frozenset[str]:
    """The fields of the settings only some kinds read whose options were given: each is judged by whether the kind
    and mode asked read it even at its default (servers/kind_option_checks.py), where a default left alone is not."""
    from ..servers.registry import declared_options
    from .options import option_param

    return frozenset(option.field for option in declared_options() if typed(option_param(option)))


def option_name(name: str) -> str:
    """The option a parameter name is given with, as its --help shows it (`work_s` -> `--work`)."""
    ctx = click.get_current_context(silent=True)
    for param in ctx.command.params if ctx is not None else ():
        if param.name == name and isinstance(param, click.Option):
            return max(param.opts, key=lambda opt: opt.startswith("--"))
    return f"--{name.replace('_', '-')}"


def one_of(options: dict[str, Any], new: str, old: tuple[str, ...]) -> float | None:
    """Pops an option given in its new spelling or one of its old ones (hidden aliases): the one given, in
    seconds (each parsed in its own unit); a usage error for two of them."""
    values = {name: options.pop(name, None) for name in (new, *old)}
    given = [name for name in old if values[name] is not None] + ([new] if typed(new) else [])
    if len(given) > 1:
        raise click.UsageError(
            f"give {option_name(new)} once ({', '.join(option_name(n) for n in old)}: its old spellings)"
        )
    return values[given[0]] if given else values[new]


def work_us(options: dict[str, Any]) -> int:
    """--work (or its old spellings --work-ms, --work-us) as whole microseconds."""
    seconds = one_of(options, "work_s", ("work_ms", "work_us"))
    return round((seconds or 0.0) * 1e6)


def first_available(modes: list[str], server: str | list[str] = DEFAULT_KIND) -> str | None:
    """The mode a several-mode command's shared settings are checked with (the first it can run)."""
    from ..servers.registry import runnable, server_kind

    server = server[0] if isinstance(server, list) else server
    if modes in (["all"], ["default"]):
        available = runnable(server, None if modes == ["all"] else modes)[0]
    else:
        available = runnable(server, [m for m in modes if m in server_kind(server).modes()])[0]
    return available[0] if available else None


NOT_WITH_ATTACH = (
    "server",
    "mode",
    "workers",
    "work_s",
    "work_ms",
    "work_us",
    "work_iters",
    "cpus",
    "pin",
    "accept_batch",
    "backlog",  # the server's listen() already chose it: an attached HAProxy's 4096 was saved as --backlog 7
)  # and the settings only some kinds read (kind_params)


def kind_params() -> tuple[str, ...]:
    """The option names of the settings only some kinds read (their declarations, servers/registry.py)."""
    from ..servers.registry import declared_options
    from .options import option_param

    return tuple(option_param(option) for option in declared_options())


def _left_running() -> None:
    """A server attached to, or one elsewhere, is not this tool's to stop: an interrupted run says that it
    stopped its load, not that it stopped the server's workers (cli/app.py _what_stopped)."""
    from .app import STOPPED_META

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[STOPPED_META] = "the load stopped; the server was not touched"


def attached_spec(options: dict[str, Any]) -> ServerSpec | None:
    """With --attach: the spec of the running server (its workers found now); else None. Options that
    describe a server the tool starts make no sense here and are refused, not ignored."""
    attach = options.pop("attach", ())
    protocol = options.pop("protocol", "line")
    target = options.pop("target", None)
    if target is None and not attach:
        return None
    _left_running()
    if target is not None:
        return _remote_spec(options, target, protocol, attach)
    given = [option_name(name) for name in (*NOT_WITH_ATTACH, *kind_params()) if typed(name)]
    if given:
        verb = "describes" if len(given) == 1 else "describe"
        raise click.UsageError(f"{', '.join(given)} {verb} a server this tool starts; not with --attach")
    if not options.get("port"):
        raise click.UsageError("--attach needs the server's --port")
    from ..servers.attached import AttachedKind
    from ..servers.attached_workers import worker_pids
    from ..servers.registry import helpers

    workers = worker_pids(attach, options["host"], options["port"], helpers=helpers())
    from .attach_protocol import refuse_unspoken

    refuse_unspoken(attach, options["port"])  # no protocol of ours is answered there (uWSGI's --socket)
    if not typed("protocol"):
        from .attach_protocol import refuse_silent_line

        refuse_silent_line(attach)  # an HTTP server the line client would leave waiting: told before it starts
    for name in (*NOT_WITH_ATTACH, *kind_params()):
        options.pop(name, None)
    from ..servers.registry import checked

    # its listeners' backlogs are read as the run is planned (AttachedKind.as_found), the API's runs' too
    return checked(
        ServerSpec(
            kind=AttachedKind.name,
            mode=AttachedKind.mode_name,
            workers=len(workers),
            host=options.pop("host"),
            port=options.pop("port"),
            attach=tuple(attach),
            protocol=protocol,
        )
    )


def server_spec(options: dict[str, Any], mode: str | None = None, varied: bool = False) -> ServerSpec:
    """Pops the server's options out of `options` and returns the validated spec (an attached server's
    with --attach). `varied`: the settings several modes share (--modes), where an option of some of them (or
    --accept-batch) is refused only when none reads it (registry.variants), not by the first mode's server."""
    attached = attached_spec(options)
    if attached is not None:
        return attached
    from ..core.cpus import allowed_cpus
    from ..servers.registry import checked, server_kind

    workers = options.pop("workers", None)
    server = options.pop("server", DEFAULT_KIND)
    several = isinstance(server, list) and len(server) > 1  # the settings they share: each kind fits them
    server = server[0] if isinstance(server, list) else server
    kind = server_kind(server)
    batch = options.pop("accept_batch", None)
    spec = ServerSpec(
        kind=server,
        mode=mode or options.pop("mode", None) or kind.default_mode(),
        workers=workers if workers is not None else len(allowed_cpus()),
        host=options.pop("host", ServerSpec.host),
        port=options.pop("port", 0),
        work_us=work_us(options),
        work_iters=options.pop("work_iters", 0),
        backlog=options.pop("backlog", ServerSpec.backlog),
        accept_batch=kind.default_accept_batch if batch is None else batch,
        cpus=tuple(options.pop("cpus", None) or ()),
        **kind_settings(options),
    )
    spec = pinned(spec, options.pop("pin", False))
    if not (several or varied):
        return checked(spec, given=given_kind_options())
    # The cap as the first server checks it: its own check refuses one it does not read (gunicorn's), where
    # variants keeps it for the modes that read it ('--server gunicorn,builtin --accept-batch 4': builtin's)
    base = checked(spec.replace(accept_batch=kind.default_accept_batch), fit=not several, alone=False)
    return base.replace(accept_batch=spec.accept_batch)


def kind_settings(options: dict[str, Any]) -> dict[str, Any]:
    """The settings only some kinds read, from their options (a duration given in seconds is held in ms)."""
    from ..servers.registry import declared_options
    from .options import option_param

    settings = {}
    for option in declared_options():
        name = option_param(option)
        if name in options:
            value = options.pop(name)
            settings[option.field] = round(1000 * value, 3) if option.duration else value
    return settings


def sequential_load(options: dict[str, Any]) -> SequentialLoad:
    return SequentialLoad(
        connections=options.pop("connections"),
        gap_ms=round(1000 * (one_of(options, "gap_s", ("gap_ms",)) or 0.0), 6),
        timeout_s=options.pop("timeout_s"),
        settle=not options.pop("no_settle", False),
        driver=options.pop("driver", "auto"),
    ).validated()


def load_cpus(options: dict[str, Any], server: ServerSpec, hosts: ClientHosts | None = None) -> tuple[int, ...]:
    """Pops --load-cpus: the CPUs the load generator's processes are pinned to, kept off the workers'.

    Overlapping the workers' own CPUs (--cpus, or --pin's) is refused, not warned about: the user pinned
    both sides, so sharing a CPU is a contradiction the run would silently measure (the point of
    --load-cpus is that the client's CPU time does not come out of the workers'). On a 2-CPU machine that
    means `--cpus 0 --load-cpus 1`, not --pin. Unpinned workers may still be scheduled onto the load
    generator's CPUs: that is warned about, since it is what most runs will do and still half a cure."""
    from ..core.cpus import format_cpu_list
    from ..servers.registry import server_kind

    cpus = tuple(options.pop("load_cpus", None) or ())
    if hosts is not None:  # the drivers run on client hosts (--clients): their CPUs are not the workers'
        return cpus
    if not cpus or not server_kind(server.kind).launched:  # an attached or remote server: not ours to pin
        return cpus
    shared = sorted(set(cpus) & set(server.cpus))
    if shared:
        raise click.UsageError(
            f"--load-cpus {format_cpu_list(cpus)} overlaps the workers' CPUs {format_cpu_list(server.cpus)} "
            f"(--cpus or --pin) on CPU {format_cpu_list(shared)}: give each side its own, e.g. --cpus 0 --load-cpus 1"
        )
    if not server.cpus:
        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            ctx.meta.setdefault("accept_order.warnings", []).append(
                f"the workers are not pinned (no --cpus or --pin): they may still run on CPU "
                f"{format_cpu_list(cpus)} beside the load generator"
            )
    return cpus


def concurrent_load(options: dict[str, Any], server: ServerSpec | None = None) -> ConcurrentLoad:
    from ..core.concurrent_load import ConcurrentLoad
    from ..core.spec import DEFAULT_REQUESTS
    from .load_options import client_hosts

    connections, alias = options.pop("connections", None), options.pop("requests_alias", None)
    if connections is not None and alias is not None:
        raise click.UsageError("give --connections (-n) only; --requests is its old name")
    connections = connections if connections is not None else alias
    duration = options.pop("duration_s", None)
    if connections is not None and duration is not None:
        raise click.UsageError("give --connections (-n) or --duration, not both")
    if connections is None and duration is None:
        connections = DEFAULT_REQUESTS
    pool, asked = options.get("pool", False), options.get("concurrency")
    if pool and isinstance(asked, int) and connections is not None and connections <= asked:
        # the fill takes one request a connection, one connection at a time: none would be left for the load, and
        # the report was the fill's ('-n 20 --pool': '20 concurrent', 8,160 req/s over a load of 0.00 s)
        raise click.UsageError(
            f"--pool fills its -c {asked} connections one after another, each with one of -n's requests: -n "
            f"{connections} would all go to the fill and none run over the pool; give -n above -c"
        )
    clients = client_hosts(options, server)
    load = ConcurrentLoad(
        connections=connections,
        duration_s=duration,
        concurrency=options.pop("concurrency"),
        driver_procs=options.pop("driver_procs"),
        timeout_s=options.pop("timeout_s"),
        rate=options.pop("rate", None),
        cpus=load_cpus(options, server, clients) if server else tuple(options.pop("load_cpus", None) or ()),
        requests_per_connection=options.pop("requests_per_connection", 1),
        pool=options.pop("pool", False),
        clients=clients,
        driver=options.pop("driver", "auto"),
    ).validated()
    return loop_here(load)


def loop_here(load: ConcurrentLoad) -> ConcurrentLoad:
    """`load`, once its --driver can run here: io_uring where it cannot is refused before any server starts
    (the load generator would refuse it once the server is up). Client hosts decide for themselves."""
    if not load.on_client_hosts:
        from ..loads.drivers import resolve

        resolve(load.driver, load.keeps_connections)
    return load


def refuse_for_target(options: dict[str, Any], repeat: int = 1) -> None:
    """--target drives one server that runs elsewhere: what starts servers of its own (--modes, one run per
    mode; --repeat, a fresh server per run) is refused with one line, before anything runs."""
    if options.get("target") is None:
        return
    given = [option_name(name) for name in ("modes", "modes_alias") if typed(name)]
    if given:
        raise click.UsageError(f"{given[0]} runs each mode on a server this tool starts: not with --target")
    if repeat > 1:
        raise click.UsageError("--repeat starts the server for every run: not with --attach or --target")


def _remote_spec(options: dict[str, Any], target: str, protocol: str, attach: tuple[int, ...]) -> ServerSpec:
    """--target HOST:PORT: a server elsewhere, known only by its address; -w says how many workers it has."""
    from ..core.addresses import resolve_host
    from ..core.errors import PlanError

    if attach:
        raise click.UsageError("give --attach (a server on this host) or --target (elsewhere), not both")
    host, sep, port_text = target.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        raise click.UsageError(f"--target {target!r} is not HOST:PORT")
    refused = [n for n in (*NOT_WITH_ATTACH, *kind_params()) if n != "workers"] + ["port", "host"]
    given = [option_name(name) for name in refused if typed(name)]
    if given:
        verb = "describes" if len(given) == 1 else "describe"
        raise click.UsageError(f"{', '.join(given)} {verb} a server this tool starts; not with --target")
    try:
        address, _ = resolve_host(host)
    except PlanError as exc:  # it names --host, the option of a server this tool starts
        raise click.UsageError(str(exc).replace("--host", "--target", 1)) from None
    workers = options.pop("workers", None) or 3
    for name in (*NOT_WITH_ATTACH, *kind_params(), "host", "port", "backlog"):
        options.pop(name, None)
    from ..servers.registry import checked
    from ..servers.remote import RemoteKind

    spec = ServerSpec(
        kind=RemoteKind.name,
        mode=RemoteKind.mode_name,
        workers=workers,
        host=address,
        port=int(port_text),
        protocol=protocol,
    )
    return checked(spec)
