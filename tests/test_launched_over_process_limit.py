"""A server whose master and workers would not fit under the user's `ulimit -u` is refused before it is launched
(core/user_tasks.py, servers/launched/base.py).

As a user on a shared host with a low process limit, 'latency --server nginx -w 8' waited 30 s and read 'nginx's 8
workers were not ready within 30 s' (nginx's own log: 'fork() failed while spawning "worker process" (11: Resource
temporarily unavailable)'), and 'run --server gunicorn -w 8' read 'gunicorn exited with status 255: ... Unhandled
exception in main loop'. Here as a uid no process runs as, its limit a few tasks above what it runs; the witnesses
are the kernel's: under that limit nine more processes cannot be forked, and no nginx of that uid's was started.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable

import pytest

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("setpriv") and shutil.which("ps") and NGINX),
    reason="needs root (to drop to an unused uid), setpriv, ps and Debian's nginx",
)
WORKERS = 8

# forks up to n sleeping children, prints how many the kernel let it, then ends them
FORKS = """
import subprocess, sys
started = []
try:
    while len(started) < int(sys.argv[1]):
        started.append(subprocess.Popen(["sleep", "30"]))
except OSError:
    pass
print(len(started))
for child in started:
    child.kill()
    child.wait()
"""


# A uid no process runs as: its task count is this test's alone (as nobody, other tests' and helpers' nginx came and
# went under it, and the limit set from its count a moment before was not the one the tool met)
def _unused_uid() -> int:
    import psutil

    taken = {p.info["uids"].real for p in psutil.process_iter(["uids"]) if p.info["uids"] is not None}
    return next(uid for uid in range(4_100_000 + os.getpid() % 1000, 4_200_000) if uid not in taken)


def _users(uid: int, *words: str) -> int:
    """How many tasks (ps -L: threads too) or processes named words[0] `uid` runs, as ps counts them."""
    argv = ["ps", "-L", "-u", str(uid), "--no-headers"] if not words else ["ps", "-u", str(uid), "-o", "comm="]
    lines = subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()
    return len([line for line in lines if not words or line.strip() == words[0]])


def _under_limit(uid: int, limit: int, *argv: str) -> subprocess.CompletedProcess[str]:
    """argv as `uid` with its soft `ulimit -u` at `limit` (set before setpriv drops to it)."""

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, resource.getrlimit(resource.RLIMIT_NPROC)[1]))

    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    return subprocess.run([*drop, *argv], capture_output=True, text=True, timeout=120, cwd="/", preexec_fn=lower)


def test_a_server_that_would_not_fit_is_refused_before_it_starts() -> None:
    uid = _unused_uid()
    limit = _users(uid) + 4  # room for the tool itself, not for a master and its workers
    forked = _under_limit(uid, limit, sys.executable, "-c", FORKS, str(WORKERS + 1))
    assert forked.returncode == 0 and int(forked.stdout) < WORKERS + 1, forked  # the kernel's word
    argv = [sys.executable, "-m", "accept_order", "run", "--server", "nginx", "-w", str(WORKERS)]
    done = _under_limit(uid, limit, *argv)
    assert done.returncode == 1 and not done.stdout, done
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"accept-order: error: nginx's master and {WORKERS} workers, and the process this tool starts to end them, "
        "would not fit under this user"
    ), line
    assert f"of the {limit} `ulimit -u` allows (raise it, or give fewer --workers)" in line, line
    assert _users(uid, "nginx") == 0  # none was started


# Below, the child's outcome is read back over a pipe: in this process's fork, as a uid no process runs as (the
# kernel's count of its tasks starts at the child's one), so no interpreter is exec'd that the uid may not reach


def _loaded() -> None:
    """Everything the children below import, imported before they drop to a uid that may not read it."""
    import codecs
    import secrets  # noqa: F401
    import subprocess  # noqa: F401
    import tempfile  # noqa: F401

    import psutil  # noqa: F401

    import accept_order.core.reaper  # noqa: F401
    import accept_order.core.user_tasks  # noqa: F401
    import accept_order.servers.launched.nginx  # noqa: F401
    from accept_order.servers.registry import KINDS

    KINDS["nginx"]  # noqa: B018 (the registry's lazy load)
    for name in ("ascii", "utf-8", "latin-1"):
        codecs.lookup(name)


def _as_user_under(limit: int, act: Callable[[], str]) -> str:
    """act()'s word, run in a forked child as an unused uid whose `ulimit -u` is `limit` (its own task counts)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        said = "?"
        try:
            os.close(read)
            _loaded()  # what the uid may not read: this interpreter's own library may be under root's home
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
            uid = _unused_uid()
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            said = act()
        except BaseException as exc:
            said = f"raised {type(exc).__name__}: {exc}"
        finally:
            os.write(write, said.encode()[:4000])
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    return said


def _thread() -> str:
    import _thread

    try:
        _thread.start_new_thread(lambda: None, ())
        return "the kernel started a thread"
    except RuntimeError:
        pass  # the kernel's word: clone refused at the limit
    from accept_order.core.errors import ResourceError
    from accept_order.core.signal_order import start_thread

    try:
        start_thread(lambda: None, "probe")
    except ResourceError as exc:
        return f"ResourceError: {exc}"
    return "started"


def test_a_thread_the_limit_refuses_is_one_line_not_a_traceback() -> None:
    """'latency --server nginx -w 2' as a user 6 tasks under its limit ended in a traceback, 'RuntimeError: can't
    start new thread' (busy_waits' thread, started through core/signal_order.start_thread)."""
    said = _as_user_under(1, _thread)
    assert said.startswith("ResourceError: could not start a thread (probe): the kernel refused it"), said
    assert "`ulimit -u`" in said


def _reaper() -> str:
    from accept_order.core.errors import ResourceError
    from accept_order.core.reaper import Reaper

    try:
        Reaper().watch_directory("/nonexistent/accept-order-test")
    except ResourceError as exc:
        return f"ResourceError: {exc}"
    return "started"


def test_a_reaper_the_limit_refuses_is_one_line_not_a_traceback() -> None:
    said = _as_user_under(1, _reaper)
    assert said.startswith("ResourceError: could not start the process that ends a launched server"), said
    assert "Resource temporarily unavailable (check `ulimit -u`)" in said, said


def _launch_two() -> str:
    from accept_order.core.errors import ServerUnavailable
    from accept_order.core.spec import ServerSpec
    from accept_order.servers.registry import KINDS

    server = KINDS["nginx"].make(ServerSpec(kind="nginx", mode="epoll", workers=2))
    try:
        server.start()
        return "started"
    except ServerUnavailable as exc:
        return f"ServerUnavailable: {exc}"
    finally:
        server.close()


def test_the_reaper_a_launch_starts_is_counted() -> None:
    """Under a limit of the child itself, a master and its 2 workers (1 + 3 = 4), the check let nginx start; the
    reaper private_directory starts took one, and nginx's second worker was never forked ('nginx's 2 workers were
    not ready within 30 s', as 'latency --server nginx -w 2' read under `ulimit -u` 5 with the tool's 2 tasks)."""
    said = _as_user_under(4, _launch_two)
    assert said.startswith("ServerUnavailable: nginx's master and 2 workers, and the process this tool starts"), said
    assert "the user runs 1 processes and threads already, of the 4 `ulimit -u` allows" in said, said
