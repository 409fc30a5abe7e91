"""A -f directory of more than MAX_FILES (256) files named *.cfg: HAProxy loads every one (in C's order), where the
reading here stopped at 256 and said nothing, so a setting in the 257th or later was missed unsaid. It now says the
directory was not read past its first 256 and leaves the hand-off unknown.

The real case: Debian's HAProxy 2.6 from a directory of 300 files whose last turns tune.listener.multi-queue off.
The witness that HAProxy read that file is the kernel's: each thread's accepts (bpftrace) equal the requests its
replies say it served, as they do only with the hand-off off (skipped where bpftrace cannot count)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from haproxy_by_hand import config, haproxy
from test_inspect_haproxy_multi_queue import accepted_and_served

from accept_order.servers.launched.base import free_port
from accept_order.servers.launched.haproxy_config import FILES_NAMED, handoff_read, read_settings
from accept_order.servers.launched.haproxy_config_files import MAX_FILES


def directory_of(path: Path, files: int, first: str, last: str) -> Path:
    """`files` files named NNN.cfg in `path`: `first` in the first, `last` in the last, a comment in the others."""
    path.mkdir()
    for index in range(files):
        text = first if index == 0 else last if index == files - 1 else "# nothing here\n"
        (path / f"{index:03d}.cfg").write_text(text)
    return path


@pytest.mark.parametrize("files", [MAX_FILES, MAX_FILES + 1])
def test_a_directory_past_the_bound_is_said_not_read_past_it(tmp_path: Path, files: int) -> None:
    """Read as this process's own config (its root, its working directory): up to the bound every file is read and
    the last one's setting taken; one more, and the directory is said not read past the bound (not its last file's
    setting: nothing past the bound is taken)."""
    directory = directory_of(
        tmp_path / "conf.d", files, "global\n    nbthread 4\n", "global\n    tune.listener.multi-queue off\n"
    )
    settings = read_settings(os.getpid(), ["haproxy", "-f", str(directory)])
    if files == MAX_FILES:
        assert settings.unread == () and len(settings.read) == MAX_FILES, settings.unread
        # its files are newer than this process (said changed since), so only the setting is asserted
        assert settings.multi_queue is False and settings.nbthread == 4, settings
        return
    said = f"{files:,} files named *.cfg: those after the first {MAX_FILES:,} not read"
    assert settings.unread == ((str(directory), said),), settings.unread
    assert len(settings.read) == MAX_FILES and settings.multi_queue is None, settings
    read = handoff_read(settings)
    assert read.hands_on is None, read
    # the files read named in short: the first few, the last, how many (all 256 were named, on one line)
    first = ", ".join(f"{directory}/{index:03d}.cfg" for index in range(FILES_NAMED - 2))
    assert read.said.startswith(f"its config ({first}, ..., {directory}/255.cfg: {MAX_FILES} files) "), read.said
    assert f"not read here, so a setting there is not seen: {directory} ({said})" in read.doubts, read.doubts


@pytest.mark.parametrize("subdirectory", ["zz.cfg", "000a.cfg"])
def test_what_haproxy_skips_is_not_counted_against_the_bound(tmp_path: Path, subdirectory: str) -> None:
    """MAX_FILES files and a subdirectory named *.cfg (HAProxy skips what is not a regular file: it loads the
    MAX_FILES): every file is read and nothing is said unread, the subdirectory last in order or among the first
    (where a bound on the names left the last file unread)."""
    directory = directory_of(
        tmp_path / "conf.d", MAX_FILES, "global\n    nbthread 4\n", "global\n    tune.listener.multi-queue off\n"
    )
    (directory / subdirectory).mkdir()
    settings = read_settings(os.getpid(), ["haproxy", "-f", str(directory)])
    assert settings.unread == () and len(settings.read) == MAX_FILES, settings.unread
    assert settings.multi_queue is False and settings.nbthread == 4, settings  # the last file's setting taken


def test_haproxy_runs_a_setting_past_the_bound_and_the_reading_says_it_is_not_known(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    files = MAX_FILES + 44
    directory = directory_of(tmp_path / "conf.d", files, config(port), "global\n    tune.listener.multi-queue off\n")
    with haproxy(directory, port) as process:
        with open(f"/proc/{process.pid}/cmdline", "rb") as f:
            argv = [word.decode() for word in f.read().split(b"\0")[:-1]]
        read = handoff_read(read_settings(process.pid, argv))
        served, accepted = accepted_and_served(process.pid, port)
    # HAProxy ran the 300th file's 'off': the thread that accepted each connection served it
    assert served == accepted, (served, accepted)
    # which the reading, stopped at 256, does not claim to know either way
    assert read.hands_on is None, read
    assert any(f"{directory} ({files:,} files named *.cfg" in doubt for doubt in read.doubts), read.doubts
