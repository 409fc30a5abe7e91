"""inspect of HAProxy reads tune.listener.multi-queue and nbthread from the config its command line names.

Its mechanism line said the accepting thread hands each connection to the less loaded of two threads whatever the
config said, where 'tune.listener.multi-queue off' (not visible in /proc) makes the thread that accepts serve it.
Started by hand (nbthread 4, 200 curl requests one after another, Linux 6.18, 2 vCPUs), bpftrace's accept4 returns
by thread against the thread each reply named: with it off, accepted 97/30/69/4 and served 97/30/69/4; with it on,
accepted 23/53/99/25 and served 50/50/50/50.

Here Debian's HAProxy is started by each test from a config of its own (a file, or a -f directory of *.cfg read in
order, the last setting winning), and inspect's line is read for it: off, on by default, one thread, and from
HAProxy's defaults where the file is gone. The witness where the line says none is handed on is the kernel's: per
thread, the accepts bpftrace counts equal the requests the replies say each thread served (skipped, with the
reason, where bpftrace cannot run)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
from conftest import wait_for
from haproxy_by_hand import START_TIMEOUT_S, THREADS, answering, ask, config, haproxy

from accept_order.experiments.inspect.run import inspect
from accept_order.probes.accepts import AcceptCounter
from accept_order.servers.launched.base import free_port
from accept_order.servers.launched.haproxy import HAPROXY_MODES, haproxy_missing
from accept_order.servers.launched.haproxy_config import Settings, why_said
from accept_order.servers.launched.haproxy_config_text import MULTI_QUEUE, NBTHREAD, global_settings

if haproxy_missing():
    pytest.skip(f"a real HAProxy: {haproxy_missing()}", allow_module_level=True)

THREADS_WHY = HAPROXY_MODES["threads"].why


def accepted_and_served(pid: int, port: int) -> tuple[dict[int, int], dict[int, int]]:
    """100 requests, one a connection: (the requests each thread served, by the replies; the connections each
    accepted, bpftrace's count of its accept4 returns), by thread id; skips where bpftrace cannot count."""
    tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))  # thread ids in creation order
    with AcceptCounter(tids) as counter:
        counter.start()
        served = Counter(ask(port) for _ in range(100))
        counts = counter.stop()
    if not counts.available:
        pytest.skip(f"no kernel witness of who accepts: {counts.why}")
    return {tids[t]: n for t, n in served.items()}, {t: n for t, n in counts.counts.items() if n}


def why(process: subprocess.Popen[bytes]) -> str:
    return inspect(process.pid).mechanism.why


# off as written; as a variable's default HAProxy takes where the variable is not set (its doc's 2.3); and before a
# .if block that would turn it on, whose condition (a variable not set) HAProxy found false
UNSET_IF = "off\n.if defined(ACCEPT_ORDER_MQ)\n    tune.listener.multi-queue on\n.endif"


@pytest.mark.parametrize("value", ["off", '"${ACCEPT_ORDER_MQ-off}"', UNSET_IF])
def test_multi_queue_off_is_read_and_the_accepting_thread_serves(tmp_path: Path, value: str) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, f"    tune.listener.multi-queue {value}"))
    environ = {name: v for name, v in os.environ.items() if name != "ACCEPT_ORDER_MQ"}
    with haproxy(path, port, env=environ) as process:
        said = why(process)
        assert f"its config ({path}) turns tune.listener.multi-queue off" in said, said
        if value == UNSET_IF:  # the .if block's condition is HAProxy's to judge: the handing on is not known, as
            # observe says, though this HAProxy runs without it (its replies: the thread that accepts serves)
            assert "(unless it runs what was read: its config" in said and "which would hand none on)" in said, said
        else:
            assert "none is handed on" in said and "less loaded" not in said, said
        assert "HAProxy's default" not in said, said  # what it said is the config's
        served, accepted = accepted_and_served(process.pid, port)
    assert served == accepted


def test_by_default_the_line_says_multi_queue_is_on(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port))
    with haproxy(path, port) as process:
        said = why(process)
    assert "passes the connection to the accept queue of the less loaded of two threads" in said, said
    assert f"(its config, {path}, sets nbthread {THREADS}, leaves it at HAProxy's default, on)" in said, said


def test_a_directory_given_to_f_is_read_in_order(tmp_path: Path) -> None:
    """HAProxy reads a -f directory's *.cfg files in C's order, not hidden ones, and the last setting wins."""
    port = free_port("127.0.0.1")
    directory = tmp_path / "conf.d"
    directory.mkdir()
    (directory / "10-main.cfg").write_text(config(port, "    tune.listener.multi-queue on"))
    (directory / "20-off.cfg").write_text("global\n    tune.listener.multi-queue off\n")
    (directory / ".30-hidden.cfg").write_text("global\n    tune.listener.multi-queue on\n")
    (directory / "40-not-cfg.conf").write_text("global\n    tune.listener.multi-queue on\n")
    with haproxy(directory, port) as process:
        said = why(process)
    assert f"its config ({directory}/10-main.cfg, {directory}/20-off.cfg) turns tune.listener.multi-queue off" in said


def test_the_global_sections_last_settings_are_read() -> None:
    """As HAProxy's parser reads them: the global section's only, the last of each, comments and quotes as it
    takes them, "${NAME}" from its environment (inside double quotes: unquoted, 'nbthread ${T}' failed HAProxy's
    check with T=3), "${NAME-default}" where NAME is not set; one inside a .if block or of a variable not there is
    not decided."""
    text = """
# tune.listener.multi-queue on   (a comment)
global
    nbthread 2
    tune.listener.multi-queue on
defaults
    tune.listener.multi-queue on
global
    tune.listener.multi-queue "off"  # the last one
    nbthread "${THREADS}"
frontend f
    nbthread 9
"""
    assert global_settings(text, {"THREADS": "3"}) == ({MULTI_QUEUE: "off", NBTHREAD: "3"}, {})
    found, unknown = global_settings(text, {})
    assert found == {MULTI_QUEUE: "off", NBTHREAD: "2"} and NBTHREAD in unknown, (found, unknown)
    defaulted = "global\n    tune.listener.multi-queue \"${MQ-off}\"\n    nbthread '${T}'\n"
    assert global_settings(defaulted, {}) == ({MULTI_QUEUE: "off", NBTHREAD: "${T}"}, {})
    assert global_settings(defaulted, {"MQ": "on", "T": "3"}) == ({MULTI_QUEUE: "on", NBTHREAD: "${T}"}, {})
    assert global_settings("global\n    tune.listener.multi-queue \\off\n", {}) == ({MULTI_QUEUE: "off"}, {})
    conditional = "global\n.if defined(X)\n    tune.listener.multi-queue off\n.endif\n"
    assert global_settings(conditional, {}) == (
        {},
        {MULTI_QUEUE: "is set inside a .if block, whose condition HAProxy evaluates"},
    )


def test_one_thread_in_the_config_hands_nothing_on() -> None:
    said = why_said(THREADS_WHY, Settings(None, 1, ("a.cfg",), ()))
    assert "sets nbthread 1: one thread accepts and serves every connection" in said and "less loaded" not in said


def test_a_config_gone_since_is_said_and_the_line_is_haproxys_defaults(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, "    tune.listener.multi-queue off"))
    with haproxy(path, port) as process:
        path.unlink()
        said = why(process)
    assert said.endswith(
        f"(HAProxy's defaults: its config could not be read here: {path} (no such file or directory))"
    ), said
    assert "less loaded of two threads" in said, said


def test_a_config_changed_since_haproxy_started_is_said(tmp_path: Path) -> None:
    """Edited, not reloaded: HAProxy still runs what it read at its start, so the file's word is not the last one.
    The witness that it still runs multi-queue off: each thread serves what it accepted."""
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, "    tune.listener.multi-queue off"))
    with haproxy(path, port) as process:
        before = why(process)
        path.write_text(config(port, "    tune.listener.multi-queue on"))
        edited = time.time() + 5  # the edit as the kernel dates it: 5 s after the start, with no wait for the clock
        os.utime(path, (edited, edited))
        after = why(process)
        assert "turns tune.listener.multi-queue off" in before and "changed after" not in before, before
        assert after.endswith(
            "; changed after the newest of its processes started, so what it runs may differ until it is reloaded: "
            f"{path}"
        ), after
        served, accepted = accepted_and_served(process.pid, port)
    assert served == accepted


def test_a_chrooted_daemons_config_is_read_in_the_root_it_left(tmp_path: Path) -> None:
    """'haproxy -D -p PIDFILE -f CONFIG' (Debian's init script's form) with a chroot: HAProxy reads its config, forks
    a daemon that init adopts, and chroots, so the config's path leads nowhere in the daemon's root and init did not
    start it. Read where it was, in the root of the mount namespace (here init's /proc/1/root is closed even to
    root): cb9ed30 said '(HAProxy's defaults: its config could not be read here: ... (no such file or directory))'
    of a daemon with multi-queue off, whose threads each served what they accepted (the witness)."""
    jail = tmp_path / "jail"
    jail.mkdir()
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, f"    tune.listener.multi-queue off\n    chroot {jail}"))
    pidfile = tmp_path / "haproxy.pid"
    command = ["haproxy", "-D", "-p", str(pidfile), "-f", str(path)]
    subprocess.run(command, check=True, timeout=START_TIMEOUT_S, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pid = int(pidfile.read_text().split()[0])  # written before the daemon was forked off: it is there now
    try:
        answering(pid, port, THREADS, lambda: os.path.exists(f"/proc/{pid}"))
        assert os.readlink(f"/proc/{pid}/root") == str(jail)
        said = inspect(pid).mechanism.why
        assert f"its config ({path}) turns tune.listener.multi-queue off" in said, said
        served, accepted = accepted_and_served(pid, port)
    finally:
        os.kill(pid, signal.SIGKILL)  # init's child, not ours: init reaps it
    assert served == accepted


def test_a_config_this_user_cannot_read_is_said_and_the_line_is_haproxys_defaults(tmp_path: Path) -> None:
    """A config HAProxy read as root at its start, another user's and closed to others: inspect run as root without
    the capabilities that pass file permissions (setpriv drops them from the bounding set) says why it is unread."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and util-linux's setpriv to read as a user the file is closed to")
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, "    tune.listener.multi-queue off"))
    os.chown(path, 65534, 65534)  # nobody's, readable by nobody else (root reads it by CAP_DAC_OVERRIDE)
    path.chmod(0o600)
    bounded = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    with haproxy(path, port) as process:
        command = [*bounded, sys.executable, "-m", "accept_order", "inspect", str(process.pid), "--json", "-"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0 and "setpriv" in done.stderr:
        pytest.skip(f"setpriv could not drop the capabilities here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)["mechanism"]["why"]
    assert said.endswith(f"(HAProxy's defaults: its config could not be read here: {path} (permission denied))"), said


def started_at(pid: int) -> float:
    """When process `pid` started, on the wall clock: its starttime against /proc/uptime (the kernel's 10 ms ticks,
    not psutil's, which counts from the boot time in whole seconds)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        ticks = int(f.read().rpartition(b")")[2].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))


def test_an_external_check_started_since_does_not_hide_a_change(tmp_path: Path) -> None:
    """HAProxy forks an external check whenever it checks (here every 3 s, each killed at its timeout), config or
    not: the newest of its processes that read the config is HAProxy's own, so an edit between its start and a
    check's is still said (cb9ed30's descendants counted the check's start, 'changed' went unsaid)."""
    script = tmp_path / "check.sh"
    script.write_text("#!/bin/sh\nexec /bin/sleep 60\n")  # its environment is cleared: no PATH
    script.chmod(0o755)
    port = free_port("127.0.0.1")
    global_lines = "    tune.listener.multi-queue off\n    insecure-fork-wanted\n    external-check"
    backend = f"""
backend b
    option external-check
    external-check command {script}
    server s 127.0.0.1:{port} check inter 3s
"""
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, global_lines) + backend)
    with haproxy(path, port) as process:
        start = started_at(process.pid)

        def later_check() -> int | None:
            """A check HAProxy started a second or more after itself (its script, alive until its timeout)."""
            for child in psutil.Process(process.pid).children(recursive=True):
                with contextlib.suppress(OSError, psutil.Error):
                    if child.name() != "haproxy" and started_at(child.pid) > start + 1:
                        return child.pid
            return None

        check = wait_for(later_check, lambda pid: pid is not None, 20, "an external check after HAProxy's start")
        assert check is not None
        edited = started_at(check) - 0.3  # between HAProxy's start (over 0.7 s before) and the check's
        os.utime(path, (edited, edited))
        said = why(process)
    assert "changed after the newest of its processes started" in said, said
