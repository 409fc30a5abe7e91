"""What runs on a client host (or the server's host, for --observe-on): execnet sends this module's source
over ssh and runs it there with a `channel` back to the coordinator (`__name__ == "__channelexec__"`). It
runs as the remote interpreter's first task, so in its main thread; a later load on a host kept between
loads (gateways.Gateways.keep) may run in another of execnet's threads, where the tool's signal holding is
a no-op (core/signals.py): stops come over the channel, not as signals.

It says hello (accept-order's version there, for the coordinator to check: the rest is pickled between two
copies of the same code), then takes the part it is asked for: a module of the installed accept-order
with a `take_part(channel)` (loads/hosts/load_side.py drives a load; experiments/observe/remote_side.py
observes a server), named by the coordinator so that this bootstrap imports nothing of the package. Beside it, once
the hello is checked, the coordinator starts beats.watch over the same connection, which ends this interpreter when
the coordinator falls silent (its connection cut), between the run's loads too.

    host -> ("hello", version, python, hostname, pid, boot_id, sources)
            (or ("missing", why, python), or ("old", its version "3.10.13", python) under MIN_PYTHON)

boot_id is the host's kernel's (/proc/sys/kernel/random/boot_id; "" unread): a client host that shares this
machine's kernel (a network namespace, a container, localhost) shares its CPUs and its /proc/stat. sources: a
digest of each of the installed package's folders the coordinator compares (DIGESTED, sources_digests): a
development install can hold other code under the same version string, and a class pickled across the difference
(ReplyAttribution, LoadResult, ...) fails late, far from why (an AttributeError in the middle of a load); the
coordinator compares the folders its part needs and refuses at the hello instead.
    coordinator -> ("part", module name)     within PART_WAIT_S, else the interpreter ends
"""

from __future__ import annotations

import hashlib
import importlib
import os
import socket
import sys
from typing import Any

CLOSED = "closed"  # what a channel's callback gets when the channel ends (execnet's endmarker)
# The folders the hello digests: those the coordinator compares (gateways.unlike_sources): core/ and loads/ (the
# classes pickled between the two copies), loads/hosts/ and each part's own folder. These alone, on every hello (each
# load step of a kept host too): 75 of the package's 332 files, 0.5 of its 2 MB of sources (every folder took 70-200
# ms a hello on a busy 2-vCPU machine).
DIGESTED = ("core", "loads", "loads/hosts", "experiments/observe")
# pyproject's requires-python, here because this module imports nothing of the package: a host's older Python
# (execnet runs on 3.8 up) is named with its version, where the import's "No module named" would send its user to
# install there what pip refuses to install for it
MIN_PYTHON = (3, 11)
# The coordinator answers a hello at once (its checks take milliseconds), and beats from then on (beats.COORDINATOR_
# SILENT_S): a host that hears nothing for as long is left behind by a coordinator gone with the way to it cut
PART_WAIT_S = 10.0


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def sources_digests(package: str, folders: tuple[str, ...] | None = None) -> dict[str, str]:
    """Each folder of the package at `package` ('core', 'loads/hosts'; '' the package's own), or of `folders`, with
    a digest of the Python sources directly in it: their names and bytes, in name order. A folder without sources (an
    install of bytecode alone) is left out: nothing to compare."""
    if folders is None:
        found = []
        for here, inside, _ in os.walk(package):
            inside[:] = sorted(f for f in inside if f != "__pycache__")
            found.append(os.path.relpath(here, package).replace(os.sep, "/").removeprefix("."))
        folders = tuple(found)
    digests = {}
    for folder in folders:
        here = os.path.join(package, folder)
        try:
            names = sorted(f for f in os.listdir(here) if f.endswith(".py"))
        except OSError:
            continue
        digest = hashlib.sha256()
        for name in names:
            try:
                with open(os.path.join(here, name), "rb") as source:
                    data = source.read()
            except OSError:
                data = b"(unreadable)"
            digest.update(b"%s\0%d\0%s" % (name.encode(), len(data), data))
        if names:
            digests[folder] = digest.hexdigest()
    return digests


def _hello(channel: Any) -> bool:
    if sys.version_info < MIN_PYTHON:
        channel.send(("old", ".".join(map(str, sys.version_info[:3])), sys.executable))
        return False
    try:
        # the package's face, not core.version: __version__ there is what every release has, so another
        # version on the host is named (test_clients_faults' 0.0.1) instead of failing to import
        import accept_order
    except ImportError as exc:
        channel.send(("missing", str(exc), sys.executable))
        return False
    sources = sources_digests(os.path.dirname(os.path.abspath(accept_order.__file__ or "")), DIGESTED)
    channel.send(
        ("hello", accept_order.__version__, sys.executable, socket.gethostname(), os.getpid(), _boot_id(), sources)
    )
    return True


def _part(channel: Any) -> Any:
    """The coordinator's answer to the hello; none within PART_WAIT_S ends this interpreter: the coordinator went
    before it started the beats this host would hear (loads/hosts/beats.py: from the hello checked on)."""
    try:
        return channel.receive(timeout=PART_WAIT_S)
    except channel.TimeoutError:
        os._exit(0)


if __name__ == "__channelexec__":
    if _hello(channel):  # type: ignore[name-defined]  # noqa: F821 - execnet's global
        message = _part(channel)  # type: ignore[name-defined]  # noqa: F821
        if message[0] == "part":
            try:
                importlib.import_module(str(message[1])).take_part(channel)  # type: ignore[name-defined]  # noqa: F821
            except OSError:
                pass  # the channel went away: the coordinator is gone, nothing to tell
