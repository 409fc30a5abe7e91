"""How a load over kept connections is said in a latency report's words: how its connections are kept, what the
load generator counts as finished, and the load's amount (connections, or requests)."""

from __future__ import annotations

from ...core.spec import ConcurrentLoad
from ...core.text import plural


def kept_words(load: ConcurrentLoad) -> str:
    """How the load's connections are kept, for its headline ('' for one request each)."""
    if not load.keeps_connections:
        return ""
    per = load.requests_per_connection
    each = "each connection kept for the whole run" if per == 0 else f"{per} requests per connection"
    return f", {each}" + (", opened as a pool first" if load.pool else "")


def finished_unit(load: ConcurrentLoad) -> str:
    """What the load generator counts as finished, and so divides its CPU by (loads/kept.py counts each
    request over a kept connection): 'request' when connections are kept, else 'connection'."""
    return "request" if load.keeps_connections else "connection"


def kept_amount(load: ConcurrentLoad) -> str:
    """The load's count: connections, or requests when a connection carries several (an open loop's says
    how they are kept here too, as its line has no other place for it)."""
    count = load.connections or 0
    if not load.keeps_connections:
        return plural(count, "connection")
    return plural(count, "request") + (kept_words(load) if load.rate is not None else "")
