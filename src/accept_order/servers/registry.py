"""The server kinds this version knows, each registered once, and what commands ask of them together.

Adding a server kind: one module with a `ServerKind` subclass (core/kinds.py says what it declares),
and one line in `LAUNCHED` below (or `FOUND`, for a kind that finds a running server). Everything else
(--server's choices, `modes`, validation, which modes run here, several-mode commands, the predicted
order) reads the kind, never its name. A kind's module is imported when the kind is first asked for: a
run of the built-in workers imports none of the launched kinds' (issue 30: start-up).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core import kind_options
from ..core.errors import NothingToRun, PlanError
from ..core.kinds import KindOption, ModeInfo, ServerKind
from ..core.spec import DEFAULT_KIND, REMOTE_KIND, ServerSpec, sized
from ..core.text import and_join
from .kind_option_checks import refuse_unread, shared
from .lazy import Made
from .spec_asks import answer_for

if TYPE_CHECKING:
    from ..core.spec import ConcurrentLoad
    from ..core.target import Target
    from .remote import RemoteServer
    from .remote import unseen_note as unseen_note

    HELPERS: tuple[str, ...]  # helpers()

# name -> where its ServerKind is ("module:Class" under servers/): the kinds `--server` starts, in the order
# --help and `modes` list them. The name is the kind's own (tests/test_registry.py checks that each is).
LAUNCHED: dict[str, str] = {
    DEFAULT_KIND: "builtin:BuiltinKind",
    "nginx": "launched.nginx:NginxKind",
    "gunicorn": "launched.gunicorn:GunicornKind",
    "node": "launched.node:NodeKind",
    "haproxy": "launched.haproxy:HaproxyKind",
    "uwsgi": "launched.uwsgi:UwsgiKind",
    "uvicorn": "launched.uvicorn:UvicornKind",
    "granian": "launched.granian:GranianKind",
    "puma": "launched.puma:PumaKind",
    "unicorn": "launched.unicorn:UnicornKind",
    "caddy": "launched.caddy:CaddyKind",
    "apache": "launched.apache:ApacheKind",
    "lighttpd": "launched.lighttpd:LighttpdKind",
    "h2o": "launched.h2o:H2oKind",
}
REMOTE = REMOTE_KIND  # a server known only by its address (--target)


def _attached() -> ServerKind:
    """servers/attached.py is one of the kinds here and cannot look up the others' helpers itself, nor name the
    program it attached to by them: it is given both."""
    from .attached import AttachedKind

    return AttachedKind(helpers(), recognise)


# The kinds that find a running server (attached by pid, elsewhere by address): started by no --server.
FOUND: dict[str, str | Callable[[], ServerKind]] = {"attached": _attached, REMOTE: "remote:RemoteKind"}
KINDS: Mapping[str, ServerKind] = Made(__package__, {**LAUNCHED, **FOUND})
ALL = "all"  # --modes all: every mode of each server
OWN_DEFAULT = "default"  # --modes default: each server's own default mode (epoll where it has one)


# ServerSpec.label asks the kind, from below, and a spec made without a cap its kind's own: its module imported when a
# spec of it first asks
answer_for(KINDS)


@functools.cache
def helpers() -> tuple[str, ...]:
    """The titles the launched kinds give their helpers (nginx's cache manager and loader): a master's children so
    titled are no workers of it when it is attached by pid. Every launched kind's module is imported to say them."""
    return tuple(title for name in LAUNCHED for title in KINDS[name].helpers)


if not TYPE_CHECKING:  # mypy sees HELPERS and unseen_note above: beside a module __getattr__ it takes any name for Any

    def __getattr__(name: str) -> Any:
        """HELPERS (helpers()) and unseen_note (servers/remote.py), as callers imported them from here before: made,
        and their modules imported, when first asked for."""
        if name == "HELPERS":
            return helpers()
        if name == "unseen_note":
            from .remote import unseen_note

            return unseen_note
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def server_kind(name: str) -> ServerKind:
    try:
        return KINDS[name]
    except KeyError:
        raise PlanError(f"unknown server {name!r}; choose one of: {', '.join(KINDS)}") from None


def launched_kinds() -> list[str]:
    """What --server can start (none of their modules imported)."""
    return list(LAUNCHED)


def mode_info(kind: str, mode: str) -> ModeInfo:
    return server_kind(kind).mode(mode)


def known_mode(kind: str, mode: str) -> ModeInfo | None:
    """The mode's metadata, or None for a kind or mode this version does not know (from a file)."""
    server = KINDS.get(kind)
    return server.modes().get(mode) if server is not None else None


def available_modes(names: Sequence[str] | None = None) -> list[str]:
    """The built-in modes this machine can run (the Python API's name for it)."""
    return runnable(DEFAULT_KIND, names)[0]


def all_mode_names() -> list[str]:
    """Every mode name of every launched kind, each once (what --mode and --modes accept before the server is known)."""
    names: dict[str, None] = {}
    for kind in launched_kinds():
        names.update(dict.fromkeys(KINDS[kind].modes()))
    return list(names)


def some_kind_has(mode: str) -> bool:
    """Whether a launched kind has a mode of this name: the built-in workers' asked first, so that a run of one of
    theirs imports no other kind's module."""
    return mode in KINDS[DEFAULT_KIND].modes() or mode in all_mode_names()


def runnable(kind: str, names: Sequence[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """(modes of `kind` this machine can run, {mode: why not}); None or ["all"]: every mode of the kind, ["default"]:
    its default mode. A name the kind does not have is a usage error. The one answer to "which modes can run here"."""
    server = server_kind(kind)
    if names is not None and list(names) == [OWN_DEFAULT]:
        names = [server.default_mode()]
    wanted = list(server.modes()) if names is None or list(names) == [ALL] else list(names)
    available: list[str] = []
    skipped: dict[str, str] = {}
    for name in wanted:
        server.mode(name)
        why = server.unavailable(name)
        if why:
            skipped[name] = why
        else:
            available.append(name)
    return available, skipped


class Plan(NamedTuple):
    """A server spec resolved once: checked (what every kind shares, then its kind's own checks, its workers
    fitted), with its kind and its mode's metadata. A run resolves its spec once and hands the plan to the
    lifecycle and to whatever reads the mode (experiments/session.py)."""

    spec: ServerSpec
    kind: ServerKind
    mode: ModeInfo

    def expectation(self) -> tuple[str | None, str]:
        """(predicted order model, mechanism) for this run's settings."""
        return self.kind.expectation(self.spec)

    def sized(self, in_flight: int, keepalive: bool = False) -> Plan:
        """The same plan for a load holding `in_flight` connections open at once, each for several requests
        when `keepalive` (core/spec.py `sized`); PlanError for a kind that cannot keep them."""
        if keepalive and self.kind.closes_connections:
            raise PlanError(
                f"{self.kind.name} cannot keep a connection for several requests: {self.kind.closes_connections}"
            )
        return self._replace(spec=sized(self.spec, in_flight, keepalive))


def refuse_closing(kinds: Iterable[str], load: ConcurrentLoad) -> None:
    """Before anything runs: PlanError naming the first of `kinds` that cannot keep a connection open for
    the load's several requests (ServerKind.closes_connections), when the load keeps them."""
    if not load.keeps_connections:
        return
    asked = [f"--requests-per-connection {load.requests_per_connection}"] * (load.requests_per_connection != 1)
    asked += ["--pool"] * load.pool
    for name in kinds:
        why = server_kind(name).closes_connections
        if why:
            raise PlanError(f"{' and '.join(asked)}: {name} cannot keep a connection for several requests: {why}")


def plan(spec: ServerSpec | Plan, fit: bool = True) -> Plan:
    """`spec` resolved (a plan as it is): see `checked`."""
    if isinstance(spec, Plan):
        return spec
    kind = server_kind(spec.kind)
    checked_spec = kind.as_found(checked(spec, fit))  # an attached server's listeners' backlogs, read
    return Plan(checked_spec, kind, kind.mode(checked_spec.mode))


# The specs already checked (and fitted), by identity: a spec is immutable, so the command line's check of
# one is not repeated by the run it hands that spec to. An entry goes when its spec does.
_CHECKED: set[int] = set()


def _remember(spec: ServerSpec) -> ServerSpec:
    if id(spec) not in _CHECKED:
        _CHECKED.add(id(spec))
        weakref.finalize(spec, _CHECKED.discard, id(spec))
    return spec


def checked(spec: ServerSpec, fit: bool = True, alone: bool | None = None, given: Collection[str] = ()) -> ServerSpec:
    """The spec validated: what every kind shares (ServerSpec.validated), then the kind's own checks. `fit`: with the
    kind's own number of workers where it has one (Caddy: one process, whatever -w says); False for the shared settings
    of several servers (`variants` fits each). `alone` (as `fit` unless given): the spec runs by itself, so an option
    its kind and mode do not read is refused (`given`: fields of the kind options typed, judged even at their default);
    False for the settings several modes share (`variants` refuses one none of them reads). Once per spec: a spec this
    returned, fitted and alone, is returned as it is."""
    alone = fit if alone is None else alone
    if id(spec) in _CHECKED:
        return spec
    kind = server_kind(spec.kind)
    if fit and kind.fixed_workers is not None and spec.workers != kind.fixed_workers:
        spec = dataclasses.replace(spec, workers=kind.fixed_workers)
    spec = spec.validated()
    if spec.mode not in kind.modes():
        owners = [k.name for k in KINDS.values() if spec.mode in k.modes()]
        if owners:  # `run -m sched-rr`: a mode of another server, named with the option that selects it
            whose = and_join(owners)
            add = f"add --server {owners[0]}" if len(owners) == 1 else "add --server with one of them"
            raise PlanError(
                f"{kind.name} has no mode {spec.mode!r} (its modes: {', '.join(kind.modes())}); {whose} "
                f"{'has' if len(owners) == 1 else 'have'} it: {add}"
            )
    kind.check(spec)  # its own settings among them (ServerKind.options)
    if alone:
        refuse_unread(spec, kind, given)
    return _remember(spec) if fit and alone else spec


def declared_options(kinds: Sequence[str] | None = None) -> list[KindOption]:
    """The settings only some kinds read (ServerKind.options), each once, in the registry's order: of the
    kinds named, or of every kind (core/kind_options.py DECLARED, no kind imported to say them). The command
    line's options are made from them (cli/options.py)."""
    if kinds is None:
        return list(kind_options.DECLARED)
    found: dict[str, KindOption] = {}
    for name in KINDS:
        if name in kinds:
            for option in KINDS[name].options:
                found.setdefault(option.field, option)
    return list(found.values())


def make_target(spec: ServerSpec, stamps: bool = False) -> Target:
    """The server a spec from `checked` names, not yet started (start() it, and close() it on every path)."""
    return server_kind(spec.kind).make(spec, stamps=stamps)


def variants(
    base: ServerSpec,
    modes: Sequence[str] | None,
    servers: Sequence[str] | None = None,
    batch_given: bool = True,
    given: Collection[str] = (),
) -> tuple[list[ServerSpec], dict[str, str]]:
    """The specs of a several-mode command: every server x every mode it has and this machine can run, each with the
    kind options it reads (one none of them reads is refused, one in `given` even at its default: kind_option_checks).
    `skipped` says why the others are left out (keyed "mode", or "server mode" with several servers)."""
    servers = list(servers or [base.kind])
    known_anywhere = all_mode_names()
    unknown = [m for m in modes or () if m not in (ALL, OWN_DEFAULT) and m not in known_anywhere]
    if unknown:
        raise PlanError(f"unknown mode(s): {', '.join(unknown)}; choose from {', '.join(known_anywhere)}")
    base.validated()  # the shared settings, checked even when no mode is left to run
    specs: list[ServerSpec] = []
    skipped: dict[str, str] = {}
    everything = modes is None or list(modes) == [ALL]

    def key(server: str, mode: str) -> str:
        return f"{server} {mode}" if len(servers) > 1 else mode

    own_default = list(modes or ()) == [OWN_DEFAULT]
    for server in servers:
        kind = server_kind(server)
        known = kind.modes()
        if everything or own_default:
            wanted = list(known) if everything else [kind.default_mode()]
        else:
            wanted = [m for m in modes or () if m in known]
            for m in [m for m in modes or () if m not in known]:
                skipped[key(server, m)] = f"{server} has no mode {m!r}"
        available, unavailable = runnable(server, wanted)
        for m, why in unavailable.items():
            skipped[key(server, m)] = why
        batch = base.accept_batch if batch_given else kind.default_accept_batch
        specs += [dataclasses.replace(base, kind=server, mode=m, accept_batch=batch) for m in available]
    if not specs and not skipped:
        raise PlanError("no modes given")
    if not specs:
        raise NothingToRun(f"nothing to run: {'; '.join(f'{name} ({why})' for name, why in skipped.items())}")
    made = shared(specs, KINDS, given)  # each option where it is read
    if everything:
        made = _runnable_with(made, skipped, key)
    return [checked(spec) for spec in made], skipped


def _runnable_with(
    specs: list[ServerSpec], skipped: dict[str, str], key: Callable[[str, str], str]
) -> list[ServerSpec]:
    """Of every mode (--modes all, the default), those these settings can run, the others put in `skipped` with the
    refusal: 'compare --server apache -w 1' refused the whole run for buckets' 'needs --workers 2 or more', where
    prefork, prefork-mutex and event run with one child. Where none of a server's modes can, its first refusal stands,
    as for one mode: 'compare --server apache,nginx --accept-batch 4' ran apache alone (which reads no batch) and
    exited 0, every nginx mode skipped for the batch typed, so that nothing ran with the option asked for."""
    kept: list[ServerSpec] = []
    refused: dict[str, PlanError] = {}
    first_refusal: dict[str, PlanError] = {}  # by server kind
    for spec in specs:
        try:
            checked(spec)
        except PlanError as exc:
            refused[key(spec.kind, spec.mode)] = exc
            first_refusal.setdefault(spec.kind, exc)
        else:
            kept.append(spec)
    for kind, refusal in first_refusal.items():
        if not any(spec.kind == kind for spec in kept):
            raise refusal
    skipped.update({name: str(why) for name, why in refused.items()})
    return kept


def recognise(name: str, argv: Sequence[str]) -> ServerKind | None:
    """The launched kind a running process is, by the program it runs: its name, its first argument's words (a
    title it set: `nginx: worker process`), and where that is an interpreter what it runs (`python -m gunicorn`,
    `python3 /usr/bin/uvicorn`, pyuwsgi's `python -c 'import pyuwsgi; ...'`); where that program is a wrapper
    (Server::Starter's `start_server ... -- /usr/bin/h2o`), the command it runs after `--`. None: none known. A
    program's own arguments name no server: `python app.py nginx` and `python app.py -- nginx` were nginx."""
    import os

    from .program_words import WRAPPERS, program_words

    found = {name, *program_words(argv)}
    kind = next((kind for kind in KINDS.values() if found & set(kind.process_names)), None)
    if kind is not None or not found & WRAPPERS or "--" not in argv:
        return kind
    wrapped = list(argv[list(argv).index("--") + 1 :])
    return recognise(os.path.basename(wrapped[0]), wrapped) if wrapped else None


def threads_are_workers(name: str, argv: Sequence[str]) -> bool:
    """Whether a process of several threads serves with them: a known kind says (HAProxy's threads are its
    workers; Caddy's Go threads, Puma's pool are not); a server this tool does not know is taken per thread,
    which is what the kernel sees. inspect and observe name the threads by it; run --attach says it (below)."""
    kind = recognise(name, argv)
    return kind is None or kind.threads_are_workers


def elsewhere(target: Target) -> RemoteServer | None:
    """The target as a server known only by its address (--target), whose processes, listeners and counters
    cannot be read from this host and whose loads count by reply key; None for any other."""
    # Nothing is a RemoteServer while its module is not imported: a run of another kind does not import it to ask
    remote = sys.modules.get(f"{__package__}.remote")
    return target if remote is not None and isinstance(target, remote.RemoteServer) else None


def known_by_replies(spec: ServerSpec) -> bool:
    """A server elsewhere: its workers are what its replies named, however many -w said (servers/remote.py)."""
    return spec.kind == REMOTE
