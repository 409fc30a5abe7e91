"""A review of the room check (cli/room.py, results/room.py): sweep's caps are each a run of the need, as the
command line gives them; and ext4's reserved blocks count as free only to the kernel's root, not to root of a
user namespace (a rootless container), which the kernel refuses them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.cli import room
from accept_order.core.errors import ResultFileError
from accept_order.results import room as results_room


def test_sweep_needs_room_for_each_cap_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def said(path: str, need: int, **kwargs: Any) -> None:
        raise ResultFileError(f"need {need}")  # before the run: nothing is started

    monkeypatch.setattr(room, "check_room", said)
    needs = []
    for caps in ("1", "1,4,32,0"):
        result = run_cli(["sweep", "-n", "20000", "--accept-batch", caps, "--json", str(tmp_path / "s.json")])
        needs.append(int(assert_one_error_line(result, 1, "need ").rsplit(" ", 1)[1]))
    assert needs[1] == 4 * needs[0]


class Statvfs:
    f_bfree, f_bavail, f_frsize = 100, 10, 4096


@pytest.mark.parametrize(
    ("euid", "uid_map", "free"),
    [
        (0, "         0          0 4294967295\n", 100),  # the kernel's root: the reserved blocks are its own
        (0, "         0     100000      65536\n", 10),  # root of a rootless container: uid 100000 to ext4
        (0, "      1000       1000          1\n         0     100000       1000\n", 10),
        (1000, "         0          0 4294967295\n", 10),  # anyone else
    ],
)
def test_reserved_blocks_are_free_only_to_the_kernels_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, euid: int, uid_map: str, free: int
) -> None:
    (tmp_path / "uid_map").write_text(uid_map)
    monkeypatch.setattr(results_room, "UID_MAP", str(tmp_path / "uid_map"))
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    monkeypatch.setattr(os, "statvfs", lambda folder: Statvfs())
    assert results_room.free_bytes(tmp_path) == free * 4096
