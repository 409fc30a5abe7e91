"""What a running HAProxy's config says of how its threads share a listener: `tune.listener.multi-queue` and
`nbthread` in its global section, read from the files its command line names, which /proc does not show.

HAProxy loads every `-f FILE` in order, and every argument after `--`; a `-f DIRECTORY` adds the directory's
regular, non-hidden files named `*.cfg`, in C's order (its haproxy.c). `-C DIR` changes directory before they are
loaded, so relative names are taken from there. Each is read as the process sees it (probes/process_files.py: in its
own root and mount namespace), and, where it is chrooted (Debian's config has `chroot /var/lib/haproxy`, entered
after the config was read), in its parent's (for a daemon, -D, the root its mount namespace has: absolute names
only). A keyword set twice takes its last value, as HAProxy's parser does; `"${NAME}"` and `"${NAME-default}"` are
taken from the environment it was started with (inside double quotes only, as HAProxy expands them). A setting
inside a `.if` block is not decided here (its condition is HAProxy's to evaluate) and is said as such. A file
changed after the newest of its processes started may not be what it runs (edited, not reloaded), and is said so.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ...core.handoff import HandOffRead
from ...core.text import escape_controls
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
MAX_FILES = 256  # files of a -f directory read at most
# A file changed this long after the newest process started is said changed since: the start is the kernel's (in
# clock ticks since boot, 10 ms) read against /proc/uptime (10 ms), so one written just before may read just after
START_SLACK_S = 0.1
INIT = 1  # the parent of a daemon (-D) that forked and left it
MULTI_QUEUE = "tune.listener.multi-queue"
NBTHREAD = "nbthread"
# the keywords that open a section (HAProxy 2.6's cfg_keywords and registered sections): a setting belongs to the
# last one opened
SECTIONS = frozenset(
    "global defaults frontend backend listen peers resolvers userlist mailers program http-errors ring cache "
    "fcgi-app log-forward".split()
)
# $NAME, ${NAME}, ${NAME-default} and ${NAME[*]} (the value's words, as one here: these settings take one)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:-([^}]*))?(?:\[\*\])?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


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


def config_names(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """The config paths HAProxy's command line names, in its order (-f's, then those after `--`), and -C's
    directory (None: none given)."""
    names: list[str] = []
    chdir: str | None = None
    words = list(argv[1:])
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            names += words[i + 1 :]
            break
        if word in ("-f", "-C") and i + 1 < len(words):
            if word == "-f":
                names.append(words[i + 1])
            else:
                chdir = words[i + 1]
            i += 2
            continue
        i += 1
    return names, chdir


def global_settings(text: str, environ: dict[str, str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """The global section's tune.listener.multi-queue and nbthread as written (the last of each), and those
    found where this reading cannot decide them (keyword -> why)."""
    found: dict[str, str] = {}
    unknown: dict[str, str] = {}
    section = ""
    conditional = 0
    for raw in text.splitlines():
        words = _words(raw, environ)
        if not words or words[0] is None:
            continue
        first = words[0]
        if first == ".if":
            conditional += 1
            continue
        if first == ".endif":
            conditional = max(0, conditional - 1)
            continue
        if first.startswith("."):
            continue  # .elif, .else, .diag, .notice, .warning, .alert: no setting
        if first in SECTIONS:
            section = first
            continue
        if section != "global" or first not in (MULTI_QUEUE, NBTHREAD) or len(words) < 2:
            continue
        value = words[1]
        if conditional:
            unknown[first] = "is set inside a .if block, whose condition HAProxy evaluates"
        elif value is None:
            unknown[first] = "is set from a variable its environment here does not give"
        else:
            found[first] = value
            unknown.pop(first, None)
    return found, unknown


def _words(line: str, environ: dict[str, str] | None) -> list[str | None]:
    """A config line's words as HAProxy 2.6's parse_line reads them: a `#` outside quotes ends it, quotes group, a
    backslash outside single quotes takes the next character as it is, and `$NAME`, `${NAME}`, `${NAME-default}`
    are taken from `environ` inside double quotes only (unquoted, HAProxy keeps them as written: 'nbthread ${T}'
    with T=3 failed its config check, "${T}" passed). A word is None where a variable in it is not in `environ`
    (it may be unreadable here, or set by the config's own setenv)."""
    words: list[str | None] = []
    word: list[str] = []
    known = True
    quote = ""
    in_word = False
    i = 0
    while i < len(line):
        char = line[i]
        if quote == "'":
            if char == quote:
                quote = ""
            else:
                word.append(char)
        elif char == "\\" and i + 1 < len(line):
            word.append(line[i + 1])
            in_word = True
            i += 1
        elif quote == '"' and char == "$" and (match := _VARIABLE.match(line, i)):
            name, default = match.group(1) or match.group(3), match.group(2)
            if environ is not None and name in environ:
                word.append(environ[name])
            elif default is not None and environ is not None:
                word.append(default)  # the default replaces a variable not set, not an empty one
            else:
                known = False
            i = match.end() - 1
        elif quote == '"' and char == quote:
            quote = ""
        elif not quote and char in ('"', "'"):
            quote, in_word = char, True
        elif not quote and char == "#":
            break
        elif not quote and char.isspace():
            if in_word:
                words.append("".join(word) if known else None)
                word, known, in_word = [], True, False
        else:
            word.append(char)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(word) if known else None)
    return words


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


def read_settings(pid: int, argv: Sequence[str]) -> Settings:
    """HAProxy's multi-queue and nbthread as the config files of `argv` (process `pid`'s command line) set them:
    read in its own root, or in its parent's where its own cannot give them (a chroot entered since)."""
    parent = parent_of(pid)
    wheres = [started(pid, argv)] + ([_root_left(pid, parent, argv)] if parent else [])
    names, chdir = config_names(argv)
    found: dict[str, str] = {}
    unknown: dict[str, str] = {}
    read: list[str] = []
    unread: list[tuple[str, str]] = []
    for name, text, why in _files(wheres, names, chdir):
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
        _changed(wheres, [*names, *(name for name in read if name not in names)], chdir, _newest_start(pid)),
    )


def _changed(wheres: list[Started], names: list[str], chdir: str | None, since: float | None) -> tuple[str, ...]:
    """Those of `names` (files, -f directories: a file added or renamed in) changed after `since` (wall clock)."""
    if since is None:
        return ()
    changed = []
    for name in names:
        mtime = next((m for w in wheres if (m := modified_at(w, name, _start(w, chdir))) is not None), None)
        if mtime is not None and mtime > since + START_SLACK_S:
            changed.append(name)
    return tuple(changed)


def _newest_start(pid: int) -> float | None:
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


def _files(wheres: list[Started], names: list[str], chdir: str | None) -> list[tuple[str, str | None, str]]:
    """(name, text or None, why not) for each config file HAProxy loaded, a -f directory's in its order."""
    out: list[tuple[str, str | None, str]] = []
    for name in names:
        listed = _listing(wheres, name, chdir)
        if listed is None:
            out.append((name, *_text(wheres, name, chdir)))
            continue
        for file in [f for f in listed if f.endswith(".cfg") and not f.startswith(".")][:MAX_FILES]:
            path = os.path.join(name, file)
            text, why = _text(wheres, path, chdir)
            if text is not None or why != "not a regular file":  # HAProxy skips what is not a regular file
                out.append((path, text, why))
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


def why_said(why: str, settings: Settings) -> str:
    """The threads mode's `why` (a herd on one listener; then multi-queue's handing on) as the config read says it:
    the handing on left out where it turns multi-queue off or runs one thread and that is known to be what it runs
    (observe's handoff_read), HAProxy's defaults where no file could be read; a file not read or changed said."""
    herd = why.split("; ", 1)[0]
    files = ", ".join(map(escape_controls, settings.read))  # names as HAProxy was given them: any bytes
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
    files = ", ".join(map(escape_controls, settings.read))  # names as HAProxy was given them: any bytes
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
