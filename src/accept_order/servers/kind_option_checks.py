"""The settings only some kinds read (core/kind_options.py), refused where nothing asked reads them: a setting that
changes nothing reads, in a result, as one that was measured (`run --server nginx --policy least-busy` ran nginx as
always, and said nothing).

One server (`checked`): each option set to other than its default, or given at all (`given`: the command line says
which it was given, its default typed included: `--server nginx --policy round-robin` is refused as `--policy
least-busy` is), must be read by its kind and mode. Several
specs made from one set of settings (compare, herd, latency/burst/ramp --modes or several --server, reload): each
keeps the options its kind and mode read and has the others at their defaults, so that its result says what its
server read; an option that none of them reads is refused. A refusal is one line naming who reads the option and
who was asked: '--policy is the built-in fd-pass mode's; nginx does not read it'.

--accept-batch, which every kind has, is read by the modes whose accepts it caps (ModeInfo.batches), and follows the
same rule: where no mode asked reads it a cap is refused, and several specs keep it where it is read (`compare --modes
epoll,fd-pass --accept-batch 4` ran fd-pass with a cap its acceptor never read, and its file said 4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence

from ..core import kind_options
from ..core.errors import PlanError
from ..core.kinds import KindOption, ServerKind
from ..core.spec import ServerSpec
from ..core.text import and_join


def declares(kind: ServerKind, option: KindOption) -> bool:
    """Whether `kind` names `option` among the settings it reads (ServerKind.options)."""
    return any(own.field == option.field for own in kind.options)


def reads(kind: ServerKind, mode: str, option: KindOption) -> bool:
    """Whether a server of `kind` in `mode` reads `option`: the kind declares it, and the mode is one that uses it."""
    return declares(kind, option) and (not option.modes or mode in option.modes)


def set_in(spec: ServerSpec, given: Collection[str] = ()) -> list[KindOption]:
    """The options `spec` sets to other than their default, and those whose field is in `given` whatever their value
    (DECLARED read when called: a test may declare more)."""
    return [
        o for o in kind_options.DECLARED if o.field in given or getattr(spec, o.field) != getattr(ServerSpec, o.field)
    ]


# The caps a mode that reads none takes without a word, as the launched kinds' own checks do (0: none, the default;
# 1: one connection a wakeup), so that a sweep of such a mode over them runs and says its caps did not apply.
NO_CAP = (0, 1)


def _not_read(asked: Sequence[tuple[ServerKind, str]], by_mode: Callable[[ServerKind], bool]) -> tuple[str, list[str]]:
    """`X does not read it` of the (kind, mode) asked, a kind named by its modes asked where `by_mode`, else as a
    whole; and the kinds' names, in the order asked."""
    groups: dict[str, tuple[ServerKind, list[str]]] = {}
    for kind, mode in asked:
        modes = groups.setdefault(kind.name, (kind, []))[1]
        if by_mode(kind) and mode not in modes:
            modes.append(mode)
    names = [kind.called(modes) for kind, modes in groups.values()]
    plural = len(names) > 1 or names[0][1]
    return f"{and_join([name for name, _ in names])} {'do' if plural else 'does'} not read it", list(groups)


def refusal(option: KindOption, asked: Sequence[tuple[ServerKind, str]]) -> str:
    """One line: who reads `option`, and which of the (kind, mode) asked do not; a kind that declares it is named
    by the modes asked of it (`the built-in epoll mode`), any other as a whole (`nginx`)."""
    said, kinds = _not_read(asked, lambda kind: declares(kind, option))
    line = f"{option.flag} is {option.whose}; {said}" if option.whose else f"{option.flag}: {said}"
    hints = dict(option.hints)
    return "; ".join([line, *(hints[name] for name in kinds if name in hints)])


def batch_refusal(asked: Sequence[tuple[ServerKind, str]]) -> str:
    """One line for an --accept-batch cap that none of the (kind, mode) asked reads: each named by its modes."""
    said, _ = _not_read(asked, lambda kind: True)
    return f"--accept-batch caps the connections one wakeup accepts; {said} (0 or 1: no cap)"


def reads_batch(kind: ServerKind, mode: str) -> bool:
    """Whether a server of `kind` in `mode` reads --accept-batch: the mode's accepts follow a cap."""
    return kind.mode(mode).batches


def refuse_unread(spec: ServerSpec, kind: ServerKind, given: Collection[str] = ()) -> None:
    """PlanError for the first option `spec` sets (or that was `given`: fields) that its kind and mode do not read."""
    for option in set_in(spec, given):
        if not reads(kind, spec.mode, option):
            raise PlanError(refusal(option, [(kind, spec.mode)]))
    if spec.accept_batch not in NO_CAP and not reads_batch(kind, spec.mode):
        raise PlanError(batch_refusal([(kind, spec.mode)]))


def shared(
    specs: Sequence[ServerSpec], kinds: Mapping[str, ServerKind], given: Collection[str] = ()
) -> list[ServerSpec]:
    """Specs made from one set of settings, each with the options its kind and mode do not read at their defaults
    (--accept-batch at its kind's); PlanError for an option set (or `given`: fields) that none of them reads.
    `kinds`: the registry's, by name."""
    out = list(specs)
    for option in {o.field: o for spec in specs for o in set_in(spec, given)}.values():
        read = [reads(kinds[spec.kind], spec.mode, option) for spec in out]
        if not any(read):
            raise PlanError(refusal(option, [(kinds[spec.kind], spec.mode) for spec in out]))
        default = getattr(ServerSpec, option.field)
        out = [
            spec if it else dataclasses.replace(spec, **{option.field: default})
            for spec, it in zip(out, read, strict=True)
        ]
    read = [reads_batch(kinds[spec.kind], spec.mode) for spec in out]
    if not any(read) and any(spec.accept_batch not in NO_CAP for spec in out):
        raise PlanError(batch_refusal([(kinds[spec.kind], spec.mode) for spec in out]))
    return [
        spec if it else dataclasses.replace(spec, accept_batch=kinds[spec.kind].default_accept_batch)
        for spec, it in zip(out, read, strict=True)
    ]
