"""core/cgroup_cpu reads a mountinfo as the kernel writes it: a mount point with a space, tab, newline or backslash
is written octal-escaped ('\\040'), and the cgroup's files are found at the path the file system names, not the
escaped one (a container runtime's 'my app' cgroup mount read as '/sys/fs/cgroup/my\\040app' found no cpu.stat, so no
limit and no throttle was said). A throttle too short for its span is not named as the run's cause."""

from __future__ import annotations

import pytest
from conftest import run_cli

from accept_order.core import environment
from accept_order.core.cgroup_cpu import mounts_in, throttle_sentence

MOUNTINFO = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 /my\\040app /sys/fs/cgroup/cpu\\040x\\012y\\134z rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "41 31 0:38 / /sys/fs/cgroup/unified\\011u rw,relatime - cgroup2 cgroup2 rw\n"
    "garbage\n"
)


def test_escaped_mount_points_are_read_as_the_file_system_names_them() -> None:
    assert mounts_in(MOUNTINFO) == {
        "1": ("/my app", "/sys/fs/cgroup/cpu x\ny\\z"),
        "2": ("/", "/sys/fs/cgroup/unified\tu"),
    }


def test_a_throttle_short_for_its_span_is_not_named() -> None:
    # 2 ms of a 10-s run did not hold it: saying 'its CPU limit, not other processes' would clear others who did
    assert throttle_sentence(2.0, 10.0, "cpu.max 150000/100000") == ""
    assert "throttled for 600 ms" in throttle_sentence(600.0, 10.0, "cpu.max 20000/100000")
    assert "throttled for 2 ms" in throttle_sentence(2.0, None, "cpu.max 20000/100000")  # span unknown: as before


def test_only_a_run_whose_report_says_the_throttle_reads_the_cgroup(monkeypatch: pytest.MonkeyPatch) -> None:
    # a plain run's start is not made to walk /proc/self/cgroup and each level's cpu.stat (0.6 ms a reading here)
    # for a figure nothing of its report uses; latency, which says the throttle, reads it before and after
    read: list[int] = []
    monkeypatch.setattr(environment, "cgroup_cpu", lambda: read.append(1))
    done = run_cli(["run", "--mode", "epoll", "-w", "1"])
    assert done.exit_code == 0, done.output
    assert read == []
    done = run_cli(["latency", "--modes", "epoll", "-w", "1", "-n", "50"])
    assert done.exit_code == 0, done.output
    assert read == [1, 1]
