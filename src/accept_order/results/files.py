"""Result files: check an output path before a run, write atomically, read back for `show` without
trusting the file (it may be a FIFO, /dev/zero, hand-edited or hostile JSON). Every refusal is one line
(an AcceptOrderError) with the file's name and values escaped (render.text.escape_controls), never a
traceback.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from accept_order.core.errors import PlanError, ResultFileError
from accept_order.core.text import escape_controls
from accept_order.results.file_owner import whose
from accept_order.results.json_text import document_text
from accept_order.results.shape import brief

SCHEMA = "accept-order"

MIB = 1024 * 1024
# One connection record is ~135 bytes in indent=1 JSON (~185 with an error string), so 10 million
# connections (api.MAX_CONNECTIONS) would be ~1.35 GB: too much to parse (Python needs ~5x the file
# size in memory). 256 MiB holds ~1.9 million records and parses in ~2 s with ~1.2 GB peak memory
# (measured); larger files are refused with one line instead of exhausting memory.
MAX_RESULT_BYTES = 256 * MIB
# Real results nest 7 levels at most; 64 leaves room for growth and stays far below the depth at
# which Python's recursive JSON parser or our renderers would run out of stack.
MAX_DEPTH = 64
# Python's default int_max_str_digits, enforced even if the interpreter's limit was lifted
# (PYTHONINTMAXSTRDIGITS=0): converting a digit string is quadratic, a 256 MiB number would take hours.
MAX_INT_DIGITS = 4300

# A "\uD800".."\uDFFF" escape in the JSON text: the only way a lone surrogate gets into a document.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _reason(exc: OSError) -> str:
    return escape_controls(exc.strerror or exc)


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n and n % MIB == 0 else f"{n} bytes"


_FILE_TYPES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _file_type(mode: int) -> str:
    return next((name for test, name in _FILE_TYPES if test(mode)), "a special file")


# -- before a run --------------------------------------------------------------------------------------


def check_output_path(path: str, *, option: str = "--json") -> Path:
    """The results path as a Path, or PlanError (a usage error, exit 2) with one line, checked before
    a run starts so a bad path does not cost a whole run. An existing regular file is fine: it will be
    replaced atomically. Symlinks are refused rather than followed or replaced (which of the two the
    user meant is a guess), and so is anything that is not a regular file: replacing /dev/null as root
    would break the system."""
    if not path:
        raise PlanError(f"{option} needs a file name")
    shown = escape_controls(path)
    if "\0" in path:
        raise PlanError(f"{option}: {shown} contains a NUL byte")
    if path.endswith(os.sep):
        raise PlanError(f"{option}: {shown} names a directory, not a file")
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None  # the usual case; whether its folder exists is checked below
    except OSError as exc:  # ENOTDIR (a file used as a folder), ENAMETOOLONG, ELOOP, EACCES
        raise PlanError(f"{option}: cannot use {shown}: {_reason(exc)}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise PlanError(f"{option}: {shown} is a directory")
        if stat.S_ISLNK(st.st_mode):
            raise PlanError(f"{option}: {shown} is a symbolic link; give the file it points to")
        if not stat.S_ISREG(st.st_mode):
            raise PlanError(f"{option}: {shown} is {_file_type(st.st_mode)}, not a regular file")
        if not os.access(path, os.W_OK):
            raise PlanError(f"{option}: {shown} is not writable{whose(path, st)}")
    folder = Path(path).parent
    shown_folder = escape_controls(folder)
    try:
        folder_st = os.stat(folder)
    except FileNotFoundError:
        raise PlanError(f"{option}: directory {shown_folder} does not exist") from None
    except OSError as exc:
        raise PlanError(f"{option}: cannot use directory {shown_folder}: {_reason(exc)}") from None
    if not stat.S_ISDIR(folder_st.st_mode):
        raise PlanError(f"{option}: {shown_folder} is not a directory")
    # The file is written as a temporary file next to it and renamed into place, so the folder itself
    # must be writable even when the file already exists.
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PlanError(f"{option}: cannot create files in directory {shown_folder}")
    # Permissions do not tell everything: root may write anywhere, yet /proc and /sys take no new files, and
    # some filesystems refuse them (out of inodes). Making (and removing) the temporary file the write will
    # make is the only sure check before the run.
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{Path(path).name[:64]}.", suffix=".tmp")
    except OSError as exc:
        raise PlanError(f"{option}: cannot create files in directory {shown_folder}: {_reason(exc)}") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return Path(path)


# -- writing -------------------------------------------------------------------------------------------


def _creation_mode() -> int:
    # 0666 minus the umask, as open() gives a new file: mkstemp's 0600 would hide results from others.
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass  # no /proc (not Linux): read the umask by setting it (not thread-safe), put it back
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _refuse_unless_replaceable(target: Path, shown: str) -> None:
    """Refuse unless `target` is absent or a regular file. lstat, not stat: os.replace would replace a
    symlink itself (not what it points to), and would replace a device node's directory entry."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ResultFileError(f"will not replace {shown}: it is {_file_type(st.st_mode)}, not a regular file")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)  # may be partial (e.g. near a file-size limit); then errors next
        view = view[written:]


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` atomically, only ever replacing a regular file (never a symlink or a device), so an
    interrupted or failed write never leaves half a file and keeps any previous file intact; the result
    files and the pictures are written this way. ResultFileError (one line) on any failure; the
    temporary file is always removed."""
    name = os.fspath(path)
    shown = escape_controls(name)
    target = Path(name)
    # Checked before creating anything too, so e.g. /dev/full is refused without a temporary file in /dev.
    _refuse_unless_replaceable(target, shown)
    tmp: str | None = None
    try:
        # A unique name (not a fixed "NAME.tmp"), so two runs writing the same file cannot clobber each
        # other's half-written data; the name is shortened so prefix + suffix stay within NAME_MAX.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:64]}.", suffix=".tmp")
        try:
            with contextlib.suppress(OSError):  # some filesystems (vfat) refuse modes: not worth failing
                os.fchmod(fd, _creation_mode())
            _write_all(fd, data)
        finally:
            os.close(fd)
        # Again right before replacing: the target may have become a symlink or FIFO during the write.
        _refuse_unless_replaceable(target, shown)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:  # ENOSPC, EROFS, EACCES, EFBIG, EDQUOT, ENOENT (folder gone), EISDIR...
        raise ResultFileError(f"cannot write {shown}: {_reason(exc)}") from None
    finally:
        if tmp is not None:  # also on KeyboardInterrupt: never leave a temporary file behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_document(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    """Write `document` as JSON (indent=1, trailing newline), atomically: into a uniquely named temporary
    file in the same directory, then os.replace, so an interrupted or failed write never leaves half a
    file and keeps any previous file intact. No fsync: the rename protects against a crashed or killed
    process, which is what matters for a measurement; surviving power loss is not worth the latency.
    ResultFileError (one line) on any failure; the temporary file is always removed."""
    name = os.fspath(path)
    if not name:
        raise ResultFileError("cannot write results: no file name")
    shown = escape_controls(name)
    if "\0" in name:
        raise ResultFileError(f"cannot write {shown}: the name contains a NUL byte")
    write_bytes(name, file_text(document, shown).encode("utf-8"))


def file_text(document: dict[str, Any], shown: str) -> str:
    """What a result file holds: `document` as JSON (indent=1; ASCII, every other character escaped), a line break
    after it; ResultFileError naming `shown` (where it was going) when the result is not JSON."""
    try:
        # allow_nan=False: read_document refuses NaN/Infinity, so never write a file we cannot read back.
        return document_text(document) + "\n"  # json.dumps(indent=1)'s text, ~2x faster
    except (TypeError, ValueError, RecursionError) as exc:
        raise ResultFileError(f"cannot write {shown}: the result is not valid JSON ({escape_controls(exc)})") from None


# -- reading -------------------------------------------------------------------------------------------


class _Refused(Exception):
    """Raised from inside json.loads hooks; becomes a ResultFileError naming the file."""


def _refuse_constant(name: str) -> Any:
    raise _Refused(f"holds {name}, which is not a number a result can hold")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # "1e999" parses to inf without ever reaching parse_constant
        raise _Refused(f"holds a number too large for a float ({escape_controls(text[:40])})")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"holds an integer longer than {MAX_INT_DIGITS} digits")
    return int(text)


def _refuse_unless_regular(mode: int, shown: str) -> None:
    if not stat.S_ISREG(mode):
        raise ResultFileError(f"cannot read {shown}: it is {_file_type(mode)}, not a regular file")


def _read_bounded(name: str, shown: str, max_bytes: int) -> bytearray:
    too_big = f"cannot read {shown}: it is larger than {_size(max_bytes)}, the most a result file may be"
    try:
        # stat before opening: opening some devices has effects of its own (a watchdog starts, a tape
        # rewinds), so a path that is not a regular file is never opened at all.
        _refuse_unless_regular(os.stat(name).st_mode, shown)
        # O_NONBLOCK: if the path is swapped for a FIFO after the stat, opening it must not block
        # waiting for a writer; O_NOCTTY: a terminal device must never become our controlling tty.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise ResultFileError(f"cannot read {shown}: {_reason(exc)}") from None
    try:
        st = os.fstat(fd)
        _refuse_unless_regular(st.st_mode, shown)  # what was opened, not what the name pointed to before
        if st.st_size > max_bytes:
            raise ResultFileError(too_big)
        os.set_blocking(fd, True)  # a regular file after all; some network filesystems honour O_NONBLOCK
        # Read at most max_bytes + 1 whatever fstat said, so a file that grows meanwhile stays bounded.
        buf = bytearray()
        while len(buf) <= max_bytes:
            chunk = os.read(fd, min(MIB, max_bytes + 1 - len(buf)))
            if not chunk:
                break
            buf += chunk
    except OSError as exc:
        raise ResultFileError(f"cannot read {shown}: {_reason(exc)}") from None
    finally:
        os.close(fd)
    if len(buf) > max_bytes:
        raise ResultFileError(too_big)
    return buf


def _parse(text: str, shown: str) -> Any:
    limit = sys.get_int_max_str_digits()
    # Python's own int parsing is ~2x faster than a hook; use the hook only when the interpreter's
    # limit is off (0) or looser than ours.
    parse_int = None if 0 < limit <= MAX_INT_DIGITS else _bounded_int
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise ResultFileError(
            f"{shown} is not JSON: {escape_controls(exc.msg)} at line {exc.lineno} column {exc.colno}"
        ) from None
    except _Refused as exc:
        raise ResultFileError(f"{shown} {exc}") from None
    except RecursionError:  # the parser recurses per nesting level; a few thousand "[" exhaust it
        raise ResultFileError(f"{shown} nests deeper than {MAX_DEPTH} levels") from None
    except ValueError:  # the only other source: int() over the interpreter's digit limit
        raise ResultFileError(f"{shown} holds an integer longer than {limit} digits") from None


def _check_depth(document: dict[str, Any], shown: str) -> None:
    """Iterative (an explicit stack), so checking a deep document cannot itself overflow the stack."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        for child in value.values() if isinstance(value, dict) else value:
            if isinstance(child, (dict, list)):
                if depth + 1 > MAX_DEPTH:
                    raise ResultFileError(f"{shown} nests deeper than {MAX_DEPTH} levels")
                stack.append((child, depth + 1))


def read_document(path: str | os.PathLike[str], max_bytes: int = MAX_RESULT_BYTES) -> dict[str, Any]:
    """The JSON object in a result file, for `show`; ResultFileError (one line) for an empty path, a missing
    or non-regular file (never opened, never read), over `max_bytes`, not UTF-8, not JSON, too deep,
    NaN/Infinity/1e999, over-long integers, lone surrogates, a non-object top level. Symlinks are
    followed: what matters is that the file finally read is a regular one."""
    name = os.fspath(path)
    if not name:
        raise ResultFileError("show needs a file name")
    shown = escape_controls(name)
    if "\0" in name:
        raise ResultFileError(f"cannot read {shown}: the name contains a NUL byte")
    data = _read_bounded(name, shown, max_bytes)
    try:
        # utf-8-sig: a byte-order mark, as some editors add, is not worth refusing a file for.
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{shown} is not UTF-8 text (invalid byte at offset {exc.start})") from None
    del data  # the bytes are not needed any more: halve the peak memory of a large file
    lone_surrogate_possible = _SURROGATE_ESCAPE.search(text) is not None
    document = _parse(text, shown)
    del text
    if not isinstance(document, dict):
        raise ResultFileError(f"{shown} is not a result: its top level is {brief(document)}, not an object")
    _check_depth(document, shown)
    if lone_surrogate_possible:
        # Escaped surrogate pairs are fine (an emoji); a lone one is not text and cannot be printed.
        try:
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ResultFileError(f"{shown} holds a lone surrogate (\\udXXX), which is not text") from None
    return document


# -- schema --------------------------------------------------------------------------------------------


def check_schema(
    document: dict[str, Any], path: str | os.PathLike[str], *, schema: str = SCHEMA, newest: int
) -> tuple[str, int]:
    """(kind, version) of a result document, or ResultFileError (one line) when its "schema" is not
    `schema`, its "version" is not a whole number from 1 (true, "1", 1.0, 0 and -5 are all refused) or
    is newer than `newest`, or its "kind" is missing, not a string, or empty."""
    shown = escape_controls(os.fspath(path))
    if not isinstance(document, dict):
        raise ResultFileError(f"{shown} is not an {schema} result file: not a JSON object")
    found = document.get("schema")
    if found != schema:
        what = "it has no schema" if found is None else f"its schema is {brief(found)}"
        raise ResultFileError(f"{shown} is not an {schema} result file ({what})")
    version = document.get("version")
    if version is None:
        raise ResultFileError(f"{shown} has no schema version")
    # bool is a subclass of int: `true` must not pass as version 1.
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ResultFileError(f"{shown} has an invalid schema version {brief(version)}; expected a whole number from 1")
    if version > newest:
        raise ResultFileError(f"{shown} has schema version {brief(version)}; this accept-order reads up to {newest}")
    kind = document.get("kind")
    if kind is None:
        raise ResultFileError(f'{shown} does not say what kind of result it is (no "kind")')
    if not isinstance(kind, str) or not kind:
        raise ResultFileError(f"{shown} has an invalid result kind {brief(kind)}; expected a name")
    return kind, version
