"""What parts two files' runs that merge refuses to add: every setting of the server or the load that differs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FIRST = ("server", "mode")  # what the server is, named before its settings


def differs(a: dict[str, Any], b: dict[str, Any], ignored: Sequence[str]) -> str | None:
    """Every field that differs, what the server is first ("server 'builtin' vs 'haproxy', mode 'epoll' vs
    'threads', accept_batch 0 vs 64"); None where none does. A builtin epoll file beside a launched HAProxy's read
    'server accept_batch 0 vs 64' alone (the first key in order), as if the cap were all that parted them."""
    keys = sorted(set(a) | set(b), key=lambda k: (k not in FIRST, FIRST.index(k) if k in FIRST else 0, k))
    said = [f"{k} {a.get(k)!r} vs {b.get(k)!r}" for k in keys if k not in ignored and a.get(k) != b.get(k)]
    return ", ".join(said) or None
