"""Each test starts in the network namespace the pytest worker started in.

`reload` moves its own process into a private network namespace (core/netns.enter_private: unshare, for good: the
namespace ends with the process). Run in process (conftest.run_cli), it moved the pytest worker, and every later
test there saw only a fresh loopback: a fresh-clone CI skipped three tests as 'no address but loopback here' on a
machine whose eth0 held 192.0.2.2 (they passed alone), and a test listening for another namespace's clients would
have failed. The worker goes back after each test (setns to the namespace it held at start, a file kept open).

reload also declares its namespace private in its environment (probes/evidence.PRIVATE_ENV=1, for the evidence of
its runs and what it starts). Left in the worker's os.environ, every later test's child inherited it: a fresh-clone
CI's test_target_own_address_no_probe ran 'latency --target' in an `ip netns exec` namespace, where PID 1's
namespace cannot be read here, and its report said 'private ... (declared by ACCEPT_ORDER_PRIVATE_NETNS=1)', not the
shared namespace the test knows it ran in. The variable is put back as it was before each test too."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator

import pytest

from accept_order.core.libc import libc
from accept_order.probes.evidence import PRIVATE_ENV

CLONE_NEWNET = 0x40000000
_started_in = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)


def namespace_inode() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


@pytest.fixture(autouse=True)
def back_in_the_host_namespace() -> Iterator[None]:
    declared = os.environ.get(PRIVATE_ENV)
    yield
    if declared is None:
        os.environ.pop(PRIVATE_ENV, None)
    else:
        os.environ[PRIVATE_ENV] = declared
    if namespace_inode() != os.fstat(_started_in).st_ino and libc().setns(_started_in, CLONE_NEWNET) != 0:
        pytest.fail(f"the test left its worker in another network namespace: {os.strerror(ctypes.get_errno())}")
