"""A process whose fd links cannot be read is 'not this user's', not one holding nothing (probes/fd_table.read_links).

Root without CAP_SYS_PTRACE (a container's root, by default) may list another user's /proc/PID/fd, its directory
being searchable, but every readlink there fails with EACCES. read_links took each failure for a descriptor closed
between the listing and the readlink and returned {}: inspect of `serve -m io-uring -w 2` run as nobody said 'pid N
(python3) holds no listening TCP socket, nor does its parent, a child or ...' where it holds two. Here a process
of nobody's, read by this test's interpreter with CAP_SYS_PTRACE dropped; the kernel's own readlink is the witness.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv (util-linux)"
)

UNPTRACED = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"]


@pytest.fixture
def nobodys() -> Iterator[int]:
    """A process of user nobody, with its stdin a pipe (so that it has descriptors), ended by the test."""
    proc = subprocess.Popen(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sleep", "60"], stdin=subprocess.PIPE
    )
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(10)


def _unptraced(code: str) -> str:
    done = subprocess.run([*UNPTRACED, sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_links_listed_but_not_readable_are_not_this_users(nobodys: int) -> None:
    # the kernel's word, without CAP_SYS_PTRACE: the table lists, its links are refused
    witness = (
        f"import os; names = os.listdir('/proc/{nobodys}/fd'); print(len(names) > 0)\n"
        f"try:\n    os.readlink('/proc/{nobodys}/fd/' + names[0]); print('read')\n"
        "except PermissionError:\n    print('EACCES')"
    )
    assert _unptraced(witness).split() == ["True", "EACCES"]
    read = f"from accept_order.probes.fd_table import read_links; print(read_links({nobodys}))"
    assert _unptraced(read) == "None"  # {} before: a process holding nothing
    from accept_order.probes.fd_table import read_links

    assert read_links(nobodys)  # with the capability, the same table reads


def test_inspect_says_whose_files_it_could_not_read(nobodys: int) -> None:
    inspect = [os.path.join(os.path.dirname(sys.executable), "accept-order"), "inspect", str(nobodys)]
    done = subprocess.run([*UNPTRACED, *inspect], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and not done.stdout, done
    (line,) = done.stderr.splitlines()
    # root, without the capability: the words say so, not 'run as root' (was: 'holds no listening TCP socket')
    assert "its open files are not readable here even by root (this root lacks CAP_SYS_PTRACE)" in line, line
    assert "run as root" not in line, line
