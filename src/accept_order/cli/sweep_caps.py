"""The caps `sweep` runs where none were given: its own (1,4,32,0), less those the server has no setting for.

nginx's multi_accept is on or off: it takes --accept-batch 0 and 1 and refuses 4 and 32, so `sweep --server
nginx`, the very cap the command's help names, stopped at once on caps nobody typed ('--accept-batch with nginx
is 0 (multi_accept on) or 1 (multi_accept off)'). A server whose mode reads no cap (the built-in blocking mode,
gunicorn) is still refused as before: two runs of the same server would sweep nothing.
"""

from __future__ import annotations

from ..core.errors import PlanError
from ..core.spec import ServerSpec

DEFAULT_CAPS = (1, 4, 32, 0)
DEFAULT_HELP = "1,4,32,0, or those of them the server takes: 1,0 for nginx"


def default_caps(server: ServerSpec) -> list[int]:
    """DEFAULT_CAPS that `server` takes. PlanError, the first cap's refusal, where it takes fewer than two or its
    mode reads none (every cap would run the same server)."""
    from ..servers.kind_option_checks import reads_batch
    from ..servers.registry import checked, server_kind

    taken: list[int] = []
    refused: PlanError | None = None
    for cap in DEFAULT_CAPS:
        try:
            checked(server.replace(accept_batch=cap))
        except PlanError as exc:
            refused = refused or exc
            continue
        taken.append(cap)
    if refused is not None and (len(taken) < 2 or not reads_batch(server_kind(server.kind), server.mode)):
        # said as sweep's: the user typed no --accept-batch, so a bare refusal of it reads as of an option not given
        raise PlanError(f"nothing to sweep: sweep runs one cap on accepts per wakeup after another, and {refused}")
    return taken
