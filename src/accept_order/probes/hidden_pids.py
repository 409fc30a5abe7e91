"""A pid that /proc does not show: gone, or hidden from this user. A shared host may mount /proc with
hidepid (Linux 5.8+: per mount), which shows a user only its own processes: another user's nginx is then
absent from /proc, and 'no process PID' said of it would be false. kill(PID, 0) is the kernel's own answer
to whether the process exists (ESRCH: none; EPERM: another user's, which exists), whatever /proc shows."""

from __future__ import annotations

import os

from ..core.capabilities import what_would_let_it

MOUNTINFO = "/proc/self/mountinfo"


def _proc_options(mountinfo: str) -> list[str]:
    """The superblock options of the mount on /proc ('rw', 'hidepid=invisible', 'gid=27'); of several mounts on
    /proc the last is the one on top, the one read. [] where mountinfo cannot be read."""
    try:
        with open(mountinfo) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    options: list[str] = []
    for line in lines:
        mount, _, fs = line.partition(" - ")
        fields, fs_fields = mount.split(), fs.split()
        if len(fields) < 5 or fields[4] != "/proc" or len(fs_fields) < 3 or fs_fields[0] != "proc":
            continue
        options = fs_fields[2].split(",")
    return options


def _option(options: list[str], name: str) -> str | None:
    return next((o.partition("=")[2] for o in options if o.startswith(f"{name}=")), None)


def hidepid(mountinfo: str = MOUNTINFO) -> str | None:
    """/proc's hidepid option as mountinfo shows it ('invisible', 'noaccess', 'ptraceable'; the digits of
    older kernels), None where /proc shows every process or its mount cannot be read."""
    option = _option(_proc_options(mountinfo), "hidepid")
    return None if option in (None, "0", "off") else option


def _exempt_group(mountinfo: str) -> str:
    """', or as a member of group adm (/proc's gid=4)' where /proc names a group that sees every process; '' where
    it names none (the line said 'a member of the group /proc's gid= option names' of a mount with no gid=)."""
    gid = _option(_proc_options(mountinfo), "gid")
    if gid is None:
        return ""
    import grp

    try:
        name = grp.getgrgid(int(gid)).gr_name
    except (KeyError, ValueError):
        return f", or as a member of group {gid} (/proc's gid=)"
    return f", or as a member of group {name} (/proc's gid={gid})"


def unseen(pid: int, mountinfo: str = MOUNTINFO) -> str:
    """What to say of a pid whose /proc entry could not be read: 'no process PID' only where the kernel
    says none exists; else that /proc hides it from this user, and what would show it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"no process {pid}"
    except PermissionError:
        pass  # it exists: another user's
    hidden = hidepid(mountinfo)
    if hidden is None:
        return f"pid {pid} runs, but /proc does not show it to this process (another PID namespace's /proc?)"
    return (
        f"pid {pid} runs, but /proc is mounted hidepid={hidden}, which hides other users' processes from this "
        f"one ({what_would_let_it(or_as='its user')}{_exempt_group(mountinfo)})"
    )
