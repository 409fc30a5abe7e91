"""What a ServerSpec asks of its kind from the floor below (core/spec.py), by kind name: how it is labelled, made
without a cap on accepts per wakeup, the kind's own (nginx's multi_accept off, HAProxy's tune.maxaccept 4), and
whether its listen() takes the spec's backlog. The registry hands its kinds here as it lists them; a kind's module is
imported when a spec of it first asks."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from ..core.kinds import ServerKind
from ..core.spec import GIVES_BACKLOG, LABELS, OWN_ACCEPT_BATCH, ServerSpec


def _label(kinds: Mapping[str, ServerKind], name: str, spec: ServerSpec) -> str:
    return kinds[name].label(spec)


def _own_batch(kinds: Mapping[str, ServerKind], name: str) -> int:
    return kinds[name].default_accept_batch


def _gives_backlog(kinds: Mapping[str, ServerKind], name: str) -> bool:
    return kinds[name].no_backlog is None


def answer_for(kinds: Mapping[str, ServerKind]) -> None:
    """Every kind of `kinds` answers a spec's questions (core/spec.py LABELS, OWN_ACCEPT_BATCH and GIVES_BACKLOG)."""
    LABELS.update({name: functools.partial(_label, kinds, name) for name in kinds})
    OWN_ACCEPT_BATCH.update({name: functools.partial(_own_batch, kinds, name) for name in kinds})
    GIVES_BACKLOG.update({name: functools.partial(_gives_backlog, kinds, name) for name in kinds})
