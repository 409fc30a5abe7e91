"""'run as root' is said only to a user who is not root (core/capabilities.what_would_let_it).

Root may lack the capability that was needed (a container's root has no CAP_SYS_PTRACE, Docker drops
CAP_SYS_RESOURCE) or hold it and still be refused (this sandbox's pid 1 keeps its fd links even from root holding
CAP_SYS_PTRACE). Every message that named the remedy is asked here as each of the three: a user, root without the
capability, root with it (euid and CapEff monkeypatched); and `inspect 1` is run for real on a machine whose pid 1
root cannot read."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from types import SimpleNamespace

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core import capabilities, netns
from accept_order.core.capabilities import ADMIN, PTRACE, RESOURCE, Capability, holds
from accept_order.core.errors import NotServing
from accept_order.experiments.inspect import held, run
from accept_order.experiments.observe import load
from accept_order.probes import bpftrace_messages, fd_table, listeners, owner, serving
from accept_order.servers import attached_listening

EVERY = (1 << 41) - 1  # CAP_CHOWN .. CAP_CHECKPOINT_RESTORE (40), as root holds them on Linux 5.9+
WITHOUT = EVERY & ~(1 << PTRACE.bit | 1 << ADMIN.bit | 1 << RESOURCE.bit)
AS = {"user": (1000, 0), "root without": (0, WITHOUT), "root with": (0, EVERY)}


@pytest.fixture(params=list(AS))
def as_(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    euid, caps = AS[request.param]
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: caps)
    return str(request.param)


def _refused(call: Callable[[], object]) -> str:
    with pytest.raises(NotServing) as refused:
        call()
    return str(refused.value)


def _unreadable_files(monkeypatch: pytest.MonkeyPatch) -> str:
    def refused(pid: int, tables: object = None) -> frozenset[int]:
        raise PermissionError(13, "not read")

    monkeypatch.setattr(serving, "socket_inodes", refused)
    return _refused(lambda: serving.find_server(pid=os.getpid()))


def _unheld_listener(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(serving, "socket_holders", lambda inodes, pids=None, tables=None: {})
    with socket.create_server(("127.0.0.1", 0)) as listener:  # still listening at the second look
        return _refused(lambda: serving.find_server(port=listener.getsockname()[1]))


def _observe_setns(monkeypatch: pytest.MonkeyPatch) -> str:
    return load._why(PermissionError(1, "setns into pid 7's network namespace: Operation not permitted"))


def _observe_files(monkeypatch: pytest.MonkeyPatch) -> str:
    return load._why(PermissionError(13, "/proc/7/fd is not this user's to read"))


def _inspect_hidden(monkeypatch: pytest.MonkeyPatch) -> str:
    (note,) = run._notes(SimpleNamespace(hidden=(7,)), [], {}, True, True)  # type: ignore[arg-type]
    return note


def _inspect_waits(monkeypatch: pytest.MonkeyPatch) -> str:
    sample = SimpleNamespace(waits={7: [SimpleNamespace(call="unknown")]})
    (note,) = run._notes(SimpleNamespace(hidden=()), [sample], {}, True, True)  # type: ignore[arg-type, list-item]
    return note


def _inspect_held(monkeypatch: pytest.MonkeyPatch) -> str:
    def refused(ports: object, pid: int) -> list[object]:
        raise PermissionError(1, "setns")

    monkeypatch.setattr(held, "server_sockets", refused)
    server = SimpleNamespace(listeners=(SimpleNamespace(port=80, source="netlink"),), peers={}, pids=[7], hidden=())
    counts, note = held.connections_held(server, SimpleNamespace(sockets={7: frozenset()}))  # type: ignore[arg-type]
    assert counts == {} and note is not None
    return note


def _attach_hidden(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(listeners, "listening_sockets_of", lambda port, pids: [SimpleNamespace(inode=1)])
    monkeypatch.setattr(listeners, "serving_on", lambda rows, host: rows)
    monkeypatch.setattr(owner, "socket_holders", lambda inodes: {})
    monkeypatch.setattr(fd_table, "read_links", lambda pid: None)  # listed, not read
    me = [os.getpid()]
    return _refused(lambda: attached_listening.check_listening("127.0.0.1", 80, me, me, helpers=()))


def _memlock(monkeypatch: pytest.MonkeyPatch) -> str:
    return bpftrace_messages.not_loaded_hint(b"ERROR: couldn't set RLIMIT_MEMLOCK\nERROR: failed to create map\n")


# each message, the capability it needs, and a fragment of its own words (kept for every reader)
SITES: dict[str, tuple[Callable[[pytest.MonkeyPatch], str], Capability, str]] = {
    "serving: a process's open files": (_unreadable_files, PTRACE, "its open files are not"),
    "serving: a listener no process holds": (_unheld_listener, PTRACE, "a socket listens on 127.0.0.1:"),
    "observe: the namespace": (_observe_setns, ADMIN, "may not be entered (setns needs CAP_SYS_ADMIN: "),
    "observe: the workers' files": (_observe_files, PTRACE, "the workers' open files are not this user's to read ("),
    "inspect: hidden processes": (_inspect_hidden, PTRACE, "pid 7: open files not readable by this user ("),
    "inspect: waits": (_inspect_waits, PTRACE, "1 thread samples: what they wait in is not readable by this user ("),
    "inspect: connections held": (_inspect_held, ADMIN, "connections held: the server's network namespace may not"),
    "--attach: hidden processes": (_attach_hidden, PTRACE, "open files are not this user's to read ("),
    "bpftrace: locked memory": (_memlock, RESOURCE, "kernels before 5.11 charge eBPF maps against it; "),
}


@pytest.mark.parametrize("site", list(SITES))
def test_each_message_says_run_as_root_only_to_a_user(site: str, as_: str, monkeypatch: pytest.MonkeyPatch) -> None:
    said, needs, words = SITES[site]
    line = said(monkeypatch)
    assert words in line, line
    if as_ == "user":
        assert "run as root" in line and "lacks" not in line, line
    elif as_ == "root without":
        assert f"this root lacks {needs.name}" in line and "run as root" not in line, line
    else:
        assert needs.kept in line and "run as root" not in line and "lacks" not in line, line


def test_a_user_is_told_who_else_may_read_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: 0)
    assert _unreadable_files(monkeypatch).endswith("not this user's to read (run as root or as its user)")
    said = "eBPF maps against it; run as root, or raise the hard limit, limits.conf's memlock or a container's"
    assert _memlock(monkeypatch).endswith(f"{said} --ulimit memlock)")
    assert _observe_files(monkeypatch).endswith("(run as root or as the server's user)")


def test_a_user_holding_the_capability_is_not_sent_to_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """File capabilities give a non-root CAP_SYS_PTRACE: refused all the same, the kernel kept the process."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: 1 << PTRACE.bit)
    line = _unreadable_files(monkeypatch)
    assert PTRACE.kept in line and "run as root" not in line, line


def test_the_capabilities_are_this_process_s_own() -> None:
    """CapEff read from /proc: in a child that setpriv drops CAP_SYS_PTRACE from, it is not held, where the
    same code run here says what this process holds (the kernel's word: its capability bounding set)."""
    if os.geteuid() != 0 or not holds(PTRACE) or subprocess.run(["which", "setpriv"], capture_output=True).returncode:
        pytest.skip("needs root holding CAP_SYS_PTRACE, and setpriv (util-linux)")
    code = "from accept_order.core.capabilities import PTRACE, ADMIN, holds; print(holds(PTRACE), holds(ADMIN))"
    drop = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", sys.executable, "-c", code]
    done = subprocess.run(drop, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", str(holds(ADMIN))], done


def test_inspect_1_as_root_says_what_keeps_it() -> None:
    """This sandbox's pid 1 keeps its fd links from root holding CAP_SYS_PTRACE: the line says the kernel keeps
    it, neither 'run as root' nor a capability this root holds (was: '(no CAP_SYS_PTRACE, or a process ...)')."""
    if os.geteuid() != 0 or not holds(PTRACE) or fd_table.read_links(1) is not None:
        pytest.skip("needs root holding CAP_SYS_PTRACE, on a machine whose pid 1 it cannot read")
    line = assert_one_error_line(run_cli(["inspect", "1"]), 1, "pid 1 (", "is init", PTRACE.kept)
    assert "run as root" not in line and "CAP_SYS_PTRACE" not in line, line


@pytest.mark.parametrize("euid", [1000, 0])
def test_unread_capabilities_leave_the_words_as_they_were(euid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without /proc/self/status's word, a user is still told to run as root, and root is not."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    monkeypatch.setattr(capabilities, "STATUS", "/proc/self/no-such-status")
    said = capabilities.what_would_let_it(PTRACE, or_as="its user")
    assert said == ("run as root or as its user" if euid else PTRACE.kept), said


class _Refusing:
    """libc whose unshare(2) fails EPERM, as the kernel's does without CAP_SYS_ADMIN."""

    def unshare(self, flags: int) -> int:
        ctypes.set_errno(errno.EPERM)
        return -1


def test_a_private_namespace_refused_says_what_it_needs(as_: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns, "libc", _Refusing)
    with pytest.raises(netns.NamespaceError) as refused:
        netns.enter_private()
    line = str(refused.value)
    assert line.startswith("cannot make a private network namespace: Operation not permitted ("), line
    said = {
        # a user's own user namespace is tried too (core/netns._in_user_namespace), refused here as well
        "user": "a private network namespace needs CAP_SYS_ADMIN, or a user namespace of this user's own, which this "
        "kernel refused too (",
        "root without": "a private network namespace needs CAP_SYS_ADMIN: this root lacks CAP_SYS_ADMIN)",
        "root with": "this process holds CAP_SYS_ADMIN: a seccomp filter or security module (a container's) may",
    }[as_]
    assert said in line and (as_ == "user" or "root" not in line.replace("this root lacks", "")), line
    assert as_ != "user" or line.endswith("): run as root)"), line


def test_reload_as_root_without_cap_sys_admin_is_told_it_lacks_it() -> None:
    """The kernel's own refusal: reload's private namespace under setpriv without CAP_SYS_ADMIN (was: 'needs
    root, or CAP_SYS_ADMIN', said to root)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root (to drop CAP_SYS_ADMIN) and setpriv (util-linux)")
    drop = ["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin"]
    done = subprocess.run(
        [*drop, sys.executable, "-m", "accept_order", "reload"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and not done.stdout, done
    assert done.stderr.splitlines() == [
        "accept-order: error: cannot make a private network namespace: Operation not permitted (a private network "
        "namespace needs CAP_SYS_ADMIN: this root lacks CAP_SYS_ADMIN)"
    ], done.stderr


def test_the_memlock_hint_names_the_limit_bpftrace_had(monkeypatch: pytest.MonkeyPatch) -> None:
    """bpftrace's child takes the hard limit (raise_memlock): a soft 64 KB here is not what it had, and root
    without CAP_SYS_RESOURCE could raise only that one (was: '`ulimit -l` 64 KB: ... raise `ulimit -l`')."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: WITHOUT)
    limits = SimpleNamespace(RLIMIT_MEMLOCK=8, RLIM_INFINITY=-1, getrlimit=lambda which: (64 << 10, 8 << 20))
    monkeypatch.setattr(bpftrace_messages, "resource", limits)
    hint = _memlock(monkeypatch)
    assert "`ulimit -Hl` 8192 KB: kernels before 5.11" in hint and "64 KB" not in hint, hint
    assert hint.endswith(
        "this root lacks CAP_SYS_RESOURCE: raise the hard limit, limits.conf's memlock or a "
        "container's --ulimit memlock)"
    ), hint
