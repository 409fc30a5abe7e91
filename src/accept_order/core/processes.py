"""Child processes: how they are made, how they die with their parent, how their owners end them.

Shared by the worker pool and the load generator, the owners of every child the harness starts.
"""

from __future__ import annotations

import ctypes  # at the top: die_with_parent runs between fork and exec, where importing is unsafe
import errno
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ResourceError
from .signals import SIGNALS, deferred

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext
    from typing import Protocol

    class Child(Protocol):
        """A child process as its owner holds it: multiprocessing's Process, or core/forked.py's ForkedProcess."""

        @property
        def pid(self) -> int | None: ...

        @property
        def exitcode(self) -> int | None: ...

        def start(self) -> None: ...

        def join(self, timeout: float | None = None) -> None: ...

        def terminate(self) -> None: ...

        def kill(self) -> None: ...

    # fork: workers inherit the listening sockets and a shared epoll, as in a real server, and start fast.
    FORK: ForkContext


def __getattr__(name: str) -> Any:
    """FORK, multiprocessing's fork context, on first use: a command that starts no child (--help, show)
    does not import multiprocessing (issue 30: start-up)."""
    if name == "FORK":
        import multiprocessing

        return multiprocessing.get_context("fork")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# A child that has not said it is ready by then is reported by name. A child that dies is seen at once (its
# sentinel), so this bounds only a live one that is slow: 5 s ran out for a forked worker at load 17 on 2 CPUs.
READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 3.0  # SIGTERM, then this long to report and exit, then SIGKILL
MAX_REPLY = 4096  # bytes of a worker's answer a client reads before calling it malformed

_RESOURCE_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM, errno.ENOBUFS}
_HAVE_PROC = os.path.exists("/proc/self/stat")
T = TypeVar("T")


def process_errors(*more: type[Exception]) -> tuple[type[Exception], ...]:
    """What asking about a process can raise: OSError, `more`, and psutil.Error once psutil is loaded.
    psutil is imported only where /proc or the os module cannot answer (it costs 10 ms to import), so
    nothing can have raised one of its errors before."""
    psutil = sys.modules.get("psutil")
    return (OSError, *more, psutil.Error) if psutil is not None else (OSError, *more)


def usage(pid: int) -> tuple[int, int, float]:
    """(voluntary context switches, involuntary ones, CPU seconds user + system) of process `pid`.

    Read from /proc/PID/schedstat (CPU, in ns), /proc/PID/stat and /proc/PID/status on Linux, through
    psutil elsewhere. A process that is gone raises OSError (or psutil.NoSuchProcess)."""
    if not _HAVE_PROC:
        import psutil

        p = psutil.Process(pid)
        switches, cpu = p.num_ctx_switches(), p.cpu_times()
        return switches.voluntary, switches.involuntary, cpu.user + cpu.system
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rpartition(b")")[2].split()  # fields[0] is field 3 (state): utime is 14, stime 15
    voluntary, involuntary = status_switches(f"/proc/{pid}/status") or (0, 0)
    try:
        # Nanoseconds on a CPU (the scheduler's own account): clock ticks (10 ms) cannot see the few
        # microseconds a sequential connection costs. Only the main thread's: our processes have one.
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return voluntary, involuntary, int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return voluntary, involuntary, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_switches(path: str) -> tuple[int, int] | None:
    """(voluntary, involuntary) context switches from a /proc status file, a process's or one thread's; None where
    the file names neither. OSError where it cannot be read (gone)."""
    voluntary = involuntary = None
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"voluntary_ctxt_switches:"):
                voluntary = int(line.split()[1])
            elif line.startswith(b"nonvoluntary_ctxt_switches:"):
                involuntary = int(line.split()[1])
    return None if voluntary is None or involuntary is None else (voluntary, involuntary)


def _tgid(tid: int) -> int | None:
    """The Tgid line of /proc/TID/status (None without one). OSError where it cannot be read (gone)."""
    with open(f"/proc/{tid}/status", "rb") as f:
        for line in f:
            if line.startswith(b"Tgid:"):
                return int(line.split()[1])
    return None


def leads_its_group(pid: int) -> bool:
    """Whether `pid` is a process (its main thread) rather than another thread: /proc/TID/stat of any thread
    gives its whole process's times, which would charge every thread counted as a worker with all of them.
    OSError where it cannot be read (gone)."""
    group = _tgid(pid)
    return group is None or group == pid


def thread_group(tid: int) -> int | None:
    """The process (Tgid) that thread `tid` is one of: itself for a process (its main thread); None once gone."""
    try:
        return _tgid(tid)
    except (OSError, ValueError, IndexError):
        return None


def thread_workers(ids: Sequence[int]) -> frozenset[int]:
    """The workers among `ids` that are threads, not processes: those that share their process with another of
    `ids` (HAProxy's nbthread or h2o's loops attached by their threads' ids, the process's own id among them), and
    any that is not its process's main thread. Each is known by its own id: its CPU and switches its own
    (servers/watched.py), its accepts counted by bpftrace's `tid` (probes/accept_filter.py); a process's are every
    thread's. One rule for both: the usage and the accept count read 4 HAProxy threads alike. An id that is gone
    counts as a process."""
    groups: dict[int, list[int]] = {}
    for worker in dict.fromkeys(ids):
        group = thread_group(worker)
        groups.setdefault(worker if group is None else group, []).append(worker)
    return frozenset(w for group, members in groups.items() for w in members if len(members) > 1 or w != group)


def _process_clock(pid: int) -> int:
    """The clock id of process `pid`'s CPU time, every thread's (glibc's MAKE_PROCESS_CPUCLOCK(pid,
    CPUCLOCK_SCHED), which clock_getcpuclockid returns and Python does not offer). The kernel lets anyone read
    another process's; a pid that is not a process (gone, or a thread other than a main one) is EINVAL."""
    return ((~pid) << 3) | 2


def process_usage(pid: int) -> tuple[int, int, float]:
    """As usage(pid), but the CPU is every thread's of the process: a server that is not ours (an attached
    one, or one observe watches) may work in threads while its main thread sleeps throughout (Puma's and
    Caddy's do: usage() read 0 ms for a Puma worker that served thousands). The process's CPU clock is the
    scheduler's nanoseconds of all its threads, those that have ended too (Puma's pool threads come and go):
    exact and monotonic, so a delta is neither rounded nor negative. (/proc/PID/stat's ticks, used before,
    are 10 ms and rounded down per field: a rule that took them only where they exceeded the main thread's
    nanoseconds by 20 ms switched between the two from one reading to the next where other threads had used
    20-40 ms, and a delta read -19 ms or +27 ms.) A thread counted as a worker keeps its own nanoseconds.
    The context switches stay the main thread's: which thread's sleeps count as wakeups is the kind's to say
    (servers/watched.py ThreadedUsage). A process that is gone raises OSError."""
    voluntary, involuntary, cpu_s = usage(pid)
    if not _HAVE_PROC:
        return voluntary, involuntary, cpu_s  # psutil's cpu_times are the whole process's already
    if not leads_its_group(pid):
        return voluntary, involuntary, cpu_s  # a thread counted as a worker (HAProxy's, h2o's): its own CPU
    return voluntary, involuntary, time.clock_gettime_ns(_process_clock(pid)) / 1e9


def has_children(pid: int) -> bool:
    """False only when /proc says process `pid` has no children (/proc/PID/task/*/children); True when
    it has some, or when /proc cannot tell (then ask psutil)."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                if f.read().strip():
                    return True
    except OSError:
        return True
    return False


def open_pidfd(pid: int) -> int | None:
    """A pidfd for `pid` (readable once it exits: a client polls it beside its sockets, so a death is seen at
    once and staying alive costs nothing per connection); None without pidfds (old kernel, out of fds)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


# The pid of the process that forked this one, set by the parent just before the fork (start_child): a
# forked child inherits it. A child started otherwise passes its parent's pid to die_with_parent itself.
_forked_by: int | None = None


def die_with_parent(parent: int | None = None) -> None:
    """In a child: ask the kernel to SIGKILL it if its parent dies without cleaning up (PR_SET_PDEATHSIG).

    The request only covers a death after it is made: a parent SIGKILLed between the fork and this call
    leaves the child orphaned already (seen: 1 run in 3 when the tool was killed just as it forked). So
    the child then checks it still has the parent that forked it, and exits at once if not."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    expected = parent if parent is not None else _forked_by
    if expected is not None and os.getppid() != expected:
        os._exit(1)


def start_child(proc: Child) -> None:
    """`proc.start()` with SIGINT, SIGTERM and SIGHUP blocked across the fork: until the child has put in its own
    handlers (then it calls `unblock_signals`) it would run this process's, and raise a KeyboardInterrupt
    (a traceback on stderr) from multiprocessing's bootstrap. A signal meanwhile waits, it is not lost."""
    global _forked_by
    from .started import Started

    Started.begun = True  # a worker, a driver or a helper: an interrupt from here on stops something
    _forked_by = os.getpid()  # the child checks it is still ours once it asked to die with us
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        proc.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def ignore_supervisor_signals() -> None:
    """In a child, first thing: Ctrl-C and a hang-up are the supervisor's to handle. A terminal sends both to
    its whole foreground process group; the supervisor then stops its children in order, after keeping what
    was measured (a child killed by the hang-up would pass for one that died). A child still ends with the
    supervisor: it is stopped by it, or killed by the kernel when it dies (die_with_parent)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def unblock_signals() -> None:
    """In a child, once its handlers are in: receive the signals start_child held back.

    First it drops the wakeup fd inherited from the supervisor (signals.ArrivalOrder's pipe): a child's own
    SIGTERM would otherwise be written into the supervisor's pipe and read there as the supervisor's."""
    signal.set_wakeup_fd(-1)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def out_of_resources(what: str, call: Callable[[], T]) -> T:
    """Run `call` (a pipe, a fork); running out of descriptors or processes becomes one clear line."""
    try:
        return call()
    except OSError as exc:
        if exc.errno in _RESOURCE_ERRNOS:
            raise ResourceError(f"could not start {what}: {exc.strerror} (check `ulimit -n` and `ulimit -u`)") from None
        raise


def end_processes(procs: Sequence[Child], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM every started child still alive, wait up to `timeout_s` in all, SIGKILL the rest, reap all.

    A process object appended before `start()` (so that an interrupt cannot orphan it) and never started
    has no pid and is skipped. Runs with signals deferred (signals.deferred), so no Ctrl-C or SIGTERM can
    cut it short and leave children alive.
    """
    with deferred():  # a signal meanwhile is held: it must not leave half of them alive
        started = [p for p in procs if p.pid is not None]
        for proc in started:
            if proc.exitcode is None:
                proc.terminate()
        deadline = time.monotonic() + timeout_s
        for proc in started:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.exitcode is None:
                proc.kill()
                proc.join(timeout_s)
