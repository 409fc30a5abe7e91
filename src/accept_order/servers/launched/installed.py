"""Where a server's program is installed: on the user's PATH, or in /usr/sbin, where Debian puts nginx, HAProxy,
apache2 and lighttpd and which the PATH of a user other than root leaves out ('run --server haproxy' as such a
user said 'haproxy is not installed here' with /usr/sbin/haproxy there)."""

from __future__ import annotations

import os
import shutil

SBIN = "/usr/sbin"


def installed(program: str) -> str | None:
    """The program's path, or None where it is on neither the PATH nor in /usr/sbin."""
    sbin = os.path.join(SBIN, program)
    return shutil.which(program) or (sbin if os.access(sbin, os.X_OK) else None)
