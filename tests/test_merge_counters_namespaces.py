"""merge adds two files' kernel counters only where they were read in one network namespace: since 59b27d0 a run at
a server attached in a namespace other than the tool's reads them from /proc/PID/net/netstat (evidence.counters_pid),
and one such file merged with a run read in the tool's namespace read 'ListenDrops +5, ... (host-wide: ...)' or
'(the server's network namespace, read from /proc/4242/net/netstat ...)' by which file came first, for a sum of two
namespaces' counts. Saved files edited here (tests/data/v2/latency.json), as test_merge_counters_of_one_file does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_merge_counters_of_one_file import _file, _merged_counters

MOVED = {"TcpExtListenDrops": 5, "TcpExtListenOverflows": 5}


def _read_in(path: str, pid: int | None, inode: int | None) -> str:
    """The file as if read in an attached server's namespace (`pid`'s; its inode where the tool could see it)."""
    document: dict[str, Any] = json.loads(Path(path).read_text())
    if pid is not None:
        document["evidence"]["counters_pid"] = pid
        document["evidence"]["netns"] = {"inode": inode, "private": False, "why": "the server's processes' namespace"}
    Path(path).write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("attached_first", [False, True])
def test_an_attached_servers_namespace_and_ours_are_not_added(tmp_path: Path, attached_first: bool) -> None:
    ours = _file(tmp_path, "ours.json", 1, counters=MOVED)
    theirs = _read_in(_file(tmp_path, "theirs.json", 2, counters=MOVED), 4242, 4026532206)
    line, evidence = _merged_counters(tmp_path, *((theirs, ours) if attached_first else (ours, theirs)))
    assert "not added for the merged load: read in different network namespaces" in line, line
    assert "counters" not in evidence and "ListenDrops" not in line, line


@pytest.mark.parametrize(("inodes", "added"), [((4026532206, 4026532206), True), ((4026532206, None), False)])
def test_two_attached_runs_add_where_one_namespace(tmp_path: Path, inodes: tuple[int, int | None], added: bool) -> None:
    first = _read_in(_file(tmp_path, "a.json", 1, counters=MOVED), 4242, inodes[0])
    second = _read_in(_file(tmp_path, "b.json", 2, counters=MOVED), 4343, inodes[1])
    line, evidence = _merged_counters(tmp_path, first, second)
    if added:
        assert evidence["counters"] == {"TcpExtListenDrops": 10, "TcpExtListenOverflows": 10}, evidence
        assert "the server's network namespace, read from /proc/4242/net/netstat" in line, line
    else:
        assert "not added for the merged load: read in attached servers' network namespaces not known" in line, line


def test_two_hosts_still_add_each_ones_namespace(tmp_path: Path) -> None:
    """Files from two hosts add each host's count, named (counters_hosts), wherever each was read."""
    ours = _file(tmp_path, "ours.json", 1, hostname="vm", counters=MOVED)
    theirs = _read_in(_file(tmp_path, "theirs.json", 2, hostname="other", counters=MOVED), 4242, 4026532206)
    line, evidence = _merged_counters(tmp_path, ours, theirs)
    assert evidence["counters"] == {"TcpExtListenDrops": 10, "TcpExtListenOverflows": 10}, evidence
    assert "added over 2 hosts'" in line, line
