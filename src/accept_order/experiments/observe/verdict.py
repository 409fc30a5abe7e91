"""What an observation says, in the user's terms: who took what share of the connections, how even that
is, what share of the load each worker carries next to that (connections held, bytes received: on
long-lived connections these differ from the accepts), and what the kernel saw around it (empty accepts,
the listen queue, overflows). Pure: a result in, sentences out."""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis.chance import how_often, uniform_spread_p
from ...analysis.fairness import jain_index, max_min_share
from ...analysis.seen import SURE
from ...render.text import plural
from .closes import closes, unseen_bytes
from .judged import MANY, held_by_chance, judged, long_lived, unjudged
from .result import ObserveResult

UNEVEN = 1.5  # a worker with this many times an even share "took" the connections; below, they "shared"
ENOUGH_SAMPLES = 10  # of the listen queue, all empty, to say the workers kept up (a second's, at 100 ms)
APART = 10  # points: a worker's share of the bytes this far from its share of the connections is said (either way)
FEW = 10  # connections: shares of the load resting on fewer are not a finding


def even_split(counts: Sequence[int]) -> tuple[bool, str]:
    """(even, figures): whether an even split (each connection to any worker alike) spreads the connections
    this unevenly often enough (`run`'s test for a hash spread: analysis/seen.py's SURE), and how often."""
    p, test = uniform_spread_p(counts)
    return p >= SURE, f"{test} test: an even split spreads them at least this unevenly {how_often(p)}"


def _names(indices: list[int]) -> str:
    shown = [str(i) for i in indices]
    if len(shown) == 1:
        return f"worker {shown[0]}"
    return f"workers {', '.join(shown[:-1])} and {shown[-1]}"


def headline(result: ObserveResult) -> str:
    """One sentence: `worker 3 (pid 1234) took 71% of 48,210 connections; an even share is 33%`."""
    counts = result.counts
    n = len(result.workers)
    seconds = f"{result.wall_s:.1f} s"
    if counts is None:  # a threaded server without tracing: its threads share one fd table
        return f"connections per thread cannot be told without tracing; by CPU, {_by_cpu(result)}"
    total = sum(counts)
    what = "connections" if result.traced else "connections seen (sampled)"
    if total == 0 and not result.traced and sum(result.cpu) > 0:
        looked = sum(w.connections_observed or 0 for w in result.workers)  # the load's own looks, apart
        if looked:
            said = f"no connection was open at a look at the fd tables, though the load's looks saw {looked:,} held"
            return f"{said} (short ones pass unseen); by CPU, {_by_cpu(result)}"
        return f"no connection was open at any sample (short ones pass unseen); by CPU, {_by_cpu(result)}"
    if total == 0:
        verb = "accepted" if result.traced else "seen held by a worker"
        return f"no connection was {verb} in {seconds}: the server got no new connections while observed"
    about = "" if result.traced else "about "
    if n == 1:
        return f"its one worker ({result.workers[0].label}) took all {total:,} {what}"
    top = max(range(n), key=lambda i: counts[i])
    share = counts[top] / total
    none = [i for i, c in enumerate(counts) if c == 0]
    if share >= UNEVEN / n or none:
        worker = result.workers[top]
        line = (
            f"worker {top} ({worker.label}) took {about}{share:.0%} of {total:,} {what}; an even share is {1 / n:.0%}"
        )
        if none:
            line += f"; {_names(none)} took none"
        even, figures = even_split(counts)
        return line + (f" (as uneven as chance: {figures})" if even else "")
    low, high = min(counts) / total, max(counts) / total
    even, figures = even_split(counts)
    how = "evenly" if even else "unevenly"
    return f"the {n} workers shared {total:,} {what} {how}: {about}{low:.0%} to {high:.0%} each ({figures})"


def _by_cpu(result: ObserveResult) -> str:
    cpu = result.cpu
    used = sum(cpu)
    if used <= 0:
        return f"no worker used any CPU in {result.wall_s:.1f} s"
    top = max(range(len(cpu)), key=lambda i: cpu[i])
    # said with its seconds: a share of the workers' own CPU, not of a CPU (the table's %CPU), may be 100% of
    # almost nothing
    return (
        f"worker {top} ({result.workers[top].label}) used {cpu[top] / used:.0%} of the CPU time the workers used "
        f"({cpu[top]:.2f} of {used:.2f} s in {result.wall_s:.1f} s)"
    )


def fairness(result: ObserveResult) -> str | None:
    counts = result.counts
    if counts is None or len(counts) < 2 or not sum(counts):
        return None
    ratio = max_min_share(counts)
    return (
        f"fairness: Jain's index {jain_index(counts):.3f} (1: even; {1 / len(counts):.2f}: one took all), "
        f"max/min {'inf' if ratio is None else f'{ratio:.2f}'}"
    )


def mechanism(result: ObserveResult) -> list[str]:
    """The mechanism as inspect named it, why it gives what it gives, and what /proc could not show."""
    seen = result.mechanism
    if seen is None:
        return ["mechanism: not known (inspect could not name it from /proc)"]
    modes = f" (the server's mode {', '.join(seen.modes)})" if seen.modes else ""
    lines = [f"mechanism, read by {seen.source}: {seen.name}{modes}: {seen.why}"]
    lines += [f"not visible in /proc: {unseen}" for unseen in seen.unseen]
    return lines


def kernel(result: ObserveResult) -> list[str]:
    """What the kernel saw around the accepts: empty accepts, the listen queue, overflows."""
    lines = []
    accepts = sum(w.accepts or 0 for w in result.workers)
    empty = sum(w.empty or 0 for w in result.workers)
    if result.traced and empty:
        per = f", {empty / accepts:.2f} per connection" if accepts else ""
        lines.append(
            f"{empty:,} accept{'s' if empty > 1 else ''} came back empty (EAGAIN{per}): the queue was empty when "
            "the worker looked (woken for a connection another took, or the end of an accept-until-empty loop such "
            "as multi_accept)"
        )
    if (line := sleeps(result)) is not None:
        lines.append(line)
    lines.append(queue(result))
    overflows = result.counters.get("TcpExtListenOverflows", 0)
    if overflows:
        lines.append(
            f"{plural(overflows, 'connection attempt')} found a listen queue full (ListenOverflows, counted for "
            f"{result.namespace} network namespace: every listener in it)"
        )
    return lines


def sleeps(result: ObserveResult) -> str | None:
    """How often the workers slept, per connection; per data segment received where a connection carries
    many (keep-alive, HTTP/2: each request wakes its worker, so 'per connection' would count a whole
    connection's requests as one herd's wakeups)."""
    slept = [w.voluntary_switches for w in result.workers]
    counts = result.counts
    if not counts or not sum(counts) or any(s is None for s in slept):
        return None
    total = sum(s or 0 for s in slept)
    what = "(voluntary context switches: at most the wakeups)"
    if result.loaded:
        segments = sum(w.segments_in or 0 for w in result.workers)
        connections = sum(w.connections_observed or 0 for w in result.workers)
        if connections and segments / connections > MANY:
            return (
                f"the workers slept {total / segments:.2f} times per data segment received {what}; a connection "
                f"carried {segments / connections:,.0f} of them, so a figure per connection would say little"
            )
    return f"the workers slept {total / sum(counts):.2f} times per connection {what}"


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
        return f"{said}: on average each of its connections carried less than the others' ({why})"
    why = "busier, or faster clients" + (", or a worker answering each sooner as it holds fewer" if roomy else "")
    return f"{said}: on average each of its connections carried more than the others' ({why})"


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
        return [f"{closed}: {unseen_bytes(result)}"] if unseen else []
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
        "from its first look to its close or the end"
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
    if len(seen) > 1:
        even, figures = even_split(seen)
        said += f"; the connections themselves split {'as' if even else 'less evenly than'} chance would ({figures})"
        if not even:
            said += _placed(result, seen)
    return said


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


def queue(result: ObserveResult) -> str:
    """The listen queue at the samples; that the workers kept up only from enough of them (an empty queue
    at one look says nothing of the others), and not when nothing was accepted to keep up with."""
    n, wall = result.queue_samples, result.wall_s
    samples = f"{plural(n, 'sample')} in {wall:.1f} s"
    if result.queue_max is None:
        return "listen queue: not sampled"
    if result.queue_max:
        return (
            f"listen queue: at most {result.queue_max:,} waiting, {result.queue_mean or 0:.1f} on average ({samples})"
        )
    at = "the one sample" if n == 1 else f"each of {n:,} samples"
    if n < ENOUGH_SAMPLES:
        return f"listen queue: empty at {at} taken in {wall:.1f} s: too few to tell whether the workers kept up"
    said = f"listen queue: empty at {at}, one every {wall / n:.2g} s over {wall:.1f} s"
    idle = result.counts is not None and not sum(result.counts)  # nothing seen accepted: nothing to keep up with
    return said if idle else f"{said}: the workers kept up"


def verdict(result: ObserveResult) -> list[str]:
    lines = [headline(result)]
    if (line := fairness(result)) is not None:
        lines.append(line)
    lines += load(result)
    lines += mechanism(result)
    return lines + kernel(result)
