"""Each test starts in the network namespace the pytest worker started in.

`reload` moves its own process into a private network namespace (core/netns.enter_private: unshare, for good: the
namespace ends with the process). Run in process (conftest.run_cli), it moved the pytest worker, and every later
test there saw only a fresh loopback: a fresh-clone CI skipped three tests as 'no address but loopback here' on a
machine whose eth0 held 192.0.2.2 (they passed alone), and a test listening for another namespace's clients would
have failed. The worker goes back after each test (setns to the namespace it held at start, a file kept open)."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator

import pytest

from accept_order.core.libc import libc

CLONE_NEWNET = 0x40000000
_started_in = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)


def namespace_inode() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


@pytest.fixture(autouse=True)
def back_in_the_host_namespace() -> Iterator[None]:
    yield
    if namespace_inode() != os.fstat(_started_in).st_ino and libc().setns(_started_in, CLONE_NEWNET) != 0:
        pytest.fail(f"the test left its worker in another network namespace: {os.strerror(ctypes.get_errno())}")
