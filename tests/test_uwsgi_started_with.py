"""What inspect reads of what a running uWSGI was started with, where its thunder lock may be set (uwsgi_config.py):
its UWSGI_* environment, config files in every format uWSGI reads (ini, YAML, JSON, XML), relative paths from where
it started rather than where its chdir took it, and paths resolved in its own root and mount namespace. Before, each
of these read the default mode's herd for a thunder-locked uWSGI whose workers were all busy at the look (the lock
unseen in /proc), or a file of ours of the same name. The witness of each real run is uWSGI's own start-up log
('thunder lock: enabled', 'chdir() to ...')."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from conftest import gone, wait_for

from accept_order.experiments.inspect.result import InspectResult
from accept_order.experiments.inspect.run import inspect
from accept_order.probes.proc_waits import thread_wait
from accept_order.probes.process_files import Started, read_regular
from accept_order.servers.launched.uwsgi import WAITS, uwsgi_missing, wait_syscall
from accept_order.servers.launched.uwsgi_config_formats import Unreadable, xml, yaml
from accept_order.servers.launched.uwsgi_thunder import THUNDER_LOCK, locked, thunder_reading
from accept_order.servers.registry import server_kind

ON, OFF = "[uwsgi]\nthunder-lock = true\n", "[uwsgi]\nthunder-lock = false\n"
KEYS = frozenset({"thunder-lock"})


def at(directory: Path, argv: list[str], environ: dict[str, str] | None = None, **where: str) -> bool:
    """Whether uWSGI started with `argv` and `environ` in `directory` (its working directory) took the lock."""
    started = Started(("uwsgi", *argv), environ if environ is not None else {}, "/", str(directory), str(directory))
    return locked(thunder_reading(started._replace(**where)))


def test_the_environment_is_read_before_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "off.ini").write_text(OFF)
    (tmp_path / "on.ini").write_text(ON)
    assert at(tmp_path, [], {"UWSGI_THUNDER_LOCK": "1"})
    assert at(tmp_path, [], {"UWSGI_THUNDER_LOCK": ""})  # a value other than false/off/no/0 is on
    assert not at(tmp_path, [], {"UWSGI_THUNDER_LOCK": "Off"})  # strcasecmp
    assert not at(tmp_path, [], {"uwsgi_thunder_lock": "1"})  # the prefix is UWSGI_, in capitals
    assert at(tmp_path, [], {"UWSGI_INI": "on.ini"})  # an immediate option: its file loads where it is named
    assert not at(tmp_path, ["--ini", "off.ini"], {"UWSGI_THUNDER_LOCK": "1"})  # the command line comes after


def test_each_format_as_uwsgi_reads_it(tmp_path: Path) -> None:
    (tmp_path / "u.yaml").write_text("other:\n  thunder-lock: true\nuwsgi:\n  processes: 2\n  thunder-lock: true\n")
    (tmp_path / "u.json").write_text(json.dumps({"uwsgi": {"processes": 2, "thunder-lock": True}}))
    (tmp_path / "u.xml").write_text("<uwsgi>\n  <processes>2</processes>\n  <thunder-lock/>\n</uwsgi>\n")
    for flag, name in (("--yaml", "u.yaml"), ("--yml", "u.yaml"), ("-y", "u.yaml"), ("--json", "u.json")):
        assert at(tmp_path, [flag, name]), flag
    assert at(tmp_path, ["--xml", "u.xml"]) and at(tmp_path, ["-x", "u.xml"]) and at(tmp_path, ["u.xml"])  # lone
    assert at(tmp_path, ["--include", "u.json"])  # --include loads by extension
    assert not at(tmp_path, ["--yaml", "u.yaml:other2"])
    assert at(tmp_path, ["--yaml", "u.yaml:other"])
    (tmp_path / "off.json").write_text(json.dumps({"uwsgi": {"thunder-lock": False}}))
    assert not at(tmp_path, ["--thunder-lock", "--json", "off.json"])  # json's false is "0": off
    (tmp_path / "id.xml").write_text('<all><uwsgi id="a"><thunder-lock/></uwsgi><uwsgi id="b"></uwsgi></all>')
    assert at(tmp_path, ["--xml", "id.xml:a"]) and not at(tmp_path, ["--xml", "id.xml:b"])
    # a config naming another in any format: loaded where it stands, the later setting winning
    (tmp_path / "chain.ini").write_text("[uwsgi]\njson = u.json\nthunder-lock = false\n")
    assert not at(tmp_path, ["--ini", "chain.ini"])
    (tmp_path / "chain2.ini").write_text("[uwsgi]\nthunder-lock = false\nxml = u.xml\n")
    assert at(tmp_path, ["--ini", "chain2.ini"])


def test_what_uwsgis_builds_read_apart_is_said_not_read() -> None:
    with pytest.raises(Unreadable):  # libyaml reads "false" off; uWSGI's own parser keeps the quotes: on
        list(yaml('uwsgi:\n  thunder-lock: "false"\n', None, KEYS))
    with pytest.raises(Unreadable):  # uWSGI's own parser stops at a list; libyaml reads on
        list(yaml("uwsgi:\n  - thunder-lock: true\n", None, KEYS))
    assert list(yaml('uwsgi:\n  module: "app:app"\n', None, KEYS)) == [("module", '"app:app"')]  # not asked
    # expat's first run of text is the value; an element without one is "1"
    assert list(xml("<uwsgi><thunder-lock>0</thunder-lock><master/></uwsgi>", None, KEYS)) == [
        ("thunder-lock", "0"),
        ("master", "1"),
    ]


def test_a_relative_config_is_read_from_where_uwsgi_started_not_where_its_chdir_went(tmp_path: Path) -> None:
    """`cd START && uwsgi --ini app.ini` whose app.ini says chdir = START/app: uWSGI read START/app.ini, then
    changed directory. Its working directory holds another app.ini (off); its PWD is START."""
    start, app = tmp_path, tmp_path / "app"
    app.mkdir()
    (start / "app.ini").write_text(ON + f"chdir = {app}\n")
    (app / "app.ini").write_text(OFF)
    argv = ("uwsgi", "--ini", "app.ini")
    reading = thunder_reading(Started(argv, {"PWD": str(start)}, "/", str(app), str(app)))
    assert locked(reading) and reading.start == str(start), reading
    # without a PWD the start directory is not known: its own app.ini (which names no chdir) is what it read
    assert not locked(thunder_reading(Started(argv, {}, "/", str(app), str(app))))
    # with --chdir on the command line and no PWD, a relative ini is said as not read, not read from here
    chdir = ("uwsgi", "--ini", "app.ini", "--chdir", str(app))
    reading = thunder_reading(Started(chdir, {}, "/", str(app), str(app)))
    assert not reading.settings and reading.unread == (
        ("app.ini", "relative to where uWSGI started, which its chdir left"),
    )
    # a PWD whose file's chdir does not name the working directory is not where it started
    (start / "app.ini").write_text(ON + f"chdir = {start}\n")
    reading = thunder_reading(Started(chdir, {"PWD": str(start)}, "/", str(app), str(app)))
    assert not locked(reading) and reading.start is None


def test_paths_resolve_in_the_servers_root(tmp_path: Path) -> None:
    """A server whose root is another directory (a chroot, a container): its /etc/uwsgi.ini is that root's, and an
    absolute symlink in it leads inside that root too, never to our own /."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "srv").mkdir()
    (root / "srv" / "real.ini").write_text(ON)
    (root / "etc" / "uwsgi.ini").symlink_to("/srv/real.ini")  # absolute: the server's /srv
    where = Started(("uwsgi", "--ini", "/etc/uwsgi.ini"), {}, str(root), "/", None)
    assert read_regular(where, "/etc/uwsgi.ini", None, 100) == ON
    assert locked(thunder_reading(where))
    assert read_regular(where, "../../../../etc/hostname", "/srv", 100) is None  # `..` stays in its root
    os.mkfifo(root / "etc" / "fifo.ini")  # never opened: no writer is waited for
    assert read_regular(where, "/etc/fifo.ini", None, 100) is None
    said = server_kind("uwsgi").settings_unread(["uwsgi", "--ini", "fifo.ini", "--chdir", "/x"])
    assert said is not None and "not read (relative to where uWSGI started" in said


REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
WORK_US = 6_000_000  # long enough for the look on a busy machine; the workers spin, then answer
RUN = "import sys, pyuwsgi; sys.exit(pyuwsgi.run())"
APP = ["--module", "accept_order.servers.launched.uwsgi_app:app", "--need-app"]


@contextmanager
def _launch(shell: str, directory: Path, env: dict[str, str], master: bool = True) -> Iterator[list[int]]:
    """uWSGI started by `shell` (bash -c, which execs it), its log in directory/log: its two workers once both wait
    (without a master, the first is the process started and the second its child)."""
    log = open(directory / "log", "wb")  # noqa: SIM115 - closed below, after the server
    first = subprocess.Popen(["bash", "-c", shell], env=env, stdout=log, stderr=log, start_new_session=True)
    pids: list[int] = []
    try:

        def workers() -> list[int]:
            try:
                children = sorted(p.pid for p in psutil.Process(first.pid).children(recursive=True))
            except psutil.Error:
                return []
            return children if master else [first.pid, *children]

        pids = wait_for(workers, lambda now: len(now) == 2, 30, "two workers")
        wait_for(lambda: [wait_syscall(pid) for pid in pids], lambda now: all(c in WAITS for c in now), 30, "idle")
        yield pids
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        wait_for(lambda: pids, gone, 10, "the workers end")
        log.close()


def _busy_look(port: int, pids: list[int]) -> InspectResult:
    clients = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(2)]
    try:
        for client in clients:
            client.sendall(REQUEST)
        wait_for(lambda: [thread_wait(p, p).call for p in pids], lambda now: now == ["running"] * 2, 10, "both busy")
        return inspect(port=port)
    finally:
        for client in clients:
            client.close()


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, ACCEPT_ORDER_WORK_US=str(WORK_US), ACCEPT_ORDER_WORK_ITERS="0", **extra)


CASES = {
    "environment": ([], {"UWSGI_THUNDER_LOCK": "1"}),
    "yaml": (["--yaml", "u.yaml"], {}),
    "json": (["--json", "u.json"], {}),
    "xml": (["--xml", "u.xml"], {}),
    "chdir": (["--ini", "app.ini"], {}),
}


@pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI launched runs: {uwsgi_missing()}")
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_real_uwsgi_locked_from_each_source_reads_accept_mutex(case: str, tmp_path: Path, free_port: int) -> None:
    (tmp_path / "u.yaml").write_text("uwsgi:\n  thunder-lock: true\n")
    (tmp_path / "u.json").write_text(json.dumps({"uwsgi": {"thunder-lock": True}}))
    (tmp_path / "u.xml").write_text("<uwsgi>\n  <thunder-lock/>\n</uwsgi>\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app.ini").write_text(ON + f"chdir = {tmp_path / 'app'}\n")
    (tmp_path / "app" / "app.ini").write_text(OFF)  # where the chdir went: another file of the same name
    argv, extra = CASES[case]
    options = [*argv, "--master", "--processes", "2", "--http-socket", f"127.0.0.1:{free_port}", *APP]
    shell = f"cd {tmp_path} && exec {sys.executable} -c '{RUN}' {' '.join(options)}"
    with _launch(shell, tmp_path, _env(**extra)) as pids:
        result = _busy_look(free_port, pids)
    log = (tmp_path / "log").read_text()
    assert "thunder lock: enabled" in log, log  # the server's own word
    assert result.mechanism.name == "accept-mutex", (result.mechanism, result.notes)
    assert THUNDER_LOCK.why in result.mechanism.evidence
    if case == "chdir":
        assert f"chdir() to {tmp_path / 'app'}" in log
        assert any(f"read from {tmp_path}, its environment's PWD" in n for n in result.notes)


@pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI launched runs: {uwsgi_missing()}")
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="a mount namespace: root, unshare")
def test_an_absolute_ini_is_read_in_the_servers_mount_namespace(tmp_path: Path, free_port: int) -> None:
    """The server's /…/etc is a tmpfs of its own mount namespace, its uwsgi.ini there says thunder-lock; ours at the
    same path says false (read before: the herd)."""
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "uwsgi.ini").write_text(OFF)
    (tmp_path / "theirs.ini").write_text(ON)
    options = ["--ini", str(etc / "uwsgi.ini"), "--master", "--processes", "2"]
    options += ["--http-socket", f"127.0.0.1:{free_port}", *APP]
    (tmp_path / "inside.sh").write_text(
        f"mount -t tmpfs none {etc} && cp {tmp_path / 'theirs.ini'} {etc / 'uwsgi.ini'} && cd / && "
        f"exec {sys.executable} -c '{RUN}' {' '.join(options)}\n"
    )
    shell = f"exec unshare -m --propagation private bash {tmp_path / 'inside.sh'}"
    with _launch(shell, tmp_path, _env()) as pids:
        result = _busy_look(free_port, pids)
    assert "thunder lock: enabled" in (tmp_path / "log").read_text()
    assert (etc / "uwsgi.ini").read_text() == OFF  # ours, untouched
    assert result.mechanism.name == "accept-mutex", (result.mechanism, result.notes)


@pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI launched runs: {uwsgi_missing()}")
def test_a_masterless_thunder_locked_uwsgi_idle_reads_accept_mutex(tmp_path: Path, free_port: int) -> None:
    """No master: worker 1 is worker 2's parent. Idle, one waits in epoll_wait holding the lock, the other in
    FUTEX_LOCK_PI: read 'epoll' with 1 worker before (the waiter's child or parent was no sibling of it)."""
    options = ["--thunder-lock", "--processes", "2", "--http-socket", f"127.0.0.1:{free_port}", *APP]
    shell = f"cd {tmp_path} && exec {sys.executable} -c '{RUN}' {' '.join(options)}"
    with _launch(shell, tmp_path, _env(), master=False) as pids:
        assert psutil.Process(pids[1]).ppid() == pids[0]  # the case itself: no two workers are siblings
        result = inspect(port=free_port)
    assert "thunder lock: enabled" in (tmp_path / "log").read_text()
    assert result.mechanism.name == "accept-mutex", result.mechanism
    assert sorted(p.pid for p in result.processes) == pids and result.workers == 2
    assert sorted(u.role for u in result.units) == ["lock", "worker"]
