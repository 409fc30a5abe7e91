"""A summary of the TCP sockets on this machine (in this network namespace), like `ss -s`: how many are in
each state, from /proc/net/tcp and tcp6 (the kernel's own table; reading it is cheap at these sizes)."""

from __future__ import annotations

from collections import Counter

# The state column of /proc/net/tcp, as include/net/tcp_states.h numbers them
STATES = {
    "01": "estab",
    "02": "syn-sent",
    "03": "syn-recv",
    "04": "fin-wait-1",
    "05": "fin-wait-2",
    "06": "time-wait",
    "07": "close",
    "08": "close-wait",
    "09": "last-ack",
    "0A": "listen",
    "0B": "closing",
}


def socket_summary(paths: tuple[str, ...] = ("/proc/net/tcp", "/proc/net/tcp6")) -> dict[str, int]:
    """Sockets per state ({} when /proc/net/tcp cannot be read); `total` is their sum."""
    counts: Counter[str] = Counter()
    for path in paths:
        try:
            with open(path) as f:
                next(f, None)  # the header
                for line in f:
                    fields = line.split(None, 4)
                    if len(fields) > 3:
                        counts[STATES.get(fields[3], fields[3])] += 1
        except OSError:
            continue
    summary = dict(counts)
    if summary:
        summary["total"] = sum(counts.values())
    return summary
