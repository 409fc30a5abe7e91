"""`inspect`'s report: listeners, who serves, how each worker waits, the mechanism and why, what would
change it, the kernel's settings. Tables that wrap their long cells, so that 80 columns hold it."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ...render.indented import IndentedLines
from ...render.line_rows import LineRowsTable
from .cure_rows import cure_table, kind_named
from .result import EpollView, InspectResult

ROLE = {"worker": "listens", "fed": "fed", "acceptor": "acceptor", "lock": "no lock", "busy": "busy"}


def _table(title: str, *columns: str, wrap: tuple[str, ...] = ()) -> Table:
    # One-line rows printed as one (render/line_rows.py): a 64-worker table cost 0.07 s of CPU, now 0.03 s
    table = LineRowsTable(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for name in columns:
        right = name in ("backlog", "Recv-Q", "threads")
        table.add_column(name, justify="right" if right else "left", no_wrap=name not in wrap, overflow="fold")
    return table


def _para(text: str, style: str = "", indent: int = 2) -> Padding | Text:
    """A paragraph that wraps under its own first word, not at the terminal's left edge (at the edge itself:
    the Text alone, which the printer wraps; a Padding of no indent was printed cut at the width instead)."""
    if not indent:
        return Text(text, style=style)
    return Padding(Text(text, style=style), (0, 0, 0, indent), expand=False)


def _holders(result: InspectResult, pids: tuple[int, ...]) -> str:
    """Who holds a listener, by role: `master w0 w1`; a threaded worker process as `w0+w1`."""
    roles = {p.pid: p.role for p in result.processes}
    names = []
    for pid in pids:
        labels = [u.label for u in result.units if u.pid == pid and u.role in ("worker", "lock", "busy")]
        if labels:
            names.append("+".join(labels))
        elif roles.get(pid) in ("master", "acceptor"):
            names.append(roles[pid])
        else:
            names.append(str(pid))
    return " ".join(names)


def _heading(result: InspectResult) -> Text:
    what = result.recognised or result.program
    workers = result.workers
    master = next((p for p in result.processes if p.role == "master"), None)
    head = f"accept-order inspect {result.target}: {what}"
    if master is not None:
        head += f", master pid {master.pid}"
    return Text(head + f", {workers} worker{'s' if workers != 1 else ''}", style="bold")


def _listeners(result: InspectResult) -> Table:
    table = _table("Listeners", "address", "backlog", "Recv-Q", "inode", "held by", "waited on by", wrap=("held by",))
    for row in result.listeners:
        table.add_row(
            row.where,
            "-" if row.backlog is None else str(row.backlog),
            str(row.queue),
            str(row.inode),
            _holders(result, row.held_by),
            " ".join(row.waited_by) or "-",
        )
    return table


def _processes(result: InspectResult) -> Table:
    held = any(p.connections_held is not None for p in result.processes)  # a file from before: no column
    columns = ["pid", "name", "role", "threads", "main thread in", "holds", *(["conns"] if held else [])]
    table = _table("Who serves", *columns)
    table.columns[-1].justify = "right" if held else table.columns[-1].justify
    for p in result.processes:
        holds = f"{len(p.holds)} listener{'s' if len(p.holds) != 1 else ''}" if p.holds else "-"
        conns = ["-" if p.connections_held is None else f"{p.connections_held:,}"] if held else []
        table.add_row(str(p.pid), Text(p.name), p.role, str(p.threads), p.call, holds, *conns)
    return table


def _held(result: InspectResult) -> list[RenderableType]:
    """Connections held now, and where the server holds any, what changes how their load splits."""
    counts = [p.connections_held for p in result.processes if p.connections_held is not None]
    if not counts or not sum(counts):
        return []
    lines: list[RenderableType] = [
        _para(
            f"conns: the open connections on its ports each process holds now ({sum(counts):,} in all); which "
            "worker holds a long-lived one decides its load for its whole life",
            indent=0,
        )
    ]
    what = result.recognised or result.program
    heading = f"What changes how the load of long-lived connections splits ({what})"
    return lines + cure_table(kind_named(result.recognised), result.mechanism.modes, heading)


def _units(result: InspectResult) -> Table:
    threaded = any(u.tid != u.pid for u in result.units)
    roles = {u.role for u in result.units} != {"worker"}
    columns = ["", "pid", *(["tid"] if threaded else []), *(["role"] if roles else []), "sleeps in", "wchan", "on"]
    table = _table("How each worker waits", *columns, wrap=("wchan", "on"))
    holder = any(u.role == "worker" for u in result.units)
    for u in result.units:
        cells = [
            u.label,
            str(u.pid),
            *([str(u.tid)] if threaded else []),
            *([_role(u.role, u.call, holder)] if roles else []),
        ]
        table.add_row(*cells, u.call, u.wchan or "-", u.on)
    return table


def _role(role: str, call: str, holder: bool) -> str:
    """A unit's role in a word. A running lock taker holds no lock where a worker is seen waiting on the listeners
    (the lock's holder waits there); where none is, one of the running may hold it, between its wakeup and its
    accept, which /proc does not show."""
    if role == "lock" and call == "running" and not holder:
        return "lock?"
    return ROLE.get(role, role)


def _epoll_line(epoll: EpollView) -> str:
    listening = [w for w in epoll.watches if w.listener]
    parts = [
        f"tfd {w.fd} events {w.events:x} ino {w.inode}{' (EPOLLEXCLUSIVE)' if w.exclusive else ''}" for w in listening
    ]
    others = len(epoll.watches) - len(listening)
    text = f"pid {epoll.pid} fd {epoll.fd}: " + ("; ".join(parts) or "no listener")
    if others:
        text += f"; {others} other watch{'es' if others != 1 else ''}"
    if epoll.shared_with:
        text += "; the same instance as " + ", ".join(f"pid {p} fd {f}" for p, f in epoll.shared_with)
    return text


def _mechanism(result: InspectResult) -> list[RenderableType]:
    m = result.mechanism
    if m.name is None:
        return [Text("Mechanism: not seen", style="bold"), *(_para(e) for e in m.evidence)]
    named = f"Mechanism: {m.name}"
    if result.recognised and m.modes:
        named += f" ({result.recognised}'s {' or '.join(m.modes)})"
    lines: list[RenderableType] = [Text(named, style="bold")]
    lines += [_para(e) for e in m.evidence]
    order = m.model or "none (the order depends on which worker is fastest)"
    lines.append(_para(f"Predicts at idle: {order}; herds: {'yes' if m.herds else 'no'}; queue: {m.queue}"))
    lines.append(_para(f"Why: {m.why}"))
    lines += [_para(f"Not visible: {u}", style="yellow") for u in m.unseen]
    lines += [_para(f"Another port: {e}", style="yellow") for e in m.elsewhere]
    return lines


def _no_changes(result: InspectResult) -> list[RenderableType]:
    """No row: every mode of the server looks the same in /proc, or the server is not one this tool knows."""
    lines: list[RenderableType] = [Text("What changes it", style="bold")]
    if result.recognised is not None and result.mechanism.modes:
        seen = " or ".join(result.mechanism.modes)
        lines.append(_para(f"every mode of {result.recognised} looks like this in /proc ({seen}); measured here:"))
    elif result.recognised is None:
        lines.append(
            _para(
                f"{result.program} is not a server this tool knows: the setting that selects each mechanism "
                "is its own. This tool's own workers in every mode, measured here:"
            )
        )
    lines.append(_para(result.measure_all))
    return lines


def _changes(result: InspectResult) -> list[RenderableType]:
    """Each other mode with what it changes from the mode seen, and which of them /proc would confirm."""
    if not result.changes:
        return _no_changes(result)
    recorded = all(c.alike is not None for c in result.changes)  # a file from before: rows as they were
    seen = " or ".join(result.mechanism.modes) if recorded else ""
    alike = recorded and any(c.alike for c in result.changes)
    columns = ["mode", "seen as", *(["/proc confirms"] if alike else []), "settings, and the command that measures it"]
    table = _table(f"What changes it ({result.recognised}{f', from {seen}' if seen else ''})", *columns)
    table.columns[-1].no_wrap = False
    for c in result.changes:
        confirms = [f"no: as {' or '.join(c.alike)}" if c.alike else "yes"] if alike else []
        table.add_row(c.mode, c.mechanism, *confirms, "\n".join([*c.settings, c.command]))
    lines: list[RenderableType] = [table]
    if recorded:
        said = f"A row's settings are what it changes from {seen}; " if seen else ""
        if not seen and result.mechanism.name is not None:  # gunicorn's gthread workers: epoll-herd, no mode of it
            said = (
                f"no mode of {result.recognised} looks like this in /proc ({result.mechanism.name}): a row's "
                "settings are that mode's as this tool launches it, and this server differs from it in more; "
            )
        if alike:
            said += "/proc confirms: inspect would name the row's mode once set (no: another mode looks the same)."
        else:
            said += "inspect would confirm each row once set (no other mode looks like it in /proc)."
        lines.append(_para(said[0].upper() + said[1:], indent=0))
    return [*lines, Text(f"Every mode, measured here: {result.measure_all}")]


def _kernel(result: InspectResult) -> list[RenderableType]:
    settings = ", ".join(f"{k} {'?' if v is None else v}" for k, v in result.sysctls.items())
    counters = ", ".join(f"{k.removeprefix('TcpExt')} {v}" for k, v in result.counters.items()) or "not readable"
    env = result.environment
    return [
        Text(f"Kernel (the server's network namespace: {result.namespace})", style="bold"),
        _para(settings),
        _para(f"so far, in the whole namespace: {counters}"),
        _para(f"{env.system} {env.kernel} {env.machine}, {env.cpu_count} CPUs", style="dim"),
    ]


def inspect_report(result: InspectResult) -> RenderableType:
    parts: list[RenderableType] = [_heading(result), _listeners(result), _processes(result), _units(result)]
    if result.epolls:
        parts.append(Text("Epoll instances (fdinfo: the listeners each watches)", style="bold"))
        parts.append(IndentedLines([_epoll_line(e) for e in result.epolls], 2))  # one renderable, not one a line
    extra = []
    if result.io_urings:
        extra.append(f"{result.io_urings} io_uring instance(s) with an accept armed (PollList op=13)")
    if result.unix_links:
        extra.append(f"{result.unix_links} Unix socketpair(s) between the server's processes")
    parts += [_para(e) for e in extra]
    parts += _mechanism(result)
    parts += _changes(result)
    parts += _held(result)
    parts += _kernel(result)
    parts += [_para(f"Note: {n}", style="yellow", indent=0) for n in result.notes]
    return Group(*parts)
