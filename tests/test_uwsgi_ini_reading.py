"""Review RS of c96a88c: reading what uWSGI was started with must never hang inspect nor disturb the server, and
must read an ini as uWSGI's ini.c does. A FIFO named as the ini blocked inspect for ever in open() (no writer) or
took a writer's bytes; only a non-empty regular file is now opened, and without blocking. uWSGI's own reading: a
bare `thunder-lock` line is on, `--ini PATH:SECTION` reads that section, `ini = PATH` inside an ini is read where
it stands, a lone PATH.ini comes after every option (getopt_long), `[ uwsgi ]` is not [uwsgi]. End to end: a
uWSGI started with a relative --ini, both workers busy, reads its thunder lock (inspect passes the server's cwd)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from test_thunder_lock_reading import WORK_US, inspected_busy

from accept_order.core.spec import ServerSpec
from accept_order.experiments.inspect.run import inspect
from accept_order.servers.launched.uwsgi import UwsgiServer, uwsgi_missing
from accept_order.servers.launched.uwsgi_thunder import THUNDER_LOCK, thunder_locked
from accept_order.servers.registry import checked, server_kind

ON = "[uwsgi]\nthunder-lock = true\n"


def _in_a_thread(argv: list[str], release: Callable[[], None]) -> tuple[bool, list[bool]]:
    """thunder_locked(argv) within 5 s, and what it said; a reader left blocked is let go by `release`."""
    said: list[bool] = []
    reader = threading.Thread(target=lambda: said.append(thunder_locked(argv)), daemon=True)
    reader.start()
    reader.join(5)
    finished = not reader.is_alive()
    if not finished:  # release it, so the test process ends
        release()
        reader.join(5)
    return finished, said


def test_a_fifo_named_as_the_ini_is_not_opened(tmp_path: Path) -> None:
    fifo = str(tmp_path / "uwsgi.ini")
    os.mkfifo(fifo)

    def a_writer_comes() -> None:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    finished, said = _in_a_thread(["uwsgi", "--ini", fifo], a_writer_comes)
    assert finished and said == [False], "open() of a FIFO without a writer blocked"
    finished, said = _in_a_thread(["uwsgi", fifo], a_writer_comes)  # a lone PATH.ini too
    assert finished and said == [False]


def test_a_fifo_with_a_writer_keeps_its_bytes(tmp_path: Path) -> None:
    fifo = str(tmp_path / "uwsgi.ini")
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(fifo, os.O_WRONLY)
    finished = True
    try:
        os.write(writer, ON.encode())
        finished, said = _in_a_thread(["uwsgi", "--ini", fifo], lambda: os.close(writer))
        assert finished and said == [False], "read the FIFO to its end: waited for its writer"
        assert os.read(reader, 100) == ON.encode()  # nothing taken from the pipe
    finally:
        if finished:
            os.close(writer)
        os.close(reader)


def test_devices_and_stdin_are_not_read(tmp_path: Path) -> None:
    assert not thunder_locked(["uwsgi", "--ini", "/dev/zero"])
    (tmp_path / "-").write_text(ON)
    assert not thunder_locked(["uwsgi", "--ini", "-"], str(tmp_path))  # uWSGI's stdin, not a file named '-'


def test_uwsgi_ini_parsing(tmp_path: Path) -> None:
    (tmp_path / "bare.ini").write_text("[uwsgi]\nthunder-lock\n")
    assert thunder_locked(["uwsgi", "--ini", "bare.ini"], str(tmp_path))  # ini.c: a bare key's value is "": on
    (tmp_path / "two.ini").write_text("[uwsgi]\nprocesses = 2\n[prod]\nthunder-lock = true\n")
    assert thunder_locked(["uwsgi", "--ini", "two.ini:prod"], str(tmp_path))  # PATH:SECTION reads that section
    assert not thunder_locked(["uwsgi", "--ini", "two.ini"], str(tmp_path))
    (tmp_path / "outer.ini").write_text("[uwsgi]\nprocesses = 2\nini = bare.ini\n")
    assert thunder_locked(["uwsgi", "--ini", "outer.ini"], str(tmp_path))  # `ini =` is read where it stands
    (tmp_path / "after.ini").write_text("[uwsgi]\nini = bare.ini\nthunder-lock = off\n")
    assert not thunder_locked(["uwsgi", "--ini", "after.ini"], str(tmp_path))
    (tmp_path / "loop.ini").write_text("[uwsgi]\nini = loop.ini\n")
    assert not thunder_locked(["uwsgi", "--ini", "loop.ini"], str(tmp_path))  # a file naming itself ends
    (tmp_path / "off.ini").write_text("[uwsgi]\nthunder-lock = false\n")
    # getopt_long leaves a lone PATH.ini after every option: its false comes after the flag
    assert not thunder_locked(["uwsgi", "off.ini", "--thunder-lock"], str(tmp_path))
    (tmp_path / "spaced.ini").write_text("[ uwsgi ]\nthunder-lock = true\n")
    assert not thunder_locked(["uwsgi", "--ini", "spaced.ini"], str(tmp_path))  # ini.c keeps the spaces


class RelativeIni(UwsgiServer):
    """The launched uWSGI, its ini named relative to its working directory (the launch's directory)."""

    def command(self) -> list[str]:
        argv = super().command()
        assert os.path.dirname(argv[-1]) == self.directory
        return [*argv[:-1], os.path.basename(argv[-1])]


@pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI launched runs: {uwsgi_missing()}")
def test_a_relative_ini_is_read_from_the_servers_cwd() -> None:
    spec = checked(ServerSpec(kind="uwsgi", mode="thunder-lock", workers=2, work_us=WORK_US))
    with RelativeIni(spec) as server:
        result = inspected_busy(server)
    assert result.mechanism.name == "accept-mutex", result.mechanism
    assert THUNDER_LOCK.why in result.mechanism.evidence


def test_an_ini_not_read_is_said(tmp_path: Path) -> None:
    uwsgi = server_kind("uwsgi")
    assert uwsgi.settings_unread(["uwsgi", "--ini", str(tmp_path / "gone.ini")]) is not None
    (tmp_path / "on.ini").write_text(ON)
    assert uwsgi.settings_unread(["uwsgi", "--ini", str(tmp_path / "on.ini")]) is None  # read
    assert uwsgi.settings_unread(["uwsgi", "--ini", "gone.ini", "--thunder-lock"]) is None  # the lock is known
    assert uwsgi.settings_unread(["uwsgi", "--processes", "2"]) is None  # no ini named
    assert server_kind("apache").settings_unread(["apache2", "-f", "/nowhere.conf"]) is None


@pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI launched runs: {uwsgi_missing()}")
def test_inspect_says_an_ini_it_could_not_read() -> None:
    spec = checked(ServerSpec(kind="uwsgi", mode="default", workers=2))
    with RelativeIni(spec) as server:
        os.rename(os.path.join(server.directory, "uwsgi.ini"), os.path.join(server.directory, "moved"))
        result = inspect(port=server.port)
    said = [note for note in result.notes if "uwsgi.ini not read" in note]
    assert len(said) == 1 and "thunder-lock" in said[0], result.notes
    assert result.mechanism.name == "epoll-herd"  # the reading itself: idle workers wait where /proc shows
