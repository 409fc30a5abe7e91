"""The kernel's evidence as text: listener lines, counter deltas, affinities (from the evidence dict)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ..core.cpus import format_cpu_list
from ..core.text import plural
from .simple_table import SimpleTable

# The counters beside which the server's own listeners' drops are worth saying (probes/listeners.listener_drops)
LISTEN_COUNTERS = frozenset({"TcpExtListenOverflows", "TcpExtListenDrops"})


def listener_drops_said(dropped: int, most: int | None = None) -> str:
    """'the server's listeners dropped 97 handshake packets': a listener's sk_drops counts each SYN or handshake-ending
    ACK it throws away, and a client sends its SYN again 1 s, 3 s, 7 s later (3 connects held past a full backlog-1
    queue for 3.6 s: 12 drops), so not connections. `most`: the largest of several runs' counts, `dropped` the
    smallest ('dropped 159 to 216 handshake packets')."""
    if most is not None and most != dropped:
        return f"the server's listeners dropped {dropped} to {most} handshake packets"
    return f"the server's listeners dropped {plural(dropped, 'handshake packet') if dropped else 'none'}"


def counters_moved(evidence: Mapping[str, Any]) -> bool:
    """Whether the run's kernel counters line has anything to say: a counter moved, or the server's own listeners
    dropped (a report of several runs gives the line only to those; one run's report always has it)."""
    dropped = evidence.get("listener_drops")
    return bool(evidence.get("counters")) or (isinstance(dropped, int) and dropped > 0)


def moved_counters_lines(runs: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Text]:
    """'epoll: kernel counters: ListenOverflows +157, ... (...; the server's listeners dropped 159 handshake
    packets)' for each (name, evidence) of a report of several runs whose counters had anything to say: one
    run's line, its name before it."""
    return [counters_text(evidence, f"{name}: kernel counters") for name, evidence in runs if counters_moved(evidence)]


def short_counter(name: str) -> str:
    """TcpExtListenOverflows -> ListenOverflows (the nstat prefix adds nothing on screen)."""
    return name.removeprefix("TcpExt")


def _endpoint(row: Mapping[str, Any]) -> str:
    address = str(row.get("address", "?"))
    if ":" in address:
        address = f"[{address}]"
    return f"{address}:{row.get('port', '?')}"


def listener_table(rows: Sequence[Mapping[str, Any]], title: str | None = None) -> SimpleTable:
    """Listening sockets the way `ss -ltn` prints them: Recv-Q is the accept queue now, Send-Q its limit."""
    names = ("State", "Recv-Q", "Send-Q", "Local Address:Port", "inode")
    table = SimpleTable(
        [(name, "right" if name.endswith("-Q") or name == "inode" else "left") for name in names], title=title
    )
    for row in rows:
        backlog = row.get("backlog")
        table.add_row(
            "LISTEN",
            str(row.get("queue", "?")),
            "-" if backlog is None else str(backlog),
            _endpoint(row),
            str(row.get("inode", "?")),
        )
    return table


def _listeners_line(label: str, rows: Sequence[Mapping[str, Any]]) -> Text:
    if not rows:
        return Text(f"  listeners ({label}): none found")
    kind = "one shared accept queue" if len(rows) == 1 else f"{len(rows)} accept queues (one per socket)"
    queues = " ".join(str(r.get("queue", "?")) for r in rows)
    limits = {r.get("backlog") for r in rows}
    limit = "?" if limits == {None} else "/".join(str(b) for b in sorted(x for x in limits if x is not None))
    source = rows[0].get("source", "netlink")
    where = f"  listeners ({label}): {_endpoint(rows[0])}, {kind}"
    return Text(f"{where}; Recv-Q {queues}, Send-Q {limit} (from {source})")


OTHERS_SHOWN = 0.1  # others' share of the CPUs worth naming (below it, the run's own processes explain it)


def machine_busy(busy: float, own_cpus: float | None, cpus: int, server_read: bool = True) -> str:
    """All CPUs' busy share (host-wide, from /proc/stat) beside what the run's own processes (workers, load
    generator) used of them, in CPUs: "busy" is blamed on them only as far as their own CPU time goes. The
    rest is other processes' (or interrupt work no process was charged for). `server_read` False: the workers'
    CPU was not read (a server not ours, here or elsewhere), so `own_cpus` is the load generator's alone and the
    rest is not split: 'this run's own 0%' would be false, and so would 'other processes' of a server here."""
    text = f"all CPUs {100 * busy:.0f}% busy host-wide"
    own = min(max((own_cpus or 0.0) / cpus, 0.0), busy) if cpus > 0 else 0.0
    if own_cpus is None or (not server_read and round(100 * own) == 0):
        return f"{text} (how much of it was this run's is not known: its server's CPU was not read)"
    if not server_read:  # the load generator's share is known; whose the rest was is not
        generator = f"the load generator used {100 * own:.0f}% of the CPUs"
        rest = f"whose the other {100 * (busy - own):.0f}% was is not known"
        return f"{text}: {generator}; {rest} (other processes', or the server's: its CPU was not read)"
    if busy - own >= OTHERS_SHOWN:
        others = f"other processes (or interrupts) used {100 * (busy - own):.0f}% of the CPUs"
        return f"{text}: {others}, this run's own {100 * own:.0f}%"
    return f"{text}, nearly all of it this run's workers and load generator ({100 * own:.0f}%)"


SHARED_SHORT = "host-wide: shared network namespace, may include other TCP traffic on this host"
PRIVATE_SHORT = "private network namespace: this run's traffic only"


def server_namespace_short(pid: int) -> str:
    """Whose the counters are when read in an attached server's network namespace (not this tool's)."""
    return (
        f"the server's network namespace, read from /proc/{pid}/net/netstat, not this tool's: may include other TCP "
        "traffic there"
    )


def counters_text(evidence: Mapping[str, Any], label: str = "kernel counters") -> Text:
    """Non-zero counter deltas and whose they are (private or shared namespace; several hosts' in a merge)."""
    unmerged = evidence.get("counters_unmerged")
    if isinstance(unmerged, str):  # results/merge.py: one file's would read as the whole load's
        return Text(f"  {label}: not added for the merged load: {unmerged}", style="dim")
    dropped = evidence.get("listener_drops")  # read per listener (netlink), whoever's counters are not
    unread = evidence.get("counters_unread")
    if isinstance(unread, str):  # an attached server in another namespace: ours would be some other traffic's
        own = f" ({listener_drops_said(dropped)})" if isinstance(dropped, int) and dropped > 0 else ""
        return Text(
            f"  {label}: not read in the server's network namespace, and this tool's are not its: {unread}{own}"
        )
    if not evidence.get("counters_available", False):
        return Text(f"  {label}: not available (no /proc/net/netstat)", style="dim")
    counters: Mapping[str, int] = evidence.get("counters", {})
    shared = evidence.get("shared_namespace", True)
    if evidence.get("traffic_elsewhere"):
        # --clients at a --target: this host only coordinated; a 'none moved' here would read as the run's
        label = f"{label} of this host, which only coordinated (the load went from the client hosts to the server)"
    text = Text(f"  {label}: ")
    if counters:
        text.append(", ".join(f"{short_counter(n)} {v:+d}" for n, v in counters.items()), style="bold yellow")
    else:
        watched = len(evidence.get("counters_watched", []))
        text.append(f"none of {watched} drop/overflow counters moved")
    # beside a listen counter, how many were the server's own listeners' (a shared one's may be others'; a private
    # one's are the run's, and a report of several runs gives its line for them: probes/listeners.listener_drops)
    listen = bool(LISTEN_COUNTERS & counters.keys())
    own = f"; {listener_drops_said(dropped)}" if isinstance(dropped, int) and listen else ""
    hosts = evidence.get("counters_hosts")
    if isinstance(hosts, list) and len(hosts) > 1:  # merged files from several hosts: each one's, added
        where = f"added over {len(hosts)} hosts' {'shared' if shared else 'private'} network namespaces: "
        where += ", ".join(str(h) for h in hosts)
        if shared:  # any file's: shared_namespace holds where one did (results/merge.py)
            text.append(f" ({where}; may include other TCP traffic there)", style="yellow")
        else:  # every file's namespace its run's own: nothing else moved them
            text.append(f" ({where}; these runs' traffic only)", style="dim")
    elif shared:
        pid = evidence.get("counters_pid")
        where = SHARED_SHORT if not isinstance(pid, int) else server_namespace_short(pid)
        if isinstance(landed := evidence.get("counters_landed"), str):
            where += f"; {landed}"  # a --target's: which namespace (ours too), told by where a connection landed
        text.append(f" ({where}{own})", style="yellow")
    else:
        why = evidence.get("netns", {}).get("why")
        # a --target's one connection made to find its namespace is in a private namespace's counters too
        landed = evidence.get("counters_landed")
        told = f"; {landed}" if isinstance(landed, str) else ""
        text.append(f" ({PRIVATE_SHORT}{'; ' + why if why else ''}{told}{own})", style="dim")
    return text


def affinity_text(affinity: Iterable[Mapping[str, Any]]) -> Text | None:
    entries = list(affinity)
    if not entries:
        return None
    shown = ["?" if e.get("cpus") is None else (format_cpu_list(e["cpus"]) or "?") for e in entries]
    if len(set(shown)) == 1:
        who = "the worker" if len(entries) == 1 else f"all {len(entries)} workers"
        return Text(f"  affinity: {who} on CPUs {shown[0]}")
    return Text("  affinity: " + ", ".join(f"worker {e.get('index')} {s}" for e, s in zip(entries, shown, strict=True)))


def acceptor_text(acceptor: Mapping[str, Any]) -> Text:
    """fd-pass's acceptor: what it handed to whom, and what that cost (its CPU is part of the mode's)."""
    passed = [int(n) for n in acceptor.get("passed", []) if isinstance(n, int)]
    total = sum(passed)
    cpu = acceptor.get("cpu_s")
    text = Text(f"  acceptor (pid {acceptor.get('pid', '?')}, {acceptor.get('policy', '?')}): passed ")
    text.append(" / ".join(map(str, passed)) or "nothing")
    if isinstance(cpu, int | float):
        text.append(f"; CPU {1000 * cpu:.1f} ms")
        if total:
            text.append(f" = {1e6 * cpu / total:.0f} µs per connection")
    switches = acceptor.get("voluntary_switches")
    if isinstance(switches, int) and total:
        text.append(f"; {switches / total:.2f} sleeps per connection")
    lost = acceptor.get("lost")
    if lost:
        text.append(f"; {lost} closed with no worker left to take them", style="yellow")
    return text


def shortage_lines(shortages: Any) -> list[Text]:
    """What a launched server logged running out of (evidence["shortages"]), one warning line each: the
    connections it dropped only show as failures (EPIPE, a reset) on the client side otherwise."""
    lines = []
    for entry in shortages if isinstance(shortages, list) else []:
        if not isinstance(entry, Mapping):
            continue
        server, log, mark = (str(entry.get(k, "?")) for k in ("server", "log", "mark"))
        count = entry.get("lines")
        times = f"{count} times" if isinstance(count, int) and count != 1 else "once"
        lines.append(
            Text(
                f'  {server} ran out: its {log} says "{mark}" {times}; connections it could not take waited '
                f"or failed (first: {str(entry.get('first', ''))[:160]})",
                style="yellow",
            )
        )
    return lines


def work_clock_line(evidence: Mapping[str, Any]) -> Text | None:
    """Where HAProxy's --work spun on its process's CPU (evidence["work_clock"], servers/launched/haproxy.py's
    PROCESS_CLOCK: Debian's lua-posix missing), which its threads spinning at once advance together."""
    if evidence.get("work_clock") != "process":
        return None
    return Text(
        "  HAProxy timed --work by its process's CPU (lua-posix, which reads each thread's own, was not found): "
        "threads that spun at once advanced it together, so each of them burned less than the work",
        style="yellow",
    )


def evidence_report(evidence: Mapping[str, Any], detail: bool = False) -> RenderableType:
    """Compact view of the evidence: one line per listener snapshot, the counters, the affinities.
    ``detail`` adds ss-like tables of every listener snapshot."""
    if not evidence:
        return Text("")
    parts: list[RenderableType] = [Text("Kernel evidence", style="bold")]
    listeners: Mapping[str, Sequence[Mapping[str, Any]]] = evidence.get("listeners", {})
    for label, rows in listeners.items():
        parts.append(_listeners_line(label, rows))
        if detail and rows:
            parts.append(listener_table(rows))
    parts.append(counters_text(evidence))
    affinity = affinity_text(evidence.get("affinity", []))
    if affinity is not None:
        parts.append(affinity)
    acceptor = evidence.get("acceptor")
    if isinstance(acceptor, Mapping):
        parts.append(acceptor_text(acceptor))
    for error in evidence.get("errors", []):
        parts.append(Text(f"  could not read {error}", style="yellow"))
    parts += shortage_lines(evidence.get("shortages"))
    parts += [line] if (line := work_clock_line(evidence)) is not None else []
    return Group(*parts)
