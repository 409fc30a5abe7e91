"""What a ServerSpec asks of its kind from the floor below (core/spec.py), by kind name: how it is labelled, and, made
without a cap on accepts per wakeup, the kind's own (nginx's multi_accept off, HAProxy's tune.maxaccept 4). The
registry hands its kinds here as it lists them; a kind's module is imported when a spec of it first asks."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from ..core.kinds import ServerKind
from ..core.spec import LABELS, OWN_ACCEPT_BATCH, ServerSpec


def _label(kinds: Mapping[str, ServerKind], name: str, spec: ServerSpec) -> str:
    return kinds[name].label(spec)


def _own_batch(kinds: Mapping[str, ServerKind], name: str) -> int:
    return kinds[name].default_accept_batch


def answer_for(kinds: Mapping[str, ServerKind]) -> None:
    """Every kind of `kinds` answers a spec's questions (core/spec.py LABELS and OWN_ACCEPT_BATCH)."""
    LABELS.update({name: functools.partial(_label, kinds, name) for name in kinds})
    OWN_ACCEPT_BATCH.update({name: functools.partial(_own_batch, kinds, name) for name in kinds})
