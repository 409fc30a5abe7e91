"""Review RE of what inspect reads of a running uWSGI's settings (uwsgi_config.py): where the text of its configs is
not what uWSGI applied, the reading says so instead of taking the text. uWSGI's own reading is the witness: PyPI's
pyuwsgi with `--show-config` prints every option as it applied them (after its $(ENV), @(FILE) and %(NAME)
expansions and its config logic), and stops at a socket it cannot bind, before any worker starts.

Each of these read a definite answer before, the wrong one: a thunder-lock past a config's first MiB was cut off
unsaid, one inside `if-env` or with `$(VAR)` was read as set, `set = thunder-lock=1` and `--thunder` were not read;
a file naming itself three times took 9,841 reads (17 s); and where a seccomp filter refused openat2 with EPERM
(Docker before 20.10) rather than ENOSYS, no config was read even in our own root."""

from __future__ import annotations

import ctypes
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.probes.process_files import Started, read_regular
from accept_order.servers.launched.uwsgi import uwsgi_missing
from accept_order.servers.launched.uwsgi_config import MAX_CONFIG_BYTES, MAX_FILES, Reading
from accept_order.servers.launched.uwsgi_thunder import locked, thunder_reading

RUN = "import sys, pyuwsgi; sys.exit(pyuwsgi.run())"
ON = "[uwsgi]\nthunder-lock = true\n"


def reading(directory: Path, argv: list[str], environ: dict[str, str] | None = None) -> Reading:
    return thunder_reading(Started(("uwsgi", *argv), environ or {}, "/", str(directory), str(directory)))


def uwsgis_own(directory: Path, argv: list[str], environ: dict[str, str] | None = None) -> bool:
    """Whether pyuwsgi started with `argv` in `directory` takes the thunder lock, by its own --show-config (the last
    thunder-lock line wins; uwsgi_opt_true: off for false/off/no/0)."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, *argv, "--show-config", "--socket", str(directory / "no" / "such.sock")],
        cwd=directory,
        env={"PATH": os.environ.get("PATH", ""), **(environ or {})},
        capture_output=True,
        timeout=60,
    )
    shown = (done.stdout + done.stderr).decode()
    assert ";uWSGI instance configuration" in shown, shown
    on = False
    for line in shown.split("\n"):
        key, equals, value = line.partition(" = ")
        if equals and key == "thunder-lock":
            on = value.lower() not in ("false", "off", "no", "0")
    return on


needs_uwsgi = pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI's own reading: {uwsgi_missing()}")


def test_a_config_larger_than_the_limit_is_said_not_read_not_cut(tmp_path: Path) -> None:
    filler = "; " + "x" * 98 + "\n"
    (tmp_path / "big.ini").write_text("[uwsgi]\n" + filler * (MAX_CONFIG_BYTES // len(filler) + 1) + "thunder-lock\n")
    got = reading(tmp_path, ["--ini", "big.ini"])
    assert not got.read and [name for name, _ in got.unread] == ["big.ini"], got
    assert "larger than" in got.unread[0][1]


def test_a_file_naming_itself_ends_within_the_bound_and_is_said(tmp_path: Path) -> None:
    (tmp_path / "loop.ini").write_text("[uwsgi]\n" + "ini = loop.ini\n" * 3)
    got = reading(tmp_path, ["--ini", "loop.ini"])
    assert len(got.read) <= MAX_FILES, len(got.read)  # 9,841 before
    assert got.unread == (("loop.ini", "more than 8 files deep or 64 in all (a file naming itself?)"),)


CASES = {
    # uWSGI expands the value after every option is read: its text is not its value
    "placeholder": ({"u.ini": "[uwsgi]\ntl = false\nthunder-lock = %(tl)\n"}, ["--ini", "u.ini"], {}),
    "environment": ({"u.ini": "[uwsgi]\nthunder-lock = $(TL)\n"}, ["--ini", "u.ini"], {"TL": "false"}),
    "file": ({"u.ini": "[uwsgi]\nthunder-lock = @(tl)\n", "tl": "no"}, ["--ini", "u.ini"], {}),
    # applied only where the condition holds (TL is not set)
    "logic": ({"u.ini": "[uwsgi]\nif-env = TL\nthunder-lock = 1\nendif =\n"}, ["--ini", "u.ini"], {}),
}


@needs_uwsgi
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_setting_uwsgi_does_not_take_as_written_is_said_not_read(case: str, tmp_path: Path) -> None:
    files, argv, environ = CASES[case]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert not uwsgis_own(tmp_path, argv, environ)  # the witness: off, whatever the text says
    got = reading(tmp_path, argv, environ)
    assert not locked(got) and got.unread and "not followed" in got.unread[0][1], got


def test_a_setting_after_the_logic_ends_is_read(tmp_path: Path) -> None:
    (tmp_path / "u.ini").write_text("[uwsgi]\nif-env = TL\nmaster = 1\nendif =\nthunder-lock = 1\n")
    got = reading(tmp_path, ["--ini", "u.ini"])
    assert locked(got) and not got.unread, got


SET = {
    "set in a file": ({"u.ini": "[uwsgi]\nset = thunder-lock=1\n"}, ["--ini", "u.ini"], {}),
    "-S": ({}, ["-S", "thunder-lock=1"], {}),
    "UWSGI_SET": ({}, [], {"UWSGI_SET": "thunder-lock=1"}),
    "a prefix getopt takes": ({}, ["--thunder"], {}),
}


@needs_uwsgi
@pytest.mark.parametrize("case", sorted(SET))
def test_the_lock_set_another_way_is_read(case: str, tmp_path: Path) -> None:
    files, argv, environ = SET[case]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert uwsgis_own(tmp_path, argv, environ)  # the witness
    got = reading(tmp_path, argv, environ)
    assert locked(got) and not got.unread, got


class _Filtered:
    """libc whose syscall(2) a seccomp filter refuses with `error` (Docker before 20.10: EPERM for openat2)."""

    def __init__(self, error: int) -> None:
        self.syscall = self._Call(error)

    class _Call:
        def __init__(self, error: int) -> None:
            self.error, self.restype = error, None

        def __call__(self, *args: object) -> int:
            ctypes.set_errno(self.error)
            return -1


@pytest.mark.parametrize("error", [errno.ENOSYS, errno.EPERM])
def test_openat2_refused_by_a_filter_falls_back_in_our_own_root_only(
    error: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "u.ini").write_text(ON)
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "u.ini").write_text(ON)
    monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: _Filtered(error))
    ours = Started(("uwsgi",), {}, "/", str(tmp_path), str(tmp_path))
    assert read_regular(ours, "u.ini", None, 100) == ON  # our root, our mounts: a plain open resolves the same
    theirs = Started(("uwsgi",), {}, str(root), "/etc", None)
    assert read_regular(theirs, "u.ini", None, 100) is None  # another root: nothing resolves it as it did


def test_a_json_config_nested_past_pythons_recursion_is_said_not_read(tmp_path: Path) -> None:
    """Python's JSON decoder recurses once a level: a RecursionError out of the reading ended inspect."""
    depth = sys.getrecursionlimit() * 2
    (tmp_path / "u.json").write_text('{"uwsgi": {"thunder-lock": ' + "[" * depth + "]" * depth + "}}")
    got = reading(tmp_path, ["--json", "u.json"])
    assert got.unread == (("u.json", "nested deeper than this reader follows"),), got
