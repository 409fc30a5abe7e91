"""Successful accept()/accept4() returns per process, counted by the kernel (bpftrace on two tracepoints).

For a server we did not start: its workers do not report how many connections each took, but the kernel
sees every accept. `AcceptCounter` runs bpftrace as a child over the load's window:

    with AcceptCounter(pids) as counter:
        counter.start()          # returns once the tracepoints are attached
        ... load ...
        counts = counter.stop()  # AcceptCounts(counts={pid: n}, available=True, why="bpftrace on ...")

Tracepoints (not kprobes or fentry) because they are what loads on the machines we measured. Nothing
here raises when tracing is impossible (not root, no bpftrace, no tracefs, the program is refused):
stop() then answers available=False and says why, so a latency run still completes without the counts.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence

from ..core.processes import die_with_parent
from ..core.signals import deferred
from ..core.started import Closing
from . import bpftrace_readings as readings
from .accept_counts import AcceptCounts
from .accept_filter import accepted_by, thread_workers
from .accept_ports import ListenerPorts, own_port_totals
from .accept_program import begin, following, program, refused_parent
from .bpftrace_messages import ATTACHED_ENV, first_error_line, not_loaded_hint, raise_memlock
from .bpftrace_output import OutputPump
from .bpftrace_readings import COUNTS_BEGIN, COUNTS_END, parse_counts, parse_descriptors, parse_empty, parse_gaps
from .tracefs import MOUNTED, TRACEFS, ensure_tracefs, unmount_tracefs

# bpftrace compiles its program (LLVM) before it attaches: 1-3 s here when quiet, over 10 s beside a loaded test
# suite (load 15 on 2 CPUs), when the kernel's accounts were lost to a timeout
ATTACH_TIMEOUT_S = 30.0

__all__ = ["AcceptCounts", "AcceptCounter", "COUNTS_BEGIN", "COUNTS_END", "MOUNTED", "SOURCE", "TRACEFS"]
__all__ += ["accepted_by", "ensure_tracefs", "first_error_line", "not_loaded_hint", "parse_counts", "program"]
__all__ += ["unmount_tracefs"]

SOURCE = "bpftrace on tracepoint syscalls:sys_exit_accept4"  # `why` when counting worked
STOP_TIMEOUT_S = 5.0  # SIGINT to END's last line; END takes milliseconds once bpftrace acts on the signal
KICK_S = 0.25  # after this long without END's last line, interrupt bpftrace's poll loop again (see stop())
EXIT_S = 2.0  # END's last line to bpftrace's exit (it detaches its probes), then it is killed: the counts are in
# stop() first waits this long at most for a reading taken after it began: what stands if END never comes
FRESH_S = 2.0
KILLED_S = 10.0  # SIGKILL to its reaping, and to the end of its output

# bpftrace prints this (stderr in 0.17, stdout in newer versions) once every probe is attached. Neither
# "Attaching N probes..." nor a BEGIN block will do in 0.17: both come BEFORE the tracepoints attach
# (BPFtrace::prerun prints the line, BEGIN_trigger runs, then the attach loop), so an accept made right
# after them can be missed. ATTACHED_ENV, bpftrace's hook for its own runtime tests, asks for it.
_ATTACHED = ATTACHED_ENV.encode()


def _child_setup(parent: int) -> None:
    """In the bpftrace child before exec: die with us (`parent`), take SIGINT even if our thread blocked it
    (a blocked mask is inherited across exec and would make stop() wait for nothing), and as much locked
    memory as we may give it."""
    die_with_parent(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    raise_memlock()


class AcceptCounter(Closing):
    """bpftrace as a child, counting successful accepts of `pids` (None: of every process), and, with
    `children_of` (a master's pid) on a kernel with BTF, those of its children that are not among them: the
    workers it starts during the window (AcceptCounts.appeared). With `ports` (and pids), only the accepts on those
    ports' listeners are counted: a worker listening on others too accepts there as well (accept_ports.py)."""

    def __init__(
        self, pids: Sequence[int] | None = None, children_of: int | None = None, ports: Sequence[int] = ()
    ) -> None:
        self.pids: tuple[int, ...] | None = None if pids is None else tuple(dict.fromkeys(int(p) for p in pids))
        self.ports = tuple(ports) if self.pids else ()
        self._split: bool | None = None  # whether the accepts are kept by descriptor (_told_apart), once asked
        self._listeners: ListenerPorts | None = None  # the workers' listeners by descriptor, read as it starts
        self._others: tuple[int, ...] = ()  # the ports they listen on besides `ports`
        self.threads = thread_workers(self.pids or ())
        self.children_of = following(children_of) if pids is not None else None
        self.attach_s: float | None = None  # how long start() waited for the probes to attach
        self._proc: subprocess.Popen[bytes] | None = None
        self._out = bytearray()
        self._err = bytearray()
        self._why = "not started"  # the reason for available=False until start() attaches
        self._notes: list[str] = []
        self._result: AcceptCounts | None = None
        self._mounted = False  # tracefs was mounted by start(): close() unmounts it
        self._pumps: tuple[OutputPump, ...] = ()  # reading stdout, stderr once attached (bpftrace_output.py)

    def program(self) -> str:
        """The bpftrace script this counter runs (a subclass may print more, see accept_log.py)."""
        if self._told_apart():
            return program(self.pids, self.children_of, self.threads, descriptors=True)
        if self.threads:
            return program(self.pids, self.children_of, self.threads)
        return program(self.pids) if self.children_of is None else program(self.pids, self.children_of)

    @property
    def pid(self) -> int | None:
        """bpftrace's pid while it runs (it leads its own process group), else None."""
        return self._proc.pid if self._proc is not None else None

    @property
    def attached(self) -> bool:
        return self._proc is not None and self.attach_s is not None and self._result is None

    def start(self, timeout_s: float = ATTACH_TIMEOUT_S) -> None:
        """Start bpftrace and return once its tracepoints are attached, or once it is clear they will
        not be (then stop() says why). Never raises for an unavailable probe."""
        if self._proc is not None or self._result is not None:
            raise RuntimeError("AcceptCounter.start() called twice")
        if os.geteuid() != 0:
            self._why = "not root: loading eBPF programs needs root"
            return
        exe = shutil.which("bpftrace")
        if exe is None:
            self._why = "bpftrace not found on PATH (Debian: apt-get install bpftrace)"
            return
        ok, note = ensure_tracefs()
        if not ok:
            self._why = note
            return
        if note:
            self._notes.append(note)
            self._mounted = True
        began = time.monotonic()
        if self._launch(exe, timeout_s):
            self.attach_s = time.monotonic() - began
            self._begin()
            return
        if (
            self.children_of is not None
            and self._proc is not None
            and self._proc.poll() is not None
            and refused_parent(bytes(self._err))
        ):
            # BTF is there but this bpftrace could not read a task's parent (a kernel's task_struct it does not
            # know, a field renamed): count the pids asked about rather than nothing (the report then says how
            # many accepts it could not place). Any other failure (the verifier, locked memory, a tracepoint
            # missing) would fail again the same way: said once, not run twice
            refused = first_error_line(bytes(self._err))
            self._end_bpftrace(keep_result=True)
            master = self.children_of
            self._notes.append(f"followed none of pid {master}'s other children: bpftrace refused ({refused})")
            self.children_of = None
            self._out, self._err = bytearray(), bytearray()
            if self._launch(exe, timeout_s):
                self.attach_s = time.monotonic() - began
                self._begin()
                return
        if self._proc is None:  # it could not be run: _launch said why
            self.close()
            return
        code = self._proc.poll()
        err = bytes(self._err)
        if code is None:
            # still running: no load failure to explain (its RLIMIT_MEMLOCK warning is printed on every start
            # under a low `ulimit -l`, and is harmless on 5.11+); it was still compiling or attaching
            said = first_error_line(err)
            said = "" if said == "no message" else f"; it said: {said}"
            self._why = f"bpftrace did not attach within {timeout_s:g} s (still starting: a busy machine?){said}"
        else:
            self._why = f"program failed to load (bpftrace exit {code}): {first_error_line(err)}{not_loaded_hint(err)}"
        self.close()

    def _told_apart(self) -> bool:
        """Whether the program keeps each accept by the descriptor it was asked of: the workers hold a listener on
        one of the ports and on others too. A server of one port (the common case) runs the program as before it
        could: no enter probe's map update per accept, no begin mark (0.61-0.62 CPU-s of bpftrace against 0.50-0.54
        for 4,000 accepts at Debian's nginx of one port), its counts every accept's."""
        if self._split is None:
            held: set[int] = set()
            if self.ports and self.pids:  # read once, as it starts: a worker may exit before the stop
                self._listeners = ListenerPorts(self.pids[0])
                held = self._listeners.read_tables(self.pids)
            self._others = tuple(sorted(held - set(self.ports)))
            # behind NAT (a forwarded port) the port connected to is none of theirs: every accept is counted
            self._split = bool(held & set(self.ports) and self._others)
        return self._split

    def _begin(self) -> None:
        """Open the window of a program counting by port (accept_program's `descriptors`): from here on."""
        if self._told_apart():
            begin()

    def _launch(self, exe: str, timeout_s: float) -> bool:
        """Start bpftrace on this counter's program; True once its tracepoints are attached (self._proc set either
        way, unless it could not be run: self._why says why)."""
        try:
            # process_group=0: a terminal's Ctrl-C goes to our group only, so bpftrace ends (and prints)
            # when stop() asks, not before. stdin closed: bpftrace never reads it.
            self._proc = subprocess.Popen(
                [exe, "-B", "line", "-e", self.program()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,  # raw pipes: what _wait_attached reads with os.read is not also in a buffer
                env={**os.environ, ATTACHED_ENV: "1"},
                preexec_fn=functools.partial(_child_setup, os.getpid()),
                process_group=0,
            )
        except OSError as exc:
            self._why = f"could not run {exe}: {exc.strerror or exc}"
            return False
        if not self._wait_attached(timeout_s):
            return False
        assert self._proc.stdout is not None and self._proc.stderr is not None
        # from now on a thread reads each pipe as bpftrace prints (bpftrace_output.py)
        self._pumps = (OutputPump(self._proc.stdout.fileno(), self._out, self._keep),)
        self._pumps += (OutputPump(self._proc.stderr.fileno(), self._err),)
        return True

    def _wait_attached(self, timeout_s: float) -> bool:
        """Read both pipes until the attached marker shows on either, bpftrace exits, or time runs out."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        deadline = time.monotonic() + timeout_s
        sinks = {proc.stdout.fileno(): self._out, proc.stderr.fileno(): self._err}
        with selectors.DefaultSelector() as sel:
            for fd in sinks:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                for key, _ in sel.select(remaining):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:  # EOF: bpftrace exited (or closed the stream)
                        sel.unregister(key.fd)
                        continue
                    sinks[key.fd] += chunk
                    if _ATTACHED in sinks[key.fd]:
                        return True
        # Both streams closed without the marker: it has exited. Reap it so close() has nothing to kill.
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        return False

    def read_more(self, timeout_s: float) -> bool:
        """Whether bpftrace has printed more (into self._out) since the last call, waiting up to timeout_s for it;
        False when nothing came or it has gone. For subclasses that read its output while it runs."""
        return bool(self._pumps) and self._pumps[0].more(timeout_s)

    def _keep(self, out: bytearray) -> None:
        """Called as output comes (the reading thread holds the lock): drop what no one will read. This counter
        reads its output at stop() only: everything before the last whole reading goes, unless END has begun."""
        if COUNTS_BEGIN.encode() not in out:
            del out[: readings.whole_readings_end(bytes(out))]

    def _reading(self) -> tuple[float, dict[int, int]] | None:
        """(when, counts) of the last whole periodic reading bpftrace printed, else None."""
        last = readings.last_reading(bytes(self._out))  # a copy: a regex's hold on the buffer would stop the pump
        return None if last is None else (last[0], readings.count_lines(last[1]))

    def _end_printed(self) -> bool:
        return parse_counts(bytes(self._out)) is not None

    def stop(self, counts_used: bool = True) -> AcceptCounts:
        """SIGINT bpftrace (its END block prints the counts), read them, reap it. Never waits more than about
        FRESH_S + STOP_TIMEOUT_S + EXIT_S: when END never comes, bpftrace is killed and its last periodic reading
        stands (AcceptCounts.short says so), else the counts are unavailable. Idempotent. `counts_used` False (run's
        per-connection log reads only whether counting worked): no fresh reading is waited for (0.57 -> 0.30 s here)."""
        if self._result is not None:
            return self._result
        proc = self._proc
        if proc is None or self.attach_s is None or not self._pumps:
            self._result = self._unavailable(self._why)
            self.close()
            return self._result
        out = self._pumps[0]
        began = time.monotonic()
        # a reading taken after the window closed: complete, should END not come (none comes after SIGINT)
        out.wait_for(lambda: (r := self._reading()) is not None and r[0] >= began, FRESH_S if counts_used else 0)
        waited, reading = time.monotonic() - began, self._reading()  # later ones count past the window
        proc.send_signal(signal.SIGINT)  # only bpftrace: never its (our) process group
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while not out.wait_for(self._end_printed, KICK_S) and not out.ended and time.monotonic() < deadline:
            # bpftrace 0.17 leaves its poll loop only when a signal interrupts epoll_wait with the exit flag set:
            # a SIGINT that lands outside that call (just after start(), or on a busy machine while bpftrace,
            # woken by epoll_wait's timeout, waits for a CPU) sets the flag and is never acted on
            # (bpftrace_readings.py). SIGUSR1 interrupts it again; its handler stays installed to the end (a
            # second SIGINT would kill bpftrace once run() returns), and at worst it prints the maps once more.
            # SIGTERM would only set the same flag: what outlasts this is killed (close()).
            proc.send_signal(signal.SIGUSR1)
        counts = parse_counts(bytes(self._out))
        try:
            # after END, or the end of its output, it exits (detaching its probes: the pipe's end may come first)
            proc.wait(EXIT_S if counts is not None or out.ended else 0)
        except subprocess.TimeoutExpired:
            pass
        short, before_s = "", 0.0
        if counts is None:
            code = proc.returncode
            if code is None:
                said = f"bpftrace did not run its END block within {STOP_TIMEOUT_S:g} s of SIGINT (it was killed)"
                said = "bpftrace ended its output without its END block's counts (it was killed)" if out.ended else said
            else:
                said = f"bpftrace exited ({code}) without its END block's counts"
            if reading is None:
                self._end_bpftrace(keep_result=True)  # killed and reaped: all it said on stderr is in
                err = bytes(self._err)
                said += f": {first_error_line(err)}" if code is not None else " and printed no periodic reading"
                self._result = self._unavailable(said + not_loaded_hint(err))
                self.close()
                return self._result
            counts, short = reading[1], readings.reading_note(said, reading[0], began, round(waited, 2))
            if self._told_apart():
                # the per-port counts come at END only: a reading counts the workers' other ports' accepts too
                also = f"port{'s' * (len(self._others) > 1)} {', '.join(map(str, self._others))}"
                short += f"; it counts the accepts on every port the workers listen on, {also} too"
            before_s = round(max(0.0, began - reading[0]), 6)  # above 0 however near: accepts may be missed
        printed = bytes(self._out)
        empty, gaps = parse_empty(printed), parse_gaps(printed)
        described = parse_descriptors(printed) if self._told_apart() and not short else None
        if described is not None and self._listeners is not None:
            # the accepts on the workers' other ports left out (a periodic reading, END missed, counts them all)
            counts, empty, gaps, notes = own_port_totals(
                counts, empty, gaps, described, self.ports, self._listeners, self._others
            )
            self._notes += notes
        appeared: dict[int, int] = {}
        if self.pids is not None:  # every pid asked about is answered, 0 when it accepted nothing
            appeared = {pid: n for pid, n in sorted(counts.items()) if pid not in self.pids}
            counts = {pid: counts.get(pid, 0) for pid in self.pids}
        why = "; ".join([SOURCE, *self._notes, *([short] if short else [])])
        self._result = AcceptCounts(counts, True, why, appeared, short, before_s, empty, gaps)
        self.close()
        return self._result

    def _unavailable(self, why: str) -> AcceptCounts:
        # The note that tracefs was mounted for the run goes with the result on every path.
        return AcceptCounts({}, False, "; ".join([why, *self._notes]))

    def close(self) -> None:
        """Kill and reap bpftrace if it still runs (any path: error, interrupt, stop() never called), then
        unmount the tracefs start() mounted."""
        try:
            self._end_bpftrace()
        finally:
            if self._mounted:
                self._mounted = False
                with deferred():  # a Ctrl-C now must not leave it mounted
                    why = unmount_tracefs()
                if self._result is not None:
                    after = f"; {why}" if why else " (unmounted after it)"
                    self._result = dataclasses.replace(self._result, why=self._result.why + after)

    def _end_bpftrace(self, keep_result: bool = False) -> None:
        """Kill and reap bpftrace; without `keep_result`, the counts are then unavailable (closed before stop())."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self._result is None and not keep_result:
            self._result = self._unavailable(self._why if self.attach_s is None else "closed before stop()")
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(KILLED_S)
        except subprocess.TimeoutExpired:
            pass  # still in the kernel (SIGKILL waits for a probe's detach): it dies with no one waiting on it
        pumps, self._pumps = self._pumps, ()
        for pump in pumps:
            pump.join(KILLED_S)  # end of file once it is dead: all it printed is read
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
