"""reload as a user without sudo (core/netns.py): its private network namespace is made in a user namespace of
the user's own, as `unshare -Urn` would.

On a shared host a developer has no root: 'accept-order reload' read 'cannot make a private network namespace:
Operation not permitted (a private network namespace needs CAP_SYS_ADMIN: run as root)', where `unshare -Urn
accept-order reload` ran. Here the command runs as nobody; the witnesses are the kernel's: whether nobody may
make a user namespace at all (`unshare -Urn true`), the host's tcp_migrate_req unchanged, the file nobody's, and
what the kernel promises of a reuseport listener that leaves with tcp_migrate_req=1 (nothing lost), which holds
only where the setting was written in the run's own namespace (the host's is 0 here or restored as it was).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from accept_order.core import capabilities, netns
from accept_order.core.netns import MIGRATE_REQ, read_sysctl

as_nobody = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("setpriv") and shutil.which("unshare")),
    reason="needs root (to drop to user nobody) and setpriv and unshare (util-linux)",
)

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
LOAD = ["-w", "3", "-c", "32", "--work-ms", "5", "--duration", "300ms"]


def _may_make_user_namespaces() -> bool:
    return subprocess.run([*NOBODY, "unshare", "-Urn", "true"], capture_output=True, timeout=60).returncode == 0


@pytest.fixture
def nobodys_dir() -> Iterator[Path]:
    """A directory nobody may write to (pytest's own tmp_path is under root's 0700 /tmp/pytest-of-root)."""
    with tempfile.TemporaryDirectory(prefix="reload-as-a-user.") as name:
        os.chmod(name, 0o777)
        yield Path(name)


@as_nobody
def test_reload_runs_as_a_user_in_a_namespace_of_its_own(nobodys_dir: Path) -> None:
    out = nobodys_dir / "reload.json"
    before = read_sysctl(MIGRATE_REQ)
    argv = ["reload", "--modes", "reuseport", "--how", "leave", "--migrate", "1", *LOAD, "--json", str(out)]
    done = subprocess.run(
        [*NOBODY, sys.executable, "-m", "accept_order", *argv], capture_output=True, text=True, timeout=180, cwd="/"
    )
    if before is None:
        pytest.skip("this kernel has no net.ipv4.tcp_migrate_req (Linux 5.14+)")
    if not _may_make_user_namespaces():  # the kernel refuses nobody a user namespace: said, with why
        assert done.returncode == 1 and not done.stdout, done
        (line,) = done.stderr.splitlines()
        assert "a user namespace of this user's own, which this kernel refused too" in line, line
        return
    assert done.returncode == 0, done.stderr
    assert read_sysctl(MIGRATE_REQ) == before  # the host's setting, never changed
    assert out.stat().st_uid == 65534  # nobody's: its uid mapped to itself, not to the namespace's root
    (run,) = json.loads(out.read_text())["runs"]
    assert run["migrate"] == 1 and run["how"] == "leave"
    assert sum(run["served"]) == run["finished"] > 0 and not run["errors"], run  # the kernel moved the queue
    assert "counters from a private network namespace" in " ".join(done.stdout.split()), done.stdout


class _Refusing:
    """libc whose unshare(2) fails: CLONE_NEWNET alone with EPERM (no CAP_SYS_ADMIN), the user namespace with `code`."""

    def __init__(self, code: int) -> None:
        self.code = code

    def unshare(self, flags: int) -> int:
        ctypes.set_errno(errno.EPERM if flags == netns.CLONE_NEWNET else self.code)
        return -1


@pytest.mark.parametrize(
    ("code", "sysctls", "said"),
    [
        (errno.ENOSPC, {netns.MAX_USER_NAMESPACES: "0"}, "(user.max_user_namespaces is 0)"),
        (  # the limit reached, not a security module ('a security module or seccomp filter may forbid it')
            errno.ENOSPC,
            {},
            "(No space left on device: this user's user.max_user_namespaces (15000) reached, or 32 nested)",
        ),
        (errno.EPERM, {netns.USERNS_CLONE: "0"}, "(kernel.unprivileged_userns_clone is 0)"),
        (errno.EPERM, {}, "(Operation not permitted: a security module or seccomp filter may forbid it)"),
        (errno.EINVAL, {}, "(Invalid argument: this process already runs threads)"),
    ],
)
def test_a_user_namespace_refused_says_by_what(
    code: int, sysctls: dict[str, str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the kernel refuses the user's own user namespace too, the line says which switch refused it."""
    monkeypatch.setattr(netns, "libc", lambda: _Refusing(code))
    monkeypatch.setattr(netns, "read_sysctl", lambda name: sysctls.get(name, "15000"))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: 0)
    with pytest.raises(netns.NamespaceError) as refused:
        netns.enter_private()
    line = str(refused.value)
    assert line.startswith("cannot make a private network namespace: Operation not permitted (a private network "), line
    assert f"a user namespace of this user's own, which this kernel refused too {said}: run as root)" in line, line
