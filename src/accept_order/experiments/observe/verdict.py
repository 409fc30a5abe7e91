"""What an observation says, in the user's terms: who took what share of the connections, how even that
is, what share of the load each worker carries next to that (load_verdict.py: connections held, bytes received;
on long-lived connections these differ from the accepts), and what the kernel saw around it (empty accepts,
the listen queue, overflows). Pure: a result in, sentences out."""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil

from ...analysis.fairness import jain_index, max_min_share
from ...core.models import Mechanism
from ...render.text import plural
from .handoff import handed_on, handoff_line
from .judged import MANY, UNEVEN, even_split, in_shares, part_said
from .load_verdict import caught_at_once, load
from .result import ObserveResult
from .thread_split import serving_line

# shares further apart than an even share over this are not called 'even', whatever chance says: 2 workers 10
# points, 3 workers 6.7, 16 workers 1.25 (a fixed 10 points called 2 and 14 of 160 connections over 16 'even')
EVEN_PARTS = 5
ENOUGH_SAMPLES = 10  # of the listen queue, all empty, to say the workers kept up (a second's, at 100 ms)


def through_io_uring(result: ObserveResult) -> bool:
    """Its workers accept through io_uring (inspect names the io-uring mechanism) and the kernel's count, on the
    accept calls' tracepoints, saw none of their accepts (an io_uring accept makes no accept call). inspect takes
    a thread asleep in io_uring_enter to wait on the listener, so a server that accepts in accept calls and waits
    on a ring for something else reads io-uring too: where the calls returned connections, they are its accepts."""
    named = result.mechanism is not None and result.mechanism.name == "io-uring"
    return result.traced and named and not sum(result.counts or ())


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
    # one: 'took 100% of 1 connections' read as a slip
    what = ("connection" if total == 1 else "connections") + ("" if result.traced else " seen (sampled)")
    if total == 0 and not result.traced and sum(result.cpu) > 0:
        looked = sum(w.connections_observed or 0 for w in result.workers)  # the load's own looks, apart
        if looked:
            said = f"no connection was open at a look at the fd tables, though the load's looks saw {looked:,} held"
            return f"{said} (short ones pass unseen); by CPU, {_by_cpu(result)}"
        return f"no connection was open at any sample (short ones pass unseen); by CPU, {_by_cpu(result)}"
    if total == 0 and through_io_uring(result):  # 2,000 served while observed read 'got no new connections'
        return (
            f"no accept call returned a connection in {seconds}, and none would: the workers accept through io_uring "
            "(inspect: io-uring), which makes no accept call for the kernel's count to see, so who took how many "
            "is not known here"
        )
    if total == 0:
        verb = "accepted" if result.traced else "seen held by a worker"
        if result.queue_max:  # Apache event, stalled at MaxRequestWorkers with 25 waiting, 'got no new connections'
            return (
                f"no connection was {verb} in {seconds}, though the listen queue held up to {result.queue_max:,} "
                f"({result.queue_mean or 0:.1f} on average at {plural(result.queue_samples, 'sample')}): connections "
                "waited and none was taken (its workers are not accepting: stopped, at a connection limit such as "
                "Apache's MaxRequestWorkers or HAProxy's maxconn, or busy with something else)"
            )
        return f"no connection was {verb} in {seconds}: the server got no new connections while observed"
    if not result.traced and n > 1 and (caught := caught_at_once(result, total)) is not None:
        return _caught_lead(result, counts, *caught)
    about = "" if result.traced else "about "
    took = "accepted" if handed_on(result) else "took"  # HAProxy's: an accept is not who serves
    if n == 1:
        return f"its one worker ({result.workers[0].label}) took {'all ' if total > 1 else ''}{total:,} {what}"
    top = max(range(n), key=lambda i: counts[i])
    share = counts[top] / total
    none = [i for i, c in enumerate(counts) if c == 0]
    if share >= UNEVEN / n or none:
        worker = result.workers[top]
        line = (
            f"worker {top} ({worker.label}) {took} {about}{share:.0%} of {total:,} {what}; an even share is {1 / n:.0%}"
        )
        if none:
            line += f"; {_names(none)} {took} none"
        even, figures = even_split(counts)
        return line + (f" (as uneven as chance: {figures})" if even else "")
    low, high = min(counts) / total, max(counts) / total
    even, figures = even_split(counts)
    spread = f"{about}{low:.0%} to {high:.0%} each"
    if even and (max(counts) - min(counts)) * n * EVEN_PARTS > total:  # not told from chance, but not even: 24
        # connections read 'shared evenly: 29% to 71%' (1 time in 16); said as the branch above says it
        return f"the {n} workers shared {total:,} {what}: {spread} (as uneven as chance: {figures})"
    if not even and (max(counts) - min(counts)) * n * EVEN_PARTS <= total:
        # told from chance, but only as many connections tell a few points apart: 135,699 at 31% to 34% each read
        # 'unevenly' above a Jain's index of 0.998, in the words of the complaint 'one worker takes everything'
        off = ceil(round(100 * max(high - 1 / n, 1 / n - low), 6))
        return (
            f"the {n} workers shared {total:,} {what} nearly evenly: {spread}, within {plural(max(off, 1), 'point')} "
            f"of an even share ({1 / n:.0%}), yet further from it than chance alone puts them ({figures})"
        )
    how = "evenly" if even else "unevenly"
    return f"the {n} workers shared {total:,} {what} {how}: {spread} ({figures})"


def _caught_lead(result: ObserveResult, counts: Sequence[int], top: int, peak: int) -> str:
    """Untraced, the connections the looks caught open together are no share of who took them: 'observe --no-trace'
    of Debian's lighttpd (3 workers, wrk -c 20, Connection: close) led 'worker 0 took about 65% of 26 connections
    seen (sampled)', 11 of them at one look, where bpftrace counted its accepts 35% of 34,081."""
    each = ", ".join(f"{c:,}" for c in counts)
    return (
        f"who took how many connections is not known untraced: the looks caught {sum(counts):,} open ({each} by "
        f"worker), {peak} of worker {top}'s at one look and most closed before the next, so their split is where "
        f"the looks fell, not how the workers take connections (traced, observe counts every accept); by CPU, "
        f"{_by_cpu(result)}"
    )


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
    if not result.traced and caught_at_once(result, sum(counts)) is not None:
        return None  # an index of where the looks fell (headline)
    ratio = max_min_share(counts)
    said = (
        f"Jain's index {jain_index(counts):.3f} (1: even; {1 / len(counts):.2f}: one took all), "
        f"max/min {'inf' if ratio is None else f'{ratio:.2f}'}"
    )
    # HAProxy 2.6 (4 threads, h2load -c 16) read 'fairness: Jain's index 0.250 (...: one took all)' of one thread's
    # 16 accepts, where the threads' epolls served 4 each: the accepts' evenness, not the load's (handoff_line)
    if handed_on(result):
        return f"fairness of the accepts: {said}; not of the connections each thread serves, handed on as said above"
    return f"fairness: {said}"


def mechanism(result: ObserveResult) -> list[str]:
    """The mechanism as inspect named it, why it gives what it gives, and what /proc could not show."""
    seen = result.mechanism
    if seen is None:
        return ["mechanism: not known (inspect could not name it from /proc)"]
    modes = f" (the server's mode {', '.join(seen.modes)})" if seen.modes else ""
    lines = [f"mechanism, read by {seen.source}: {seen.name}{modes}: {seen.why}"]
    lines += [f"not visible in /proc: {unseen}" for unseen in seen.unseen]
    lines += [f"another port: {other}" for other in seen.elsewhere]
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
            f"the worker looked ({_why_empty(result)})"
        )
    if (line := sleeps(result)) is not None:
        lines.append(line)
    lines.append(queue(result))
    overflows = result.counters.get("TcpExtListenOverflows", 0)
    if overflows:
        lines.append(
            # packets, not connections: a client sends a dropped SYN again (1 s, 3 s, ...), and each counts
            f"{plural(overflows, 'handshake packet')} met a full listen queue (ListenOverflows, counted for "
            f"{result.namespace} network namespace: every listener in it; a SYN sent again counts again)"
            f"{_own_drops(result)}"
        )
    return lines


def _own_drops(result: ObserveResult) -> str:
    """'; the server's own listeners dropped N' beside the namespace's overflows (a busy host's other listeners
    overflow too: 4 of another's, nginx's d0). Their sk_drops counts each handshake-ending ACK a listener with
    TCP_DEFER_ACCEPT drops too: Apache event's grew 3,903 over 3,903 connections while its queue was empty at 48
    samples, beside 8 overflows of another listener; ListenDrops, every listen drop of the namespace, bounds theirs."""
    own = result.listener_drops
    if own is None:
        return ""
    if own == 0:
        return "; the server's own listeners dropped none"
    bound = result.counters.get("TcpExtListenDrops")
    if bound is None or own <= bound:
        return f"; the server's own listeners dropped {own:,}"
    return (
        f"; the server's own listeners dropped {'none' if bound == 0 else f'at most {bound:,}'} of them: their "
        f"count grew {own:,}, more than the namespace's ListenDrops (+{bound:,}), so {own - bound:,} or more were "
        "not a full queue's "
        "(a listener with TCP_DEFER_ACCEPT, as Apache's and uWSGI's, drops each connection's handshake-ending ACK)"
    )


def _why_empty(result: ObserveResult) -> str:
    """What left a worker's accept empty. Listeners of their own (reuseport, each worker its own queue) take no
    connection from one another: 'woken for a connection another took' was said of an SO_REUSEPORT group whose
    two workers each ended every accept-until-EAGAIN loop with one (500 connections, 500 empty)."""
    loop = "the end of an accept-until-empty loop such as multi_accept"
    # not where another port's listener is shared: its connections may be taken by any worker
    if result.mechanism is not None and result.mechanism.name == Mechanism.REUSEPORT and not result.mechanism.elsewhere:
        return f"{loop}: each worker has a queue of its own, so none takes another's connection"
    return f"woken for a connection another took, or {loop}"


def sleeps(result: ObserveResult) -> str | None:
    """How often the workers slept, per connection; per data segment received where a connection carries
    many (keep-alive, HTTP/2: each request wakes its worker, so 'per connection' would count a whole
    connection's requests as one herd's wakeups)."""
    slept = [w.voluntary_switches for w in result.workers]
    counts = result.counts
    if not counts or any(s is None for s in slept):
        return None
    total = sum(s or 0 for s in slept)
    what = "(voluntary context switches: at most the wakeups)"
    if not result.loaded and result.process_segments_in is not None:
        # threads of one process: its connections' segments are all the threads' (one fd table), those of the
        # connections that closed unseen too (the one process held them: HAProxy under wrk -H 'Connection: close',
        # 5,168 segments, no connection seen), so the connections are those a look saw and those accepted while
        # observed that none saw: added, not the larger of the two (a pool of 8 opened before observing and 100
        # short ones accepted are 108, where the larger read 100)
        segments, found = result.process_segments_in, result.accepted_seen
        seen = (result.process_connections or 0) + (result.closed_unlooked or 0)
        connections = max(seen, sum(counts)) if found is None else seen + max(0, sum(counts) - found)
        if connections and segments / connections > MANY:
            return _per_segment(total / segments, what, "", segments / connections)
    if result.loaded:
        segments = sum(w.segments_in or 0 for w in result.workers)
        # the connections the segments were counted on: those a look saw, and (one worker) those that opened and
        # closed between two looks, counted to their close: 300 one-request connections to Caddy, one of them
        # seen, read 'a connection carried 300 of them' and slept 'per data segment', where none seen read per
        # connection. Added, not the larger of the two: 8 kept and 300 short ones are 308 (review RJ)
        looked = sum(w.connections_observed or 0 for w in result.workers)
        connections = looked + (result.closed_unlooked or 0 if len(result.workers) == 1 else 0)
        if connections and segments / connections > MANY:
            # several workers: the segments of connections no look saw are in no worker's count, where the
            # sleeps are all of them: gunicorn gthread, 633 of 717 connections unlooked, read 29.98 a segment
            # where its access log's requests gave 3.5. Those segments, in the bytes' proportion, are added
            bytes_ = in_shares(result) if len(result.workers) > 1 else None
            scaled = ""
            if bytes_ is not None and 0 < bytes_[0] < bytes_[1]:
                scaled = (
                    f", about (the segments of the connections the looks saw, {part_said(*bytes_)} of the "
                    "bytes received, taken in proportion for the rest)"
                )
                # the connections those bytes came on: the looks' and the unlooked ones (not the accepts
                # counted: sampled, without bpftrace, they are the few a look saw)
                segments, connections = round(segments * bytes_[1] / bytes_[0]), looked + (result.closed_unlooked or 0)
            return _per_segment(total / segments, what, scaled, segments / connections)
    connections, about = sum(counts), ""
    if not result.traced and result.closed_unlooked:
        # sampled, not traced: the counts are the few a look saw; those that opened and closed between two looks are
        # the kernel's announced closes (a gunicorn under wrk, observed as a user: 5 seen and 4,978 unlooked read
        # 1761.60 a connection; 1.77 with them, where bpftrace's accepts gave 1.80 under the same load). Closes
        # announced and not read, skipped for the budget or dropped by the kernel, are of the server's ports (the
        # watch's filter) but of sockets a look may have seen too: counted as unseen ones, so the figure is about
        unread = (result.closes_skipped or 0) + (result.closes_lost or 0)
        connections += result.closed_unlooked + unread
        about = f"; {unread:,} closes not read are counted as connections no look saw" if unread else ""
    if not connections:  # none accepted: per segment above where a pool opened before observing carried many
        return None
    return f"the workers slept {'about ' if about else ''}{total / connections:.2f} times per connection {what}{about}"


def _per_segment(slept: float, what: str, scaled: str, carried: float) -> str:
    return (
        f"the workers slept {slept:.2f} times per data segment received {what}{scaled}; a connection carried "
        f"{carried:,.0f} of them, so a figure per connection would say little"
    )


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
    if (line := handoff_line(result)) is not None:
        lines.append(line)
    if (line := serving_line(result)) is not None:
        lines.append(line)
    if (line := fairness(result)) is not None:
        lines.append(line)
    lines += load(result)
    lines += mechanism(result)
    return lines + kernel(result)
