"""core/capabilities.holds read against the kernel's own answer: whether a process holds CAP_SYS_ADMIN and
CAP_SYS_RESOURCE is what the kernel then lets it do (make a network namespace; raise a hard limit again), asked in a
child as this process is, with both dropped by setpriv, and with both dropped from the effective set alone (kept
permitted: CapPrm still has them, CapEff does not). The unit tests of the messages build CapEff from the same bits
they check, so a wrong bit number or the wrong CapXxx line would pass them; it does not pass this."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ASK = r"""
import ctypes, resource, sys
from accept_order.core.capabilities import ADMIN, RESOURCE, holds
from accept_order.core.libc import libc

if sys.argv[1] == "effective":  # capset(2): drop both from the effective set, keep them permitted
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
    assert libc().capget(ctypes.byref(header), data) == 0
    for cap in (ADMIN, RESOURCE):
        data[cap.bit // 32].effective &= ~(1 << cap.bit % 32)
    assert libc().capset(ctypes.byref(header), data) == 0

def raised_again() -> bool:  # a hard limit lowered may be raised again only with CAP_SYS_RESOURCE
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (4096, 4096))
    try:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (4096, 8192))
    except (OSError, ValueError):
        return False
    return True

unshared = libc().unshare(0x40000000) == 0  # CLONE_NEWNET: CAP_SYS_ADMIN, in this child only
print(holds(ADMIN), unshared, holds(RESOURCE), raised_again())
"""
DROPPED = ["setpriv", "--inh-caps=-sys_admin,-sys_resource", "--bounding-set=-sys_admin,-sys_resource"]
HOW = {"as this process is": [], "setpriv dropped both": DROPPED, "effective set only": []}


@pytest.mark.parametrize("how", list(HOW))
def test_held_is_what_the_kernel_allows(how: str) -> None:
    if how != "as this process is" and (os.geteuid() != 0 or not shutil.which("setpriv")):
        pytest.skip("needs root (to drop capabilities it holds) and setpriv (util-linux)")
    argument = "effective" if how == "effective set only" else "-"
    done = subprocess.run([*HOW[how], sys.executable, "-c", ASK, argument], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done
    admin, unshared, resource_, raised = done.stdout.split()
    assert (admin, resource_) == (unshared, raised), done.stdout  # the kernel's word on each
    if how != "as this process is":
        assert admin == resource_ == "False", done.stdout
