"""Whether PyPI's uring-api can run an io_uring operation in this process: used by the load generator's loop
(loads/drivers.py: IORING_OP_SOCKET) and by the io-uring mode's workers (servers/modes/io_uring.py: multishot
accept). Each imports the binding itself (and says in its own words that it is missing)."""

from __future__ import annotations

from typing import Any

# The io-uring mode's ring (servers/modes/io_uring.py): its submission entries, and the completions it holds (the
# kernel's default, twice the entries). A worker's multishot accept ends when a connection finds its completions
# full; the latency model (analysis/queueing.py's `first`) hands the next connections to another worker then.
ACCEPT_ENTRIES = 64
ACCEPT_COMPLETIONS = 2 * ACCEPT_ENTRIES


def lacking(uring: Any, feature: str, without: str) -> str | None:
    """Why the imported binding `uring` cannot run what needs `feature` (a key of its probe()) here, `without`
    saying it for a kernel that lacks it; None when it can."""
    broken = getattr(uring, "_native_import_error", None)  # the package without its compiled part
    if broken is not None:
        return f"the io_uring binding's compiled part did not load ({broken}): reinstall uring-api"
    try:
        features = uring.probe()
    except (OSError, RuntimeError) as exc:
        return f"io_uring is not available here ({getattr(exc, 'strerror', None) or exc})"
    if not features.get("available"):
        return "io_uring is not available to this process (kernel.io_uring_disabled, or a seccomp filter)"
    if not features.get(feature):
        return without
    return None
