"""Where a running HAProxy's config files are and their text, as the process saw them when it read them.

A `-f DIRECTORY` adds the directory's regular, non-hidden files named `*.cfg`, in C's order (haproxy.c's
scandir(..., alphasort)); `-C DIR` changes directory before they are loaded, so relative names are taken from there.
Each is read as the process sees it (probes/process_files.py: in its own root and mount namespace), and, where it is
chrooted (Debian's config has `chroot /var/lib/haproxy`, entered after the config was read), in its parent's (for a
daemon, -D, the root its mount namespace has: absolute names only). A file changed after the newest of its processes
started may not be what it runs (edited, not reloaded): `changed_since` finds those.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...probes.process_files import (
    Started,
    TooLarge,
    directory_names,
    modified_at,
    read_regular,
    started,
    why_unread,
)

if TYPE_CHECKING:
    import psutil

MAX_CONFIG_BYTES = 4 << 20  # a config larger than this is not read (and said so)
MAX_FILES = 256  # files of a -f directory read at most (a directory with more is said not read past them)
# A file changed this long after the newest process started is said changed since: the start is the kernel's (in
# clock ticks since boot, 10 ms) read against /proc/uptime (10 ms), so one written just before may read just after
START_SLACK_S = 0.1
INIT = 1  # the parent of a daemon (-D) that forked and left it


def parent_of(pid: int) -> int | None:
    """Process `pid`'s parent (/proc/PID/stat's fourth field); None where it is gone, or has none here."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            ppid = int(f.read().rpartition(b")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return ppid if ppid > 0 else None


def _root_left(pid: int, parent: int, argv: Sequence[str]) -> Started:
    """Where a chrooted HAProxy's config paths lead in the root it left (it chroots after reading them): its parent's
    root, where the parent started it. A daemon (-D) was handed to init, which did not: there the root of its mount
    namespace, ours where it shares it (init's /proc/1/root may be closed even to root: this machine's is), else
    init's; and no working directory, since init's says nothing of the one it had (a relative name is not resolved:
    a file of that name there would be another config)."""
    if parent != INIT:
        return started(parent, argv)
    try:
        ours = os.readlink("/proc/self/root") == "/"
        shared = ours and os.stat(f"/proc/{pid}/ns/mnt").st_ino == os.stat("/proc/self/ns/mnt").st_ino
    except OSError:
        shared = False
    return Started(tuple(argv), None, "/") if shared else started(INIT, argv)._replace(cwd=None, cwd_link=None)


def wheres_of(pid: int, argv: Sequence[str]) -> list[Started]:
    """Where process `pid`'s config paths lead: its own root, then its parent's where it has one (a chroot entered
    since it read them)."""
    parent = parent_of(pid)
    return [started(pid, argv)] + ([_root_left(pid, parent, argv)] if parent else [])


def changed_since(wheres: list[Started], names: list[str], chdir: str | None, since: float | None) -> tuple[str, ...]:
    """Those of `names` (files, -f directories: a file added or renamed in) changed after `since` (wall clock)."""
    if since is None:
        return ()
    changed = []
    for name in names:
        mtime = next((m for w in wheres if (m := modified_at(w, name, _start(w, chdir))) is not None), None)
        if mtime is not None and mtime > since + START_SLACK_S:
            changed.append(name)
    return tuple(changed)


def newest_start(pid: int) -> float | None:
    """When the newest of `pid` and its descendants of its own name started, on the wall clock: each HAProxy process
    read its config when it started (a master-worker's reload starts new workers, its master keeps its start time
    across the re-exec). Not the others: a `program` section's, or an external check's, which HAProxy starts
    whenever it checks (every `inter`), config or not. None where /proc does not say."""
    import psutil  # here: the module is read only where inspect reads a config

    try:
        top = psutil.Process(pid)
        family = [pid, *(c.pid for c in top.children(recursive=True) if _named(c, top.name()))]
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError, psutil.Error):
        return None
    ticks = [t for t in map(_start_ticks, family) if t is not None]
    if not ticks:
        return None
    return time.time() - (uptime - max(ticks) / os.sysconf("SC_CLK_TCK"))


def _named(process: psutil.Process, name: str) -> bool:
    """Whether `process` is still there and named `name` (a fork of HAProxy's that did not exec another program)."""
    import psutil

    try:
        return bool(process.name() == name)
    except psutil.Error:
        return False


def _start_ticks(pid: int) -> int | None:
    """/proc/PID/stat's starttime (field 22): clock ticks after boot; None where it has gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rpartition(b")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def config_files(wheres: list[Started], names: list[str], chdir: str | None) -> list[tuple[str, str | None, str]]:
    """(name, text or None, why not) for each config file HAProxy loaded, a -f directory's in its order. A directory
    with more than MAX_FILES regular files named *.cfg has its first MAX_FILES read and itself said unread after them:
    HAProxy loads every one (300 files, the last with a syntax error: 'haproxy -c' failed on it), and a setting in one
    past the bound would be missed unsaid. What HAProxy skips (not a regular file) is not counted: 256 files and a
    subdirectory named zz.cfg were said not read past 256, all of them read."""
    out: list[tuple[str, str | None, str]] = []
    for name in names:
        listed = _listing(wheres, name, chdir)
        if listed is None:
            out.append((name, *_text(wheres, name, chdir)))
            continue
        named = [f for f in listed if f.endswith(".cfg") and not f.startswith(".")]
        taken = 0
        for file in named:
            path = os.path.join(name, file)
            text, why = _text(wheres, path, chdir)
            if text is None and why == "not a regular file":
                continue  # HAProxy skips it: not one of the files the bound counts
            if taken == MAX_FILES:  # one more that HAProxy loads (a subdirectory named x.cfg is not)
                out.append(
                    (name, None, f"{len(named):,} files named *.cfg: those after the first {MAX_FILES:,} not read")
                )
                break
            out.append((path, text, why))
            taken += 1
    return out


def _start(where: Started, chdir: str | None) -> str | None:
    """Where HAProxy took relative config names from: -C's directory (from its working directory), else None
    (its working directory)."""
    if chdir is None or os.path.isabs(chdir):
        return chdir
    return os.path.join(where.cwd, chdir) if where.cwd is not None else None


def _listing(wheres: list[Started], name: str, chdir: str | None) -> list[str] | None:
    """The names in directory `name` from the first root where it is one; None where it is none (a file)."""
    for where in wheres:
        found = directory_names(where, name, _start(where, chdir))
        if found is not None:
            return found
    return None


def _text(wheres: list[Started], name: str, chdir: str | None) -> tuple[str | None, str]:
    """The file's text from the first root that gives it, or None and why the process's own did not."""
    for where in wheres:
        try:
            text = read_regular(where, name, _start(where, chdir), MAX_CONFIG_BYTES)
        except TooLarge as size:
            return None, f"{size}: larger than a config read here"
        if text is not None:
            return text, ""
    return None, why_unread(wheres[0], name, _start(wheres[0], chdir))
