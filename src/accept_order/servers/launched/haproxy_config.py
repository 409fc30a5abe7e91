"""What a running HAProxy's config says of how its threads share a listener: `tune.listener.multi-queue` and
`nbthread` in its global section, which /proc does not show, read from the files its command line names
(haproxy_config_files.py finds and reads them as the process saw them, haproxy_config_text.py reads their words),
and said for inspect (why_said) and observe (handoff_read) with what the reading could not settle (doubts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ...core.handoff import HandOffRead
from ...core.text import escape_controls
from .haproxy_config_files import changed_since, config_files, newest_start, wheres_of
from .haproxy_config_text import MULTI_QUEUE, NBTHREAD, config_names, global_settings

FILES_NAMED = 6  # a line names this many files read at most (a directory of 256 named them all, on one line)


class Settings(NamedTuple):
    """What the config said: multi_queue True/False, None where no file said it (HAProxy's default: on);
    nbthread, None where none said it; `read`: the files read; `unread`: (file, why) of those that were not;
    `unknown`: (keyword, why) of a setting found but not decided here (a .if block, a variable not there);
    `changed`: the files and -f directories changed after the newest of its processes started."""

    multi_queue: bool | None
    nbthread: int | None
    read: tuple[str, ...]
    unread: tuple[tuple[str, str], ...]
    unknown: tuple[tuple[str, str], ...] = ()
    changed: tuple[str, ...] = ()


def read_settings(pid: int, argv: Sequence[str]) -> Settings:
    """HAProxy's multi-queue and nbthread as the config files of `argv` (process `pid`'s command line) set them:
    read in its own root, or in its parent's where its own cannot give them (a chroot entered since)."""
    wheres = wheres_of(pid, argv)
    names, chdir = config_names(argv)
    found: dict[str, str] = {}
    unknown: dict[str, str] = {}
    read: list[str] = []
    unread: list[tuple[str, str]] = []
    for name, text, why in config_files(wheres, names, chdir):
        if text is None:
            unread.append((name, why))
            continue
        read.append(name)
        settings, undecided = global_settings(text, wheres[0].environ)
        for key in settings:
            unknown.pop(key, None)
        found.update(settings)
        unknown.update(undecided)
    multi_queue = found.get(MULTI_QUEUE)
    threads = found.get(NBTHREAD, "")
    return Settings(
        None if multi_queue is None else multi_queue != "off",
        int(threads) if threads.isdigit() else None,
        tuple(read),
        tuple(unread),
        tuple(unknown.items()),
        changed_since(wheres, [*names, *(name for name in read if name not in names)], chdir, newest_start(pid)),
    )


def files_said(read: Sequence[str]) -> str:
    """The files read, as a line names them: each escaped (names as HAProxy was given them: any bytes), and past
    FILES_NAMED of them (a -f directory's, up to MAX_FILES) the first few, the last, and how many in all."""
    names = [escape_controls(name) for name in read]
    if len(names) <= FILES_NAMED:
        return ", ".join(names)
    return f"{', '.join(names[: FILES_NAMED - 2])}, ..., {names[-1]}: {len(names):,} files"


def why_said(why: str, settings: Settings) -> str:
    """The threads mode's `why` (a herd on one listener; then multi-queue's handing on) as the config read says it:
    the handing on left out where it turns multi-queue off or runs one thread and that is known to be what it runs
    (observe's handoff_read), HAProxy's defaults where no file could be read; a file not read or changed said."""
    herd = why.split("; ", 1)[0]
    files = files_said(settings.read)
    if not settings.read:
        unread = ", ".join(f"{escape_controls(name)} ({reason})" for name, reason in settings.unread)
        return f"{why} (HAProxy's defaults: its config could not be read here: {unread or 'none was named'})"
    if (settings.nbthread == 1 or settings.multi_queue is False) and (read := handoff_read(settings)).hands_on is None:
        said = f"{why} (unless it runs what was read: {read.said}, which would hand none on)"
    elif settings.nbthread == 1:
        said = f"{herd}; its config ({files}) sets nbthread 1: one thread accepts and serves every connection"
    elif settings.multi_queue is False:
        said = (
            f"{herd}; its config ({files}) turns {MULTI_QUEUE} off, so the thread that accepts a connection serves "
            "it: none is handed on"
        )
    else:
        how = "turns it on" if settings.multi_queue else "leaves it at HAProxy's default, on"
        threads = f", sets nbthread {settings.nbthread}" if settings.nbthread else ""
        said = f"{why} (its config, {files}{threads}, {how})"
    return "; ".join([said, *doubts(settings)])


def doubts(settings: Settings) -> list[str]:
    """What the reading could not settle, a clause each: a setting not decided, a file not read, a file changed
    after the newest of its processes started."""
    said = []
    for key, reason in settings.unknown:
        before = settings.multi_queue if key == MULTI_QUEUE else settings.nbthread
        # what was said is the setting before this one where there is one, not HAProxy's default
        taken = "HAProxy's default" if before is None else "the one before it, which this may override"
        said.append(f"its {key} {reason}: taken as {taken}")
    if settings.read and settings.unread:
        unread = ", ".join(f"{escape_controls(name)} ({reason})" for name, reason in settings.unread)
        said.append(f"not read here, so a setting there is not seen: {unread}")
    if settings.changed:
        said.append(
            f"changed after the newest of its processes started, so what it runs may differ until it is reloaded: "
            f"{', '.join(map(escape_controls, settings.changed))}"
        )
    return said


def handoff_read(settings: Settings) -> HandOffRead:
    """What the config read says of handing on (observe's verdict): off where it turns multi-queue off or runs one
    thread, on where it leaves it on, not known where a file could not be read, one was changed after it started, or
    the setting the answer rests on is not decided here (a .if block, a variable not given)."""
    files = files_said(settings.read)
    if not settings.read:
        unread = ", ".join(f"{escape_controls(n)} ({why})" for n, why in settings.unread) or "none was named"
        return HandOffRead(None, f"its config could not be read here: {unread}", tuple(doubts(settings)))
    rests_on = NBTHREAD if settings.nbthread == 1 else MULTI_QUEUE
    if settings.nbthread == 1:
        said, on = f"its config ({files}) sets nbthread 1: one thread accepts and serves every connection", False
    elif settings.multi_queue is False:
        said, on = f"its config ({files}) turns {MULTI_QUEUE} off", False
    else:
        how = f"turns {MULTI_QUEUE} on" if settings.multi_queue else f"leaves {MULTI_QUEUE} at HAProxy's default, on"
        said, on = f"its config ({files}) {how}", True
    # not known to be what it runs where a file changed since the start (nbthread 4, multi-queue on, its file then
    # turning it off: accepted 53/4/21/22 of 100, served 25/26/25/24 by its replies), where a .if block (turning it on
    # after 'off', its condition true: 13/24/27/36, served 24/26/28/22) or a file not read (-f b.cfg turning it on
    # after a.cfg's 'off', then deleted: 29/12/27/32, served 22/25/28/25) may override what was read
    settled = not (settings.changed or settings.unread) and all(key != rests_on for key, _ in settings.unknown)
    return HandOffRead(on if settled else None, said, tuple(doubts(settings)))
