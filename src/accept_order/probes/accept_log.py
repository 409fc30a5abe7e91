"""Who accepted each connection, from the kernel: for a server that names no worker in its reply and
closes the connection as soon as it has answered (a line server), so that its owner cannot be looked up
in /proc (probes/owner.py) while the connection is still open.

bpftrace, on the same tracepoints as accepts.py, prints one line per accept by the attached workers: the
worker's pid, the port of the client at the other end (read from the accepted socket through the fd that
accept returned) and the time (CLOCK_MONOTONIC, the clock of time.perf_counter_ns). The client looks its
own local port up, so each connection finds its own accept whether or not connections overlap:

    with AcceptLog(pids) as log:
        log.start()                                         # returns once the tracepoints are attached
        pid = log.accepted_by(client_port, started_ns)      # after the reply: the accept came before it
        counts = log.stop_log()                             # available: whether every accept was logged

Nothing raises when tracing is impossible (not root, no bpftrace, no BTF to read the socket with):
accepted_by then answers None and stop() says why.
"""

from __future__ import annotations

import dataclasses
import re
import time

from .accept_counts import AcceptCounts
from .accept_filter import counted_as
from .accept_program import READING_MS
from .accepts import COUNTS_BEGIN, COUNTS_END, SOURCE, AcceptCounter, accepted_by
from .bpftrace_readings import reading_probe

LOOKUP_TIMEOUT_S = 1.0  # bpftrace prints an accept within milliseconds; the reply came after the accept
_LINE = re.compile(rb"^accept-order accepted (\d+) (\d+) (\d+) (\d+)$", re.MULTILINE)


def log_program(pids: tuple[int, ...] | None, threads: frozenset[int] = frozenset()) -> str:
    """Count accepts per pid as accepts.program does, and print each one with its client's port and its own.

    The accepted socket is the file at index `ret` in the caller's fd table; its struct sock has the peer's
    port (network byte order) in skc_dport, its own (host order) in skc_num: a client of another port of the same
    workers (HAProxy's other frontend) may have the same port as one of ours. Reading kernel structures needs BTF
    (/sys/kernel/btf/vmlinux).
    A worker among `threads` is a thread, known by its own id (accept_filter.thread_workers)."""
    pred = accepted_by(pids, threads=threads)
    who = counted_as(threads)
    return (
        "tracepoint:syscalls:sys_exit_accept4, tracepoint:syscalls:sys_exit_accept\n"
        f"/{pred}/\n"
        "{\n"
        f"  @[{who}] = count();\n"
        "  $file = *(curtask->files->fdt->fd + args->ret);\n"
        "  $sk = ((struct socket *)$file->private_data)->sk;\n"
        f'  printf("accept-order accepted %d %d %llu %d\\n", {who}, bswap($sk->__sk_common.skc_dport), nsecs,\n'
        "         $sk->__sk_common.skc_num);\n"
        "}\n"
        f"{reading_probe(READING_MS, 'print(@);')}"
        f'END {{ printf("{COUNTS_BEGIN}\\n"); print(@); clear(@); printf("{COUNTS_END}\\n"); }}\n'
    )


class AcceptLog(AcceptCounter):
    """bpftrace as a child, printing each accept by `pids` with its client's port (see the module doc)."""

    def __init__(self, pids: tuple[int, ...] | list[int]) -> None:
        super().__init__(pids)
        self._events: dict[int, list[tuple[int, int, int]]] = {}  # client port -> [(accepted at ns, pid, port)]
        self._parsed = 0  # how much of the output has been read into _events
        self._ports: set[int] = set()  # the workers' own ports of the accepts printed

    def program(self) -> str:
        return log_program(self.pids, self.threads)

    def _keep(self, out: bytearray) -> None:
        pass  # accepted_by() reads every line it printed

    def accepted_by(
        self, client_port: int, since_ns: int, timeout_s: float = LOOKUP_TIMEOUT_S, server_port: int | None = None
    ) -> int | None:
        """The pid that accepted the connection from `client_port` (to `server_port`, where given) at or after
        `since_ns` (when the client started it), waiting up to `timeout_s` for bpftrace to print it; None when it
        never does."""
        deadline = time.monotonic() + timeout_s
        while True:
            pid = self._take(client_port, since_ns, server_port)
            if pid is not None or not self.attached:
                return pid
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.read_more(remaining):
                return None

    def _take(self, port: int, since_ns: int, server_port: int | None) -> int | None:
        self._parse()
        events = self._events.get(port)
        # the server's port as the workers accepted on it, where seen: behind NAT (a --target reached through a
        # forwarded port) the client's is another, and it is not asked
        wanted = server_port if server_port in self._ports else None
        while events:
            # an earlier connection from the same port is not this one, nor one to another of the workers' ports
            at, pid, own = events.pop(0)
            if at >= since_ns and wanted in (None, own):
                return pid
        return None

    def _parse(self) -> None:
        end = self._out.rfind(b"\n", self._parsed) + 1
        if end <= self._parsed:
            return
        for pid, port, at, own in _LINE.findall(bytes(self._out[self._parsed : end])):
            self._events.setdefault(int(port), []).append((int(at), int(pid), int(own)))
            self._ports.add(int(own))
        self._parsed = end

    def stop_log(self) -> AcceptCounts:
        """stop() where the log was read as it came and the counts are not (run's per-connection log): no fresh
        reading is waited for, and `available` says whether the log was. A bpftrace still running at the stop
        printed every accept of the load, even where its counts then never come (END missed, and no reading yet
        in a run shorter than a READING_MS tick), which stop() alone calls unavailable: run then said the
        kernel's accepts could not be read of connections each attributed by the kernel's own line."""
        proc = self._proc
        running = self.attached and proc is not None and proc.poll() is None
        counts = self.stop(counts_used=False)
        if counts.available or not running:
            return counts
        return dataclasses.replace(counts, available=True, why=f"{SOURCE}; {counts.why}")
