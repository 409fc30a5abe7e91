"""Whether observe's load shares say how the load splits, and whether its connections are long-lived: what the
verdict needs before it sets the workers' shares of the bytes beside their shares of the connections, or offers
what changes how the load of long-lived connections splits; and whether a split of connections is one an even
split gives by chance (even_split: the headline's and the load's). Under 'Connection: close' nearly every
connection opens and closes between two looks: the few a look catches carry a sliver of the bytes, one request
each. Pure: a result in, a judgement or a sentence out."""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis.chance import binomial_tail, how_often, uniform_spread_p
from ...analysis.seen import SURE
from ...core.text import plural
from .result import ObserveResult

MANY = 4.0  # data segments received per connection above which a connection is not the unit of work (long-lived)
# of what was counted, the part in the workers' shares below which their shares say nothing of the load: measured
# with nginx (3 or 4 workers, 2 vCPUs) under wrk -c4 and -c50 with 'Connection: close', 0.01% to 0.2% (5 runs:
# nearly every connection opens and closes between two looks, its bytes in no worker's share); under keep-alive
# (wrk -c6, -c50, nginx's 1000 requests a connection) and h2load -c32, 100%: any line between parts them
MEANINGFUL = 0.5
UNEVEN = 1.5  # a worker with this many times an even share "took" the connections; below, they "shared"


def even_split(counts: Sequence[int]) -> tuple[bool, str]:
    """(even, figures): whether an even split (each connection to any worker alike) spreads the connections
    this unevenly often enough (`run`'s test for a hash spread: analysis/seen.py's SURE), and how often."""
    p, test = uniform_spread_p(counts)
    return p >= SURE, f"{test} test: an even split spreads them at least this unevenly {how_often(p)}"


def long_lived(result: ObserveResult) -> bool:
    """The connections seen carried many data segments each (MANY or more: several requests, or one long
    one), not one request each as under 'Connection: close' (measured: 0.3 to 0.5 a connection seen, against
    700 to 24,000 under keep-alive and HTTP/2)."""
    segments = sum(w.segments_in or 0 for w in result.workers)
    seen = sum(w.connections_observed or 0 for w in result.workers)
    return bool(seen) and segments / seen > MANY


def in_shares(result: ObserveResult) -> tuple[int, int] | None:
    """(bytes in the workers' shares, bytes counted in all): those of the connections that opened and closed
    between two looks are counted apart, in no worker's share. None where those were not read (a file from
    before the kernel's announcements of closes, or none read)."""
    if result.closes_counted is None or result.closed_unlooked_bytes_in is None:
        return None
    received = sum(w.bytes_in or 0 for w in result.workers)
    return received, received + result.closed_unlooked_bytes_in


def part_said(part: int, whole: int) -> str:
    """`part` of `whole` in whole percent, 'less than 1%' below it (nginx's short connections left 0.01% to 0.2% of
    the bytes in the workers' shares: '0%' would say the lines they draw rest on nothing), and with the decimals
    it needs short of all of it, 'more than 99.99%' past two (a kept pool's 6,363,856 of 6,363,857 bytes read
    '100% of the bytes received' beside the byte in no worker's share)."""
    share = part / whole if whole else 0.0
    if 0 < share < 0.01:
        return "less than 1%"
    if share >= 1:
        return f"{share:.0%}"
    said = next((s for s in (f"{share:.{d}%}" for d in range(3)) if not s.startswith("100")), None)
    return said or "more than 99.99%"


def judged(result: ObserveResult) -> bool:
    """The workers' shares of the bytes say how the load splits: they hold MEANINGFUL or more of the bytes
    counted; where the bytes apart are not known (not read), the connections seen were long-lived (one request
    each, the bytes a look catches are a sliver of what the load carried, and where the rest went is not known)."""
    bytes_ = in_shares(result)
    if bytes_ is not None:
        return bytes_[1] > 0 and bytes_[0] >= MEANINGFUL * bytes_[1]
    return long_lived(result)


def unjudged(result: ObserveResult, received: list[int]) -> str:
    """Why the bytes' shares are not set beside the connections': they are a small part of what was counted."""
    bytes_ = in_shares(result)
    if bytes_ is not None:
        part, whole = bytes_
        shown = part_said(part, whole)
        return (
            f"the bytes in the workers' shares ({plural(part, 'byte', grouped=True)}, {shown} of the {whole:,} "
            "counted) say nothing of how the load splits: nearly every connection opened and closed between two looks "
            "(below), its bytes in no worker's share"
        )
    segments = sum(w.segments_in or 0 for w in result.workers)
    seen = sum(w.connections_observed or 0 for w in result.workers)
    return (
        f"the bytes in the workers' shares ({plural(sum(received), 'byte', grouped=True)}) say nothing of how the "
        f"load splits: the {seen:,} connections seen received {segments / seen if seen else 0:.1f} data segments "
        "each (short ones, a request or a few each), and the bytes of those no look saw are not known"
    )


def held_by_chance(accepted: list[int], seen: list[int], top: int) -> bool:
    """Worker `top`'s part of the connections seen held is one chance gives a sample of the connections it
    accepted (SURE or more often), where every one seen was accepted while observed: 16 of 50 seen against 22%
    of 109,896 accepted (11 expected) is 1 time in 14, no sign that its connections lived longer."""
    total, share = sum(seen), accepted[top] / sum(accepted) if sum(accepted) else 0.0
    return binomial_tail(seen[top], total, share) >= SURE
