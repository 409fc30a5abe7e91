"""The reaper: a small process that ends what a launched server left when this tool dies without cleaning up.

A launched server's master dies with us (PR_SET_PDEATHSIG), but its workers are its children, not ours:
nginx's and gunicorn's workers outlive a master that was SIGKILLed, and keep serving on the port. Nothing
in this process can run after a SIGKILL or a hang-up that kills it, so a second process does it (as
pyperf's popen killer does): it holds the read end of a pipe whose write end only this process holds, and
reads what to end as lines, `group PGID` (a server's process group: the master runs in a session of its
own, and its workers stay in its group) and `dir PATH` (the server's private directory), `done ...` when
we ended that ourselves. When the pipe closes with entries still open (we died, however), it
SIGKILLs each group and removes each directory. It is started when a server is launched, and told to
exit (its pipe closed with nothing open) when we have ended the last one it watches ourselves. Run as
`python -I -S .../accept_order/core/reaper.py`; it imports nothing but the standard library.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where the reaper is started or stopped: not at every command's start-up (issue 30)
    import subprocess

_GRACE_S = 1.0  # how long the workers of a killed group have to be gone before the directory goes


class Reaper:
    """The tool's side: one reaper process per tool process, told what to end (thread-safe)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._open: set[str] = set()  # entries we have not ended ourselves yet

    def _send(self, line: str) -> None:
        with self._lock:
            if line.startswith("done "):
                self._open.discard(line[len("done ") :])
                if not self._open:  # nothing left to watch: let it go (no process outlives a server)
                    self._stop()
                    return
            else:
                self._open.add(line)
            if self._proc is None or self._proc.poll() is not None:
                import subprocess

                # this file run as a script, isolated (-I: not its folder on sys.path, where core's modules would
                # shadow the standard library's) and without site (-S): it imports the standard library only, and
                # `-m accept_order.core.reaper` imported the package first: 0.08 against 0.05 CPU-s a launch
                try:
                    self._proc = subprocess.Popen(
                        [sys.executable, "-I", "-S", os.path.abspath(__file__)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,  # a terminal's Ctrl-C or hang-up must not end it before us
                        close_fds=True,
                    )
                except OSError as exc:  # EAGAIN at `ulimit -u` read as a traceback; nothing was started for it
                    from .errors import ResourceError

                    self._open.discard(line)
                    raise ResourceError(
                        f"could not start the process that ends a launched server should this tool be killed: "
                        f"{exc.strerror} (check `ulimit -u`)"
                    ) from None
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(line.encode("utf-8", "surrogateescape") + b"\n")
                self._proc.stdin.flush()
            except OSError:  # it died: the next call starts another; this entry is ours to end as ever
                self._proc = None

    def running(self) -> bool:
        """Whether its process is up (a launch then starts none)."""
        return self._proc is not None and self._proc.poll() is None

    def _stop(self) -> None:
        """Close its pipe with nothing open: it exits at once, having nothing to end."""
        import subprocess

        proc, self._proc = self._proc, None
        if proc is None or proc.stdin is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def watch_group(self, pgid: int) -> None:
        self._send(f"group {pgid}")

    def announce_own_group(self) -> None:
        """In a server's master between fork and exec (a preexec_fn; it leads a new session, so its pid is
        its group's id): tell the reaper directly, so that no moment passes, between the fork and the
        tool's own watch_group, in which a SIGKILL of the tool would leave the group unwatched."""
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                os.write(proc.stdin.fileno(), f"group {os.getpid()}\n".encode())
            except OSError:
                pass

    def watch_directory(self, path: str) -> None:
        self._send(f"dir {path}")

    def done_group(self, pgid: int) -> None:
        self._send(f"done group {pgid}")

    def done_directory(self, path: str) -> None:
        self._send(f"done dir {path}")


REAPER = Reaper()


def _alive_in(pgid: int) -> bool:
    """A process of the group is more than a zombie. A zombie holds no file, socket or memory; one whose
    parent had already exited (uvicorn's multiprocessing resource tracker outlives its supervisor by a moment)
    is init's to reap, which here took over a second, and keeps the group existing until then."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                state, _ppid, group = f.read().rpartition(")")[2].split()[:3]
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(group) == pgid and state != "Z":
            return True
    return False


def end_group(pgid: int) -> None:
    """SIGKILL every process of a group, and wait up to a second for them to be gone (zombies are)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        return
    deadline = time.monotonic() + _GRACE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except OSError:
            return  # every process of the group is gone
        if not _alive_in(pgid):
            return
        time.sleep(0.01)


def main() -> None:
    # Signals meant for the tool (a terminal's, a process group's) are not for us: only the pipe ends us.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    directories: set[str] = set()
    for raw in sys.stdin.buffer:
        words = raw.decode("utf-8", "surrogateescape").rstrip("\n").split(" ", 2)
        done = words[0] == "done"
        if done:
            words = words[1:]
        if len(words) != 2:
            continue
        what, value = words
        if what == "group" and value.isdigit():
            (groups.discard if done else groups.add)(int(value))
        elif what == "dir":
            (directories.discard if done else directories.add)(value)
    for pgid in groups:
        end_group(pgid)
    if directories:
        # only now: shutil imports fnmatch and re (~30% of this process's start-up), and a run that ends its
        # servers itself, as nearly every run does, never needs it
        import shutil

        for path in directories:
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
