"""Whose a file the user may not write is, and whether they may remove it: what to say in place of a bare 'is
not writable' ('sudo accept-order observe ... --json ~/observe.json' leaves the file root's)."""

from __future__ import annotations

import os
import pwd
import stat


def whose(path: str, st: os.stat_result) -> str:
    """Why a file is not the user's to replace, where another user owns it: a run through sudo left it root's."""
    if st.st_uid == os.geteuid():
        return ""
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = f"uid {st.st_uid}"
    made_by = " (a run through sudo writes its files as root)" if st.st_uid == 0 else ""
    if removable(path, st):
        return f": it belongs to {owner}{made_by}; remove it or give another name"
    # in /tmp (sticky) 'remove it' read 'rm: cannot remove ...: Operation not permitted'
    return f": it belongs to {owner}{made_by}; give another name (its folder does not let you remove it)"


def removable(path: str, st: os.stat_result) -> bool:
    """Whether this user may remove the file: its folder writable to them and, where the folder is sticky (/tmp),
    the file or the folder theirs."""
    folder = os.path.dirname(path) or "."
    try:
        folder_st = os.stat(folder)
    except OSError:
        return False
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    uid = os.geteuid()
    return not folder_st.st_mode & stat.S_ISVTX or uid in (0, st.st_uid, folder_st.st_uid)
