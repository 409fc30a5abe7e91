"""The reaper runs as a script of the standard library alone (python -I -S .../core/reaper.py: 0.05 CPU-s a launch
where `-m accept_order.core.reaper` imported the package first, 0.08), and imports shutil only where it has a
directory to remove. When the tool's end of its pipe closes with a directory still open (the tool died), it removes
it: the one path that needs shutil, and which no other test reaches with the reaper's own process."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
from waiting import wait_for

from accept_order.core.reaper import Reaper


def test_a_directory_left_open_is_removed_when_the_tool_is_gone(tmp_path: Path) -> None:
    private = tmp_path / "server-dir"
    (private / "inner").mkdir(parents=True)
    (private / "inner" / "file").write_text("x")
    reaper = Reaper()
    reaper._send(f"dir {private}")
    proc = reaper._proc
    assert proc is not None and proc.stdin is not None
    # Popen returns once exec closed its error pipe, which the kernel does before the new program's argument area
    # is set up (load_elf_binary: begin_new_exec, then create_elf_tables): read early, /proc/PID/cmdline is empty
    # (the fresh-clone CI at load ~10 read [])
    cmdline = wait_for(lambda: psutil.Process(proc.pid).cmdline(), bool, 10, "the reaper's command line")
    assert cmdline[1:3] == ["-I", "-S"] and cmdline[3].endswith(os.path.join("accept_order", "core", "reaper.py"))
    proc.stdin.close()  # as the kernel closes it when the tool dies, with the directory still open
    assert proc.wait(timeout=30) == 0
    assert not private.exists()
