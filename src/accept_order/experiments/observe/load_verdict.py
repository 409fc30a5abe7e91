"""What share of the load each worker of an observation carries, beside its share of the connections the load was
counted on (those seen held at a look): the bytes received, how many connections the shares rest on and whether
they split as chance would, the accepts' split where it parts from theirs and why, what the samples missed (tails
of connections closed busy, closes). Pure: a result in, sentences out; verdict.py sets them after the headline."""

from __future__ import annotations

from ...render.text import plural
from .closes import closes, unseen_bytes
from .judged import UNEVEN, even_split, held_by_chance, judged, long_lived, unjudged
from .result import ObserveResult

APART = 10  # points: a worker's share of the bytes this far from its share of the connections is said (either way)
FEW = 10  # connections: shares of the load resting on fewer are not a finding


def load(result: ObserveResult) -> list[str]:
    """The load share beside the share of the connections it was counted on (those seen held at a look),
    how many connections the shares rest on, the accept share where it differs from theirs, and what the
    samples missed."""
    if not result.loaded:
        return []
    workers = result.workers
    held = [w.connections_held or 0 for w in workers]
    received = [w.bytes_in or 0 for w in workers]
    seen = [w.connections_observed or 0 for w in workers]
    if not sum(received) and not sum(seen):
        # what the kernel's announcements gave is said still: connections no look saw, their bytes, those skipped
        late = result.closes_late_bytes_in  # may have carried, as the others:
        unread = result.closed_unlooked_bytes_in or result.closes_skipped or result.closes_lost or late
        carried = "" if unread else " and none carried data while observed"
        return [f"load: no connection was open at a sample{carried}", *closes(result, received)]
    if not sum(received) or len(workers) < 2 or judged(result):  # judged.py: a sliver of the bytes is no split
        first = _shares(result, held, received, seen) if sum(received) else _no_bytes(result, held, seen)
    else:
        first = unjudged(result, received)
    lines = [first, _resting(result, seen), *_accepts(result, seen)]
    if result.closed_busy:
        lines.append(_tails(result, received, seen))
    return lines + closes(result, received)


def _tails(result: ObserveResult, received: list[int], seen: list[int]) -> str:
    """What the bytes lack: the connections that closed between two looks while busy, what they carried
    of the bytes counted, and how long each one's uncounted tail can be (the longest time between two looks)."""
    moved, closed = sum(received), result.closed_busy or 0
    carried = f" (they carried {_pct(result.closed_busy_bytes_in or 0, moved)} of the bytes counted)" if moved else ""
    longest = result.load_longest_s
    upto = f", up to {longest:.2g} s of it (the longest time between two looks)," if longest else ""
    return (
        f"{closed:,} of the {sum(seen):,} connections seen closed between two looks while busy{carried}: what each "
        f"carried after its last look{upto} is not counted, so the bytes are short of it and their shares approximate"
    )


def _points(part: int, whole: int) -> int:
    """A share in whole percentage points, rounded as the report shows it (`:.0%`): a gap is judged on the
    figures a reader sees, so a sentence never says '10 points apart' of two shares shown 9 apart."""
    return int(f"{part / whole:.0%}"[:-1]) if whole else 0


def _apart(one: list[int], other: list[int]) -> tuple[int, int]:
    """(worker, gap in points) of the largest gap either way between two splits' shares (the first worker of
    the largest): the first split's share less the second's."""
    gaps = [_points(a, sum(one)) - _points(b, sum(other)) for a, b in zip(one, other, strict=True)]
    top = max(range(len(gaps)), key=lambda i: abs(gaps[i]))
    return top, gaps[top]


def load_uneven(result: ObserveResult) -> bool:
    """What changes how the load of long-lived connections splits is worth offering: they are long-lived and
    their bytes most of those counted (judged.py), they split less evenly than chance would (a cure redraws the
    split: one that chance made, it redraws alike), and the bytes part from their shares (a worker APART or more
    either way) or are uneven (a worker with UNEVEN times an even share)."""
    if not result.loaded or len(result.workers) < 2 or not judged(result) or not long_lived(result):
        return False
    received = [w.bytes_in or 0 for w in result.workers]
    seen = [w.connections_observed or 0 for w in result.workers]
    moved = sum(received)
    if not moved or not sum(seen) or even_split(seen)[0]:
        return False
    apart = abs(_apart(received, seen)[1]) >= APART
    return apart or max(received) / moved >= UNEVEN / len(received)


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def _shares(result: ObserveResult, held: list[int], received: list[int], seen: list[int]) -> str:
    """One sentence: the bytes beside the connections they were counted on (each worker's connections seen
    held at a look: a connection that closed before one carried nothing counted, so it is left out of both).
    The worker whose byte share is furthest from its share of them is named, either way, and what that
    means; or they split alike (some bytes were counted: see _no_bytes)."""
    n, open_, moved, total = len(result.workers), sum(held), sum(received), sum(seen)
    if n == 1:
        return f"load: its one worker holds {open_:,} connections, which received {moved:,} bytes"
    if not total:  # bytes are counted only on connections seen held: not from the load sampler
        top = max(range(n), key=lambda i: received[i])
        return f"worker {top} received {_pct(received[top], moved)} of the bytes; no connection was seen held"
    top, gap = _apart(received, seen)
    if abs(gap) < APART:
        return (
            f"the bytes split as the {total:,} connections seen held did: no worker's share of the bytes "
            f"({_pct(min(received), moved)} to {_pct(max(received), moved)}) is {APART} points or more from its "
            f"share of the connections ({_pct(min(seen), total)} to {_pct(max(seen), total)})"
        )
    said = (
        f"worker {top} held {seen[top]:,} of the {total:,} connections seen ({_pct(seen[top], total)}; an even "
        f"share is {1 / n:.0%}) but received {_pct(received[top], moved)} of the bytes"
    )
    if result.closed_busy:  # what the tails lack can make the gap (measured)
        return (
            f"{said}, though the bytes lack what {plural(result.closed_busy, 'connection')} closing busy carried "
            "after their last look (below): the gap may be theirs"
        )
    if not received[top]:
        return (
            f"{said}: its connections carried nothing between two looks at them (idle ones, or seen once before "
            "they closed)"
        )
    # a client that sends its next request once answered (a pool, wrk) gets what its worker answers: a worker that
    # holds more than an even share splits its time among more of them, which the clients alone do not explain
    crowded, roomy = seen[top] * n > total, seen[top] * n < total
    if gap < 0:
        why = "idler, or slower clients" + (
            ", or a worker answering each more slowly as it holds more" if crowded else ""
        )
        return (
            f"{said}: on average each of its connections carried less than the others' ({_gone(held, seen, top)}{why})"
        )
    why = "busier, or faster clients" + (", or a worker answering each sooner as it holds fewer" if roomy else "")
    gone = _gone_others(held, seen, top)
    return f"{said}: on average each of its connections carried more than the others' ({gone}{why})"


def _gone(held: list[int], seen: list[int], top: int) -> str:
    """The first cause where more of `top`'s connections seen closed while observed than of the others' (a
    client that ended: h2load's 8 on one nginx worker, gone 2 s into a 6 s window, read 'held 8 of the 16
    connections seen but received 14% of the bytes' put down to idle clients or a slow worker alone)."""
    closed, others = seen[top] - held[top], sum(seen) - seen[top]
    if closed <= 0 or closed * others <= (others - (sum(held) - held[top])) * seen[top]:
        return ""  # its share of closed connections is no larger than the others'
    return f"{closed} of its {seen[top]} closed while observed, carrying bytes for part of the window only; or "


def _gone_others(held: list[int], seen: list[int], top: int) -> str:
    """The same cause seen from the worker whose connections carried more: the others' closed while observed,
    more of theirs than of its own (nginx, two h2loads of 6: the one on workers 0-2 ended 3.5 s into a 7 s
    window, the other's 6 on worker 3 went on; 'worker 3 ... received 75% of the bytes: ... carried more than
    the others' (busier, or faster clients)', of clients alike but for their end)."""
    others = sum(seen) - seen[top]
    closed = others - (sum(held) - held[top])
    if closed <= 0 or closed * seen[top] <= (seen[top] - held[top]) * others:
        return ""  # the others' share of closed connections is no larger than its own
    return f"{closed} of the others' {others} closed while observed, carrying bytes for part of the window only; or "


def _accepts(result: ObserveResult, seen: list[int]) -> list[str]:
    """The accept share where it parts from the share of the connections seen (traced: the kernel's accepts),
    with why: connections accepted that closed before a look (counted by the accepts, carrying nothing
    counted: wrk's extra connection is one), or ones open before observing began (counted by the load only).
    A split made of those is not the load's, so it is said apart and given no cause of load."""
    counts, found = result.counts, result.accepted_seen
    if not result.traced or counts is None or found is None:
        return []
    accepted, total = sum(counts), sum(seen)
    unseen, before = max(0, accepted - found), max(0, total - found)
    if not accepted:
        if not total:
            return []
        return [
            f"none of the {total:,} connections seen was accepted while observed (they were open before): how "
            "they were handed out was not seen"
        ]
    closed = f"{unseen:,} of {accepted:,} connections opened and closed between two samples"
    top, gap = _apart(list(counts), seen) if total else (0, 0)
    # the split of those seen is set against the accepts' where it means something: enough (not 2 of 37,688), or most
    # accepted (wrk -c6: 6 seen of 7), and not a part chance gives a sample (16 of 50 where 11 were due)
    chance = bool(found < unseen and not before) and held_by_chance(list(counts), seen, top)  # those seen: a sample
    if abs(gap) < APART or len(seen) < 2 or not (total >= FEW or found >= unseen) or chance:
        return [f"{closed}: {unseen_bytes(result, unseen)}"] if unseen else []
    why = []
    if unseen:
        lived = "a larger share of its connections" if gap < 0 else "a smaller share of its connections"
        cause = "longer-lived ones" if gap < 0 else "shorter-lived ones, or ones that carried nothing"
        why.append(f"{closed} (counted in the accepts, not in the load)")
        if not before:  # every connection seen was accepted while observed: the gap is who lived to a look
            why.append(f"{lived} lived until a look ({cause})")
    if before:
        why.append(f"{before:,} of the {total:,} seen were open before observing began (the load counts them only)")
    if not why:  # as many accepted as seen, all seen accepted, yet split apart: counted to other workers
        why.append("the accepts and the looks counted them to different workers (handed on after the accept?)")
    return [
        f"the accepts split otherwise: worker {top} accepted {_pct(counts[top], accepted)} of the {accepted:,} "
        f"connections and held {_pct(seen[top], total)} of the {total:,} seen: {'; '.join(why)}"
    ]


def _no_bytes(result: ObserveResult, held: list[int], seen: list[int]) -> str:
    """Connections were seen held but no byte was counted: who held them, and why nothing is counted (a
    connection counts what it carried between two looks at it: one seen once, or idle, counts nothing)."""
    n, open_ = len(result.workers), sum(held)
    if open_:
        top = max(range(n), key=lambda i: held[i])
        who = f"worker {top} holds {held[top]:,} of the {open_:,} open now" if n > 1 else f"{open_:,} open now"
    else:
        top = max(range(n), key=lambda i: seen[i])
        who = f"none open now; worker {top} held {seen[top]:,} of them" if n > 1 else "none open now"
    counted = (
        "from its start (or the first look, if open as observe began) to its close or the end"
        if result.closes_counted is not None and not _tails_unread(result)
        else "between two looks at it (what a connection carries after its last look is not counted)"
    )
    return (
        f"load: {plural(sum(seen), 'connection')} seen held ({who}), and no byte counted: none carried data {counted}"
    )


def _tails_unread(result: ObserveResult) -> bool:
    """Some connection's close was not read (skipped for the budget, dropped by the kernel) or its tail is not
    known (closed busy): then no sentence may say a connection's data was counted to its close."""
    return bool(result.closes_skipped or result.closes_lost or result.closed_busy)


def _resting(result: ObserveResult, seen: list[int]) -> str:
    """How sure: the connections the load shares rest on, whether they themselves split as an even split
    would, and how often the load was looked at; where they split less evenly, who holds the most and
    whether the accepts placed them there."""
    total = sum(seen)
    pace = f"{plural(result.load_samples, 'look')}, one every {result.load_every_s or 0:.2g} s"
    said = f"the load shares rest on {plural(total, 'connection')} seen held ({pace})"
    if total < FEW:
        return f"{said}: a share of so few connections is not a finding"
    if len(seen) > 1 and (caught := _caught_together(result, seen)) is not None:
        return said + caught
    if len(seen) > 1:
        even, figures = even_split(seen)
        said += f"; the connections themselves split {'as' if even else 'less evenly than'} chance would ({figures})"
        if not even:
            said += _placed(result, seen)
    return said


def caught_at_once(result: ObserveResult, total: int) -> tuple[int, int] | None:
    """(worker, how many of its connections one look caught open) where most of the `total` connections seen closed
    between two looks (short-lived) and a look caught 2 or more of one worker's at once: the connections seen are
    those the looks happened to catch, clustered where a worker was slow, not independent draws; None otherwise."""
    peaks = [w.connections_held_peak or 0 for w in result.workers]
    top = max(range(len(peaks)), key=lambda i: peaks[i]) if peaks else 0
    if not peaks or peaks[top] < 2 or 2 * (result.closed_busy or 0) < total:
        return None
    return top, peaks[top]


def _caught_together(result: ObserveResult, seen: list[int]) -> str | None:
    """Connections caught together (caught_at_once) are no test of their split. 'observe --no-trace' of Debian's
    lighttpd (3 workers) under wrk -c 20 with Connection: close saw 26 (17/6/3, worker 0 11 at one look, 25 closed
    between looks) and said they split less evenly than chance would (1 time in 320), worker 0 65% of them, where
    bpftrace counted its accepts 11,840 of 34,081 (35%; the others 28% and 37%). None where the split may be tested."""
    if (caught := caught_at_once(result, sum(seen))) is None:
        return None
    top, peak = caught
    counted = "" if result.traced else " (traced, observe counts every accept)"
    return (
        f"; they are those the looks caught open, {peak} of worker {top}'s at one look, most closed before the "
        f"next: not independent draws, so how evenly they split is no test of how the workers take connections{counted}"
    )


def _placed(result: ObserveResult, seen: list[int]) -> str:
    """Who holds the most of connections split less evenly than chance, and why: the accept order placed
    them, where the kernel's accepts split as they do (a split apart from them is said by _accepts);
    untraced, or with no accept seen, it may as well be that the others' connections closed sooner."""
    n, total = len(seen), sum(seen)
    top = max(range(n), key=lambda i: seen[i])
    said = f": worker {top} held {_pct(seen[top], total)} of them (an even share is {1 / n:.0%})"
    counts = list(result.counts or ())
    accepted = sum(counts)
    if result.traced and accepted:
        if abs(_apart(counts, seen)[1]) >= APART:
            return said  # the accepts split otherwise: said apart, with why
        return f"{said} and accepted {_pct(counts[top], accepted)} of the connections: the accept order placed them"
    return f"{said}: placed there when they were accepted, or the others' connections closed sooner"
