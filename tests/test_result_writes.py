"""accept_order.results.files.write_document: a result written whole or not at all (a temp file of its own, renamed
over the target), with the umask's mode; a full disk, a size limit, a failed create or an interrupt keeps the old
file and leaves no temp; device, FIFO, symlink and directory targets, and values JSON cannot hold, are refused."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from result_file_cases import DOC, entries, needs_dev, one_line

from accept_order.core.errors import ResultFileError
from accept_order.results.files import (
    check_schema,
    read_document,
    write_document,
)


def test_write_round_trips_with_indent_one_and_newline(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_document(str(target), DOC)
    assert target.read_text() == json.dumps(DOC, indent=1) + "\n"
    assert read_document(target) == DOC
    assert check_schema(read_document(target), str(target), newest=1) == ("run", 1)
    assert entries(tmp_path) == ["out.json"]


def test_write_replaces_an_existing_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old\n")
    before = target.stat().st_ino
    write_document(target, DOC)
    assert json.loads(target.read_text()) == DOC
    assert target.stat().st_ino != before  # a new file renamed into place, not rewritten in place
    assert entries(tmp_path) == ["out.json"]


def test_write_does_not_use_a_fixed_tmp_name(tmp_path: Path) -> None:
    # The old save() wrote "NAME.tmp": a symlink planted there redirected the write to any file.
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "out.json.tmp").symlink_to(victim)
    write_document(tmp_path / "out.json", DOC)
    assert victim.read_text() == "precious\n"
    assert json.loads((tmp_path / "out.json").read_text()) == DOC


def test_write_gives_the_file_the_umask_mode_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_document(tmp_path / "out.json", DOC)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == 0o640


def test_write_handles_a_255_byte_file_name(tmp_path: Path) -> None:
    target = tmp_path / ("r" * 250 + ".json")
    write_document(target, DOC)
    assert read_document(target) == DOC
    assert entries(tmp_path) == [target.name]


def test_write_enospc_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.json"
    target.write_text("old\n")
    real_write = os.write
    calls = []

    def fill_up(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) == 1:
            return real_write(fd, bytes(data)[:10])  # a partial write first, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(os, "write", fill_up)
        with pytest.raises(ResultFileError) as exc:
            write_document(target, DOC)
    assert one_line(exc) == f"cannot write {target}: No space left on device"
    assert exc.value.exit_code == 1
    assert len(calls) == 2
    assert target.read_text() == "old\n"
    assert entries(tmp_path) == ["out.json"]


def test_write_real_kernel_failure_file_size_limit(tmp_path: Path) -> None:
    # A real failing write without root or a full disk: RLIMIT_FSIZE makes write() fail with EFBIG.
    script = textwrap.dedent(f"""
        import resource, signal, sys
        sys.path[:0] = {sys.path!r}
        from accept_order.core.errors import ResultFileError
        from accept_order.results.files import write_document
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        try:
            write_document(sys.argv[1], {{"x": "y" * 100000}})
        except ResultFileError as exc:
            print(exc)
    """)
    target = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60)
    assert done.stderr == ""
    assert done.stdout == f"cannot write {target}: File too large\n"
    assert entries(tmp_path) == []


def test_write_failing_to_create_the_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(**kwargs: Any) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr("tempfile.mkstemp", read_only)
    with pytest.raises(ResultFileError) as exc:
        write_document(tmp_path / "out.json", DOC)
    assert one_line(exc) == f"cannot write {tmp_path / 'out.json'}: Read-only file system"


def test_write_into_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError) as exc:
        write_document(tmp_path / "gone" / "out.json", DOC)
    assert one_line(exc).endswith(": No such file or directory")


def test_write_interrupted_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(fd: int, data: bytes) -> int:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(os, "write", interrupted)
        with pytest.raises(KeyboardInterrupt):
            write_document(tmp_path / "out.json", DOC)
    assert entries(tmp_path) == []


@needs_dev
def test_write_refuses_device_targets_without_touching_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    real_mkstemp = tempfile.mkstemp
    monkeypatch.setattr(tempfile, "mkstemp", lambda **kw: made.append(kw) or real_mkstemp(**kw))
    before = set(os.listdir("/dev"))
    for device in ("/dev/full", "/dev/null"):
        with pytest.raises(ResultFileError) as exc:
            write_document(device, DOC)
        assert one_line(exc) == f"will not replace {device}: it is a character device, not a regular file"
        assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert made == []  # refused before any temporary file was made in /dev
    assert set(os.listdir("/dev")) == before


def test_write_refuses_fifo_symlink_and_directory_targets(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    real = tmp_path / "real"
    real.write_text("keep\n")
    (tmp_path / "link").symlink_to(real)
    (tmp_path / "dir").mkdir()
    for name, kind in (("fifo", "a FIFO"), ("link", "a symbolic link"), ("dir", "a directory")):
        with pytest.raises(ResultFileError) as exc:
            write_document(tmp_path / name, DOC)
        assert f"it is {kind}" in one_line(exc)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert (tmp_path / "link").is_symlink() and real.read_text() == "keep\n"
    assert entries(tmp_path) == ["dir", "fifo", "link", "real"]


def test_write_rechecks_the_target_right_before_replacing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, other = tmp_path / "out.json", tmp_path / "other"
    other.write_text("keep\n")
    real_write = os.write

    def write_then_swap(fd: int, data: bytes) -> int:
        written = real_write(fd, data)
        if not target.is_symlink():
            target.symlink_to(other)  # someone plants a symlink while the result is being written
        return written

    with monkeypatch.context() as m:
        m.setattr(os, "write", write_then_swap)
        with pytest.raises(ResultFileError) as exc:
            write_document(target, DOC)
    assert "it is a symbolic link" in one_line(exc)
    assert target.is_symlink() and other.read_text() == "keep\n"
    assert entries(tmp_path) == ["other", "out.json"]


def test_write_refuses_nan_and_unserialisable_values(tmp_path: Path) -> None:
    for bad in ({"x": float("nan")}, {"x": float("inf")}, {"x": object()}):
        with pytest.raises(ResultFileError) as exc:
            write_document(tmp_path / "out.json", bad)
        assert "is not valid JSON" in one_line(exc)
    assert entries(tmp_path) == []
