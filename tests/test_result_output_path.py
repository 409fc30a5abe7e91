"""accept_order.results.files.check_output_path: where a result may be written (a new or existing regular file in a
folder that takes files), refused in one printable line before anything runs: directories, missing folders,
devices, FIFOs, sockets, symlinks, what cannot be written, /proc."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from result_file_cases import needs_dev, one_line

from accept_order.core.errors import PlanError
from accept_order.results.files import (
    check_output_path,
)


def test_output_path_accepts_new_and_existing_regular_files(tmp_path: Path) -> None:
    new = tmp_path / "new.json"
    assert check_output_path(str(new)) == new
    old = tmp_path / "old.json"
    old.write_text("{}\n")
    assert check_output_path(str(old)) == old
    assert old.read_text() == "{}\n"  # checking does not touch it
    assert not new.exists()


def test_output_path_empty_is_a_usage_error() -> None:
    with pytest.raises(PlanError) as exc:
        check_output_path("")
    assert one_line(exc) == "--json needs a file name"
    assert exc.value.exit_code == 2


@pytest.mark.parametrize("make", ["dir", "trailing-slash", "missing-folder", "file-as-folder"])
def test_output_path_refuses_directories_and_missing_folders(tmp_path: Path, make: str) -> None:
    (tmp_path / "file").write_text("x")
    path, expected = {
        "dir": (str(tmp_path), "is a directory"),
        "trailing-slash": (f"{tmp_path}/out/", "names a directory"),
        "missing-folder": (str(tmp_path / "nope" / "out.json"), "does not exist"),
        "file-as-folder": (str(tmp_path / "file" / "out.json"), "Not a directory"),
    }[make]
    with pytest.raises(PlanError) as exc:
        check_output_path(path)
    assert expected in one_line(exc)


@needs_dev
@pytest.mark.parametrize("device", ["/dev/null", "/dev/full"])
def test_output_path_refuses_device_nodes(device: str) -> None:
    with pytest.raises(PlanError) as exc:
        check_output_path(device)
    assert one_line(exc) == f"--json: {device} is a character device, not a regular file"


def test_output_path_refuses_fifo_and_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(PlanError) as exc:
        check_output_path(str(tmp_path / "fifo"))
    assert "FIFO" in one_line(exc)
    monkeypatch.chdir(tmp_path)  # a short relative name: AF_UNIX paths are limited to ~107 bytes
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock")
        with pytest.raises(PlanError) as exc:
            check_output_path("sock")
    assert one_line(exc) == "--json: sock is a socket, not a regular file"


@pytest.mark.parametrize("dangling", [False, True])
def test_output_path_refuses_symlinks(tmp_path: Path, dangling: bool) -> None:
    real = tmp_path / "real.json"
    if not dangling:
        real.write_text("keep\n")
    (tmp_path / "link.json").symlink_to(real)
    with pytest.raises(PlanError) as exc:
        check_output_path(str(tmp_path / "link.json"))
    assert "is a symbolic link" in one_line(exc)
    assert real.exists() is not dangling


def test_output_path_refuses_what_cannot_be_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.access is faked: as root every chmod-based check would pass.
    target = tmp_path / "out.json"
    target.write_text("{}")
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != target)
    with pytest.raises(PlanError) as exc:
        check_output_path(str(target))
    assert one_line(exc) == f"--json: {target} is not writable"
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != tmp_path)
    with pytest.raises(PlanError) as exc:
        check_output_path(str(tmp_path / "new.json"))
    assert one_line(exc) == f"--json: cannot create files in directory {tmp_path}"


def test_output_path_in_a_folder_that_takes_no_files_is_refused_before_the_run(tmp_path: Path) -> None:
    """/proc passes every permission check as root, yet takes no new file: a run would have measured for
    nothing and then failed to save. The check makes (and removes) the temporary file the write will make."""
    with pytest.raises(PlanError) as exc:
        check_output_path("/proc/accept-order-result.json")
    assert one_line(exc).startswith("--json: cannot create files in directory /proc"), one_line(exc)
    assert check_output_path(str(tmp_path / "out.json")) == tmp_path / "out.json"
    assert list(tmp_path.iterdir()) == []  # the probe file is gone


def test_a_run_into_proc_is_refused_before_any_worker_starts() -> None:
    from conftest import assert_one_error_line, run_cli

    result = run_cli(["run", "--mode", "epoll", "--json", "/proc/accept-order-result.json"])
    assert_one_error_line(result, 2, "cannot create files in directory /proc")
    assert "Sequence" not in result.output
