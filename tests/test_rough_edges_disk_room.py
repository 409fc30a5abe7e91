"""A filesystem without room for the result is said before the run, not after it: the output-path check writes
an empty file, which still fits on a full disk, so a long run used to end with "No space left on device" after
its measuring. The need is estimated from what the command will record (cli/room.py); the write after the run
still says a short write as before, should the space go meanwhile."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order import api
from accept_order.cli import room
from accept_order.results.room import size_text


def test_the_need_follows_what_the_command_records() -> None:
    one = room.result_need("run", {"connections": 1000})
    assert room.result_need("run", {"connections": 10_000}) > 5 * one
    assert room.result_need("compare", {"connections": 1000, "modes": ["blocking", "epoll"]}) == 2 * one
    assert room.result_need("compare", {"connections": 1000, "modes": ["blocking"], "repeat": 3}) == 3 * one
    every = room.result_need("herd", {"connections": 1000, "modes": ["all"]})
    assert every >= 10 * room.result_need("herd", {"connections": 1000, "modes": ["epoll"]})  # builtin has 10+
    # A latency histogram keeps a count per distinct microsecond: ten million connections are not 10^7 values.
    assert room.result_need("latency", {}) == room.result_need("latency", {"connections": 100_000})
    assert room.result_need("latency", {"connections": 10**7}) < 10 * 2**20
    open_loop = room.result_need("latency", {"duration_s": 10.0, "rate": 5000})  # rate x duration connections
    assert open_loop > room.result_need("latency", {"duration_s": 1.0, "rate": 50})
    # A closed loop for a time: as many as the server answers, bounded by the histogram's distinct values (a 2 s
    # closed loop here wrote 339 KB; counted as nothing, a long run was let start on a disk it would not fit)
    closed = room.result_need("latency", {"duration_s": 2.0})
    assert closed >= 339_000 and room.result_need("latency", {"duration_s": 3600.0}) < 10 * 2**20
    assert room.result_need("inspect", {}) == room.PER_RUN
    two_servers = room.result_need("latency", {"connections": 1000, "server": ["builtin", "nginx"]})
    assert two_servers == 2 * room.result_need("latency", {"connections": 1000})


def test_sizes_read_as_people_read_them() -> None:
    assert [size_text(n) for n in (0, 1023, 1024, 65536, 5 * 2**20 // 2, 3 * 2**30)] == [
        "0 bytes",
        "1023 bytes",
        "1 KiB",
        "64 KiB",
        "2.5 MiB",
        "3.0 GiB",
    ]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs of the test's own (root only: mount needs it)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_a_run_whose_result_cannot_fit_is_refused_before_it_starts(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run started")

    monkeypatch.setattr(api, "sequential", no_run)
    target = small_disk / "run.json"
    result = run_cli(["run", "-n", "3000", "--json", str(target)])
    line = assert_one_error_line(result, 1, "--json: 64 KiB free on the filesystem of", "could need about 609 KiB")
    assert str(small_disk) in line and not target.exists() and not os.listdir(small_disk)
    picture = run_cli(
        ["plot", str(Path(__file__).parent / "data" / "golden" / "latency.json"), "-o", str(small_disk / "p.png")]
    )
    assert_one_error_line(picture, 1, "--output: 64 KiB free", "the picture could need about 128 KiB")


def test_a_result_that_fits_is_written(small_disk: Path) -> None:
    target = small_disk / "run.json"
    result = run_cli(["run", "-n", "6", "--json", str(target)])
    assert result.exit_code == 0, result.output
    assert target.stat().st_size > 0


def test_a_short_write_after_the_run_is_still_said(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The space goes after the check (here: the estimate let through a result bigger than the room left).
    monkeypatch.setattr(room, "PER_RUN", 0)
    monkeypatch.setattr(room, "result_need", lambda command, options: 0)
    (small_disk / "others").write_bytes(b"x" * 60 * 1024)
    target = small_disk / "run.json"
    result = run_cli(["run", "-n", "100", "--json", str(target)])
    assert_one_error_line(result, 1, f"cannot write {target}: No space left on device")
    assert "served" in result.stdout or result.stdout  # the report is printed all the same
    assert sorted(os.listdir(small_disk)) == ["others"]  # no half file, no temporary file
