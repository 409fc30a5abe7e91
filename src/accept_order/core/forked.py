"""A forked child, a one-way pipe of messages and memory shared across the fork: the parts of multiprocessing's
fork context the worker pool uses, without multiprocessing (issue 30: its modules, with tempfile, subprocess and
shutil that they import, cost ~6 ms of every run's start-up; pickle is rich's already).

Same guarantees as multiprocessing's fork start: the child runs its target and leaves with os._exit (no atexit
handler of the parent's runs twice); its sentinel is a pipe whose only write end the child holds, readable (EOF)
the moment the child is gone however it died; its exit code is multiprocessing's (the status, or -N for signal
N); a message is a pickle behind a 4-byte length, as Connection sends it.
"""

from __future__ import annotations

import mmap
import os
import pickle
import select
import signal
import struct
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

_HEADER = struct.Struct("!i")  # multiprocessing's: a signed length, so one message is under 2 GiB
_CHUNK = 1 << 20  # bytes read at a time of a long message (a worker's accept stamps)

# Children started here that have not been reaped: the command line's last resort ends any an owner left.
_children: set[ForkedProcess] = set()


class ForkedProcess:
    """`target(*args)` in a forked child: start(), pid, sentinel, exitcode, is_alive(), join(), terminate(), kill(),
    as multiprocessing.Process has them."""

    def __init__(self, target: Callable[..., object], args: tuple[Any, ...] = (), name: str = "child") -> None:
        self.target = target
        self.args = args
        self.name = name
        self.pid: int | None = None
        self.sentinel = -1
        self._exitcode: int | None = None

    def start(self) -> None:
        _flush_std_streams()  # what this process has buffered must not be written again by the child as it ends
        readable, writable = os.pipe()  # the sentinel: its write end lives only in the child
        try:
            pid = os.fork()
        except BaseException:
            os.close(readable)
            os.close(writable)
            raise
        if pid == 0:  # the child never returns, whatever is raised on its way out (multiprocessing's finally)
            code = 1
            try:
                os.close(readable)
                _children.clear()
                code = self._run()
            finally:
                os._exit(code)
        os.close(writable)
        self.pid, self.sentinel = pid, readable
        _children.add(self)

    def _run(self) -> int:
        """The child's life, as multiprocessing's bootstrap leads it: stdin is /dev/null, an exception is printed
        under the child's name with exit code 1, SystemExit's code is kept, the standard streams are flushed."""
        code = 0
        try:
            _stdin_to_null()
            self.target(*self.args)
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                sys.stderr.write(f"{exc.code}\n")
                code = 1
        except BaseException:
            import traceback

            code = 1
            sys.stderr.write(f"Process {self.name}:\n")
            traceback.print_exc()
        finally:
            _flush_std_streams()
        return code

    @property
    def exitcode(self) -> int | None:
        """None while it runs; its exit status, or -N where signal N ended it. Reaps it once it has ended."""
        if self._exitcode is None and self.pid is not None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: its status is lost, as multiprocessing's is
                pid, status = self.pid, 255 << 8
            if pid == self.pid:
                self._ended(os.waitstatus_to_exitcode(status))
        return self._exitcode

    def _ended(self, code: int) -> None:
        self._exitcode = code
        _children.discard(self)

    def close(self) -> None:
        """Close its sentinel (once it has ended: a sentinel stays readable after the reaping, for wait())."""
        if self.sentinel >= 0:
            fd, self.sentinel = self.sentinel, -1
            os.close(fd)

    def __del__(self) -> None:  # as multiprocessing's finalizer: a process object dropped closes its sentinel
        self.close()

    def is_alive(self) -> bool:
        return self.pid is not None and self.exitcode is None

    def join(self, timeout: float | None = None) -> None:
        """Wait until it has ended (its sentinel reads EOF) or `timeout` has passed, and reap it if it has."""
        if self.pid is None or self.exitcode is not None:
            return
        if self.sentinel < 0:
            raise ValueError(f"process {self.name} is closed")
        if wait([self.sentinel], timeout):
            try:
                _, status = os.waitpid(self.pid, 0)  # the sentinel is closed: the child is gone, or nearly
            except ChildProcessError:
                status = 255 << 8
            self._ended(os.waitstatus_to_exitcode(status))

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.pid is not None and self.exitcode is None:  # never a reaped pid: the kernel may have reused it
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass


def _flush_std_streams() -> None:
    """stdout and stderr flushed, as multiprocessing does before a fork and as a child ends; a stream that cannot
    take it is left to whoever writes next."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (AttributeError, ValueError, OSError):
            pass


def _stdin_to_null() -> None:
    """A child reads no terminal: its stdin is /dev/null (multiprocessing's _close_stdin)."""
    if sys.stdin is None:
        return
    try:
        sys.stdin.close()
    except (OSError, ValueError):
        pass
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
        try:
            sys.stdin = open(fd, encoding="utf-8", closefd=False)
        except BaseException:
            os.close(fd)
            raise
    except (OSError, ValueError):
        pass


def active_children() -> list[ForkedProcess]:
    """The children started here that are still running (those that have ended are reaped now)."""
    return [child for child in list(_children) if child.is_alive()]


class Connection:
    """One end of a one-way pipe: send() pickles a message behind its length, recv() reads one (EOFError once
    the other end has closed with nothing more to read)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        if self._fd < 0:
            raise OSError("handle is closed")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def send(self, message: object) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            view = view[os.write(self.fileno(), view) :]

    def recv(self) -> Any:
        header = self._read(_HEADER.size, at_start=True)
        (size,) = _HEADER.unpack(header)
        return pickle.loads(self._read(size, at_start=False))

    def _read(self, size: int, at_start: bool) -> bytes:
        parts: list[bytes] = []
        left = size
        while left:
            part = os.read(self.fileno(), min(left, _CHUNK))
            if not part:
                if at_start and left == size:
                    raise EOFError
                raise OSError("got end of file during message")
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Whether a message (or EOF) can be read within `timeout` seconds."""
        return bool(wait([self], timeout))


def pipe() -> tuple[Connection, Connection]:
    """(receiving end, sending end), as multiprocessing's Pipe(duplex=False); both close on exec."""
    readable, writable = os.pipe()
    return Connection(readable), Connection(writable)


def wait(objects: Sequence[Any], timeout: float | None = None) -> list[Any]:
    """Those of `objects` (descriptors, or anything with fileno()) that are readable, at end of file or closed by
    the other side, waiting up to `timeout` seconds (None: for ever); as multiprocessing.connection.wait."""
    poller = select.poll()
    by_fd: dict[int, list[Any]] = {}
    for item in objects:
        fd = item if isinstance(item, int) else item.fileno()
        by_fd.setdefault(fd, []).append(item)
        poller.register(fd, select.POLLIN)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        events = poller.poll(None if left is None else left * 1000)
        if events or (deadline is not None and time.monotonic() >= deadline):
            return [item for fd, _ in events for item in by_fd[fd]]


def shared_int64s(count: int) -> memoryview:
    """`count` signed 64-bit integers, zero to begin with, in memory a forked child shares with its parent (an
    anonymous shared mapping), each read and written whole: multiprocessing's RawArray("q", count)."""
    memory = mmap.mmap(-1, max(1, count) * 8)
    return memoryview(memory).cast("q")[:count]


__all__ = ["Connection", "ForkedProcess", "active_children", "pipe", "shared_int64s", "wait"]
