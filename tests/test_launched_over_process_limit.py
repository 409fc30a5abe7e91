"""A server whose master and workers would not fit under the user's `ulimit -u` is refused before it is launched
(core/user_tasks.py, servers/launched/base.py).

As a user on a shared host with a low process limit, 'latency --server nginx -w 8' waited 30 s and read 'nginx's 8
workers were not ready within 30 s' (nginx's own log: 'fork() failed while spawning "worker process" (11: Resource
temporarily unavailable)'), and 'run --server gunicorn -w 8' read 'gunicorn exited with status 255: ... Unhandled
exception in main loop'. Here as nobody with its limit a few tasks above what it runs; the witnesses are the
kernel's: under that limit nine more processes cannot be forked, and no nginx of nobody's was started.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys

import pytest

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("setpriv") and shutil.which("ps") and NGINX),
    reason="needs root (to drop to user nobody), setpriv, ps and Debian's nginx",
)
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
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


def _nobodys(*words: str) -> int:
    """How many tasks (ps -L: threads too) or processes named words[0] user nobody runs, as ps counts them."""
    argv = ["ps", "-L", "-u", "nobody", "--no-headers"] if not words else ["ps", "-u", "nobody", "-o", "comm="]
    lines = subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()
    return len([line for line in lines if not words or line.strip() == words[0]])


def _under_limit(limit: int, *argv: str) -> subprocess.CompletedProcess[str]:
    """argv as nobody with its soft `ulimit -u` at `limit` (set before setpriv drops to it)."""

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, resource.getrlimit(resource.RLIMIT_NPROC)[1]))

    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=120, cwd="/", preexec_fn=lower)


def test_a_server_that_would_not_fit_is_refused_before_it_starts() -> None:
    limit = _nobodys() + 4  # room for the tool itself, not for a master and its workers
    forked = _under_limit(limit, sys.executable, "-c", FORKS, str(WORKERS + 1))
    assert forked.returncode == 0 and int(forked.stdout) < WORKERS + 1, forked  # the kernel's word
    nginxes = _nobodys("nginx")
    done = _under_limit(limit, sys.executable, "-m", "accept_order", "run", "--server", "nginx", "-w", str(WORKERS))
    assert done.returncode == 1 and not done.stdout, done
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"accept-order: error: nginx's master and {WORKERS} workers would not fit under this user"
    ), line
    assert f"of the {limit} `ulimit -u` allows (raise it, or give fewer --workers)" in line, line
    assert _nobodys("nginx") == nginxes  # none was started
