"""merge: whether two files' kernel counters were read in one network namespace. A run at a server attached in a
namespace other than the tool's reads them there (evidence.counters_pid: /proc/PID/net/netstat), another run in the
tool's own: added, a file of each read as one namespace's count, whichever file came first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def counters_apart(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Why the counters of evidence `a` and `b` cannot be added as one namespace's, or None where they can: both read
    in the tool's namespace (as before counters_pid), or both in an attached server's, the same one (netns.inode,
    known where the tool could look at the server's /proc/PID/ns/net)."""
    pids = [e.get("counters_pid") for e in (a, b)]
    if pids == [None, None]:
        return None
    if None in pids:
        return "read in different network namespaces (one file's in an attached server's, one in this tool's)"
    inodes = [e.get("netns", {}).get("inode") for e in (a, b)]
    if inodes[0] is not None and inodes[0] == inodes[1]:
        return None
    return "read in attached servers' network namespaces not known to be one"
