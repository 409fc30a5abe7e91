"""accept_order.results.files: output-path checks, atomic writes, defensive reads, escaped strings, schema.

Every refusal must be an AcceptOrderError with one printable line (never a traceback), and nothing a
file or a file name holds may reach the terminal as a control character.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

from accept_order.core.errors import AcceptOrderError, PlanError, ResultFileError
from accept_order.core.text import escape_controls
from accept_order.results.files import (
    MAX_DEPTH,
    MAX_RESULT_BYTES,
    check_output_path,
    check_schema,
    read_document,
    write_document,
)

DATA = Path(__file__).parent / "data" / "v1"
DOC: dict[str, Any] = {"schema": "accept-order", "version": 1, "kind": "run", "records": [1, 2.5, None]}
HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\n.json"

needs_dev = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/null, /dev/zero")


def one_line(exc: pytest.ExceptionInfo[AcceptOrderError]) -> str:
    """The error's message, after checking it is one line with no control characters at all."""
    message = str(exc.value)
    assert message
    assert not [c for c in message if unicodedata.category(c) in ("Cc", "Cs")], repr(message)
    return message


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Turn a blocking open/read (e.g. of a FIFO without O_NONBLOCK) into a failure, not a hung suite."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("blocked: the FIFO was opened or read in blocking mode")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, 10)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def entries(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


# -- check_output_path ---------------------------------------------------------------------------------


def test_output_path_accepts_new_and_existing_regular_files(tmp_path: Path) -> None:
    new = tmp_path / "new.json"
    assert check_output_path(str(new)) == new
    old = tmp_path / "old.json"
    old.write_text("{}\n")
    assert check_output_path(str(old)) == old
    assert old.read_text() == "{}\n"  # checking does not touch it
    assert not new.exists()


def test_output_path_empty_is_a_usage_error() -> None:
    with pytest.raises(PlanError) as exc:
        check_output_path("")
    assert one_line(exc) == "--json needs a file name"
    assert exc.value.exit_code == 2


@pytest.mark.parametrize("make", ["dir", "trailing-slash", "missing-folder", "file-as-folder"])
def test_output_path_refuses_directories_and_missing_folders(tmp_path: Path, make: str) -> None:
    (tmp_path / "file").write_text("x")
    path, expected = {
        "dir": (str(tmp_path), "is a directory"),
        "trailing-slash": (f"{tmp_path}/out/", "names a directory"),
        "missing-folder": (str(tmp_path / "nope" / "out.json"), "does not exist"),
        "file-as-folder": (str(tmp_path / "file" / "out.json"), "Not a directory"),
    }[make]
    with pytest.raises(PlanError) as exc:
        check_output_path(path)
    assert expected in one_line(exc)


@needs_dev
@pytest.mark.parametrize("device", ["/dev/null", "/dev/full"])
def test_output_path_refuses_device_nodes(device: str) -> None:
    with pytest.raises(PlanError) as exc:
        check_output_path(device)
    assert one_line(exc) == f"--json: {device} is a character device, not a regular file"


def test_output_path_refuses_fifo_and_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(PlanError) as exc:
        check_output_path(str(tmp_path / "fifo"))
    assert "FIFO" in one_line(exc)
    monkeypatch.chdir(tmp_path)  # a short relative name: AF_UNIX paths are limited to ~107 bytes
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock")
        with pytest.raises(PlanError) as exc:
            check_output_path("sock")
    assert one_line(exc) == "--json: sock is a socket, not a regular file"


@pytest.mark.parametrize("dangling", [False, True])
def test_output_path_refuses_symlinks(tmp_path: Path, dangling: bool) -> None:
    real = tmp_path / "real.json"
    if not dangling:
        real.write_text("keep\n")
    (tmp_path / "link.json").symlink_to(real)
    with pytest.raises(PlanError) as exc:
        check_output_path(str(tmp_path / "link.json"))
    assert "is a symbolic link" in one_line(exc)
    assert real.exists() is not dangling


def test_output_path_refuses_what_cannot_be_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.access is faked: as root every chmod-based check would pass.
    target = tmp_path / "out.json"
    target.write_text("{}")
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != target)
    with pytest.raises(PlanError) as exc:
        check_output_path(str(target))
    assert one_line(exc) == f"--json: {target} is not writable"
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != tmp_path)
    with pytest.raises(PlanError) as exc:
        check_output_path(str(tmp_path / "new.json"))
    assert one_line(exc) == f"--json: cannot create files in directory {tmp_path}"


def test_output_path_in_a_folder_that_takes_no_files_is_refused_before_the_run(tmp_path: Path) -> None:
    """/proc passes every permission check as root, yet takes no new file: a run would have measured for
    nothing and then failed to save. The check makes (and removes) the temporary file the write will make."""
    with pytest.raises(PlanError) as exc:
        check_output_path("/proc/accept-order-result.json")
    assert one_line(exc).startswith("--json: cannot create files in directory /proc"), one_line(exc)
    assert check_output_path(str(tmp_path / "out.json")) == tmp_path / "out.json"
    assert list(tmp_path.iterdir()) == []  # the probe file is gone


def test_a_run_into_proc_is_refused_before_any_worker_starts() -> None:
    from conftest import assert_one_error_line, run_cli

    result = run_cli(["run", "--mode", "epoll", "--json", "/proc/accept-order-result.json"])
    assert_one_error_line(result, 2, "cannot create files in directory /proc")
    assert "Sequence" not in result.output


# -- write_document ------------------------------------------------------------------------------------


def test_write_round_trips_with_indent_one_and_newline(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_document(str(target), DOC)
    assert target.read_text() == json.dumps(DOC, indent=1) + "\n"
    assert read_document(target) == DOC
    assert check_schema(read_document(target), str(target), newest=1) == ("run", 1)
    assert entries(tmp_path) == ["out.json"]


def test_write_replaces_an_existing_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old\n")
    before = target.stat().st_ino
    write_document(target, DOC)
    assert json.loads(target.read_text()) == DOC
    assert target.stat().st_ino != before  # a new file renamed into place, not rewritten in place
    assert entries(tmp_path) == ["out.json"]


def test_write_does_not_use_a_fixed_tmp_name(tmp_path: Path) -> None:
    # The old save() wrote "NAME.tmp": a symlink planted there redirected the write to any file.
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "out.json.tmp").symlink_to(victim)
    write_document(tmp_path / "out.json", DOC)
    assert victim.read_text() == "precious\n"
    assert json.loads((tmp_path / "out.json").read_text()) == DOC


def test_write_gives_the_file_the_umask_mode_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_document(tmp_path / "out.json", DOC)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == 0o640


def test_write_handles_a_255_byte_file_name(tmp_path: Path) -> None:
    target = tmp_path / ("r" * 250 + ".json")
    write_document(target, DOC)
    assert read_document(target) == DOC
    assert entries(tmp_path) == [target.name]


def test_write_enospc_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.json"
    target.write_text("old\n")
    real_write = os.write
    calls = []

    def fill_up(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) == 1:
            return real_write(fd, bytes(data)[:10])  # a partial write first, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(os, "write", fill_up)
        with pytest.raises(ResultFileError) as exc:
            write_document(target, DOC)
    assert one_line(exc) == f"cannot write {target}: No space left on device"
    assert exc.value.exit_code == 1
    assert len(calls) == 2
    assert target.read_text() == "old\n"
    assert entries(tmp_path) == ["out.json"]


def test_write_real_kernel_failure_file_size_limit(tmp_path: Path) -> None:
    # A real failing write without root or a full disk: RLIMIT_FSIZE makes write() fail with EFBIG.
    script = textwrap.dedent(f"""
        import resource, signal, sys
        sys.path[:0] = {sys.path!r}
        from accept_order.core.errors import ResultFileError
        from accept_order.results.files import write_document
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        try:
            write_document(sys.argv[1], {{"x": "y" * 100000}})
        except ResultFileError as exc:
            print(exc)
    """)
    target = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60)
    assert done.stderr == ""
    assert done.stdout == f"cannot write {target}: File too large\n"
    assert entries(tmp_path) == []


def test_write_failing_to_create_the_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(**kwargs: Any) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr("tempfile.mkstemp", read_only)
    with pytest.raises(ResultFileError) as exc:
        write_document(tmp_path / "out.json", DOC)
    assert one_line(exc) == f"cannot write {tmp_path / 'out.json'}: Read-only file system"


def test_write_into_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError) as exc:
        write_document(tmp_path / "gone" / "out.json", DOC)
    assert one_line(exc).endswith(": No such file or directory")


def test_write_interrupted_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(fd: int, data: bytes) -> int:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(os, "write", interrupted)
        with pytest.raises(KeyboardInterrupt):
            write_document(tmp_path / "out.json", DOC)
    assert entries(tmp_path) == []


@needs_dev
def test_write_refuses_device_targets_without_touching_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    real_mkstemp = tempfile.mkstemp
    monkeypatch.setattr(tempfile, "mkstemp", lambda **kw: made.append(kw) or real_mkstemp(**kw))
    before = set(os.listdir("/dev"))
    for device in ("/dev/full", "/dev/null"):
        with pytest.raises(ResultFileError) as exc:
            write_document(device, DOC)
        assert one_line(exc) == f"will not replace {device}: it is a character device, not a regular file"
        assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert made == []  # refused before any temporary file was made in /dev
    assert set(os.listdir("/dev")) == before


def test_write_refuses_fifo_symlink_and_directory_targets(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    real = tmp_path / "real"
    real.write_text("keep\n")
    (tmp_path / "link").symlink_to(real)
    (tmp_path / "dir").mkdir()
    for name, kind in (("fifo", "a FIFO"), ("link", "a symbolic link"), ("dir", "a directory")):
        with pytest.raises(ResultFileError) as exc:
            write_document(tmp_path / name, DOC)
        assert f"it is {kind}" in one_line(exc)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert (tmp_path / "link").is_symlink() and real.read_text() == "keep\n"
    assert entries(tmp_path) == ["dir", "fifo", "link", "real"]


def test_write_rechecks_the_target_right_before_replacing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, other = tmp_path / "out.json", tmp_path / "other"
    other.write_text("keep\n")
    real_write = os.write

    def write_then_swap(fd: int, data: bytes) -> int:
        written = real_write(fd, data)
        if not target.is_symlink():
            target.symlink_to(other)  # someone plants a symlink while the result is being written
        return written

    with monkeypatch.context() as m:
        m.setattr(os, "write", write_then_swap)
        with pytest.raises(ResultFileError) as exc:
            write_document(target, DOC)
    assert "it is a symbolic link" in one_line(exc)
    assert target.is_symlink() and other.read_text() == "keep\n"
    assert entries(tmp_path) == ["other", "out.json"]


def test_write_refuses_nan_and_unserialisable_values(tmp_path: Path) -> None:
    for bad in ({"x": float("nan")}, {"x": float("inf")}, {"x": object()}):
        with pytest.raises(ResultFileError) as exc:
            write_document(tmp_path / "out.json", bad)
        assert "is not valid JSON" in one_line(exc)
    assert entries(tmp_path) == []


# -- read_document -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.name)
def test_read_accepts_every_saved_v1_result(path: Path) -> None:
    document = read_document(path)
    assert check_schema(document, str(path), newest=1) == (document["kind"], 1)


def test_read_empty_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError) as exc:
        read_document("")
    assert one_line(exc) == "show needs a file name"
    with pytest.raises(ResultFileError) as exc:
        read_document(tmp_path / "missing.json")
    assert one_line(exc) == f"cannot read {tmp_path / 'missing.json'}: No such file or directory"
    with pytest.raises(ResultFileError) as exc:
        read_document(tmp_path)
    assert one_line(exc) == f"cannot read {tmp_path}: it is a directory, not a regular file"


@needs_dev
@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_read_refuses_devices(device: str, no_hang: None) -> None:
    with pytest.raises(ResultFileError) as exc:
        read_document(device)
    assert one_line(exc) == f"cannot read {device}: it is a character device, not a regular file"


@needs_dev
def test_read_checks_what_was_opened_and_never_reads_a_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_hang: None
) -> None:
    # Simulate /dev/zero swapped in after the name was checked: only the fstat after open can tell.
    regular = tmp_path / "regular.json"
    regular.write_text("{}")
    real_stat, reads = os.stat, []

    def forbidden(fd: int, n: int) -> bytes:
        reads.append(n)
        return b""

    with monkeypatch.context() as m:
        m.setattr(os, "stat", lambda p, *a, **k: real_stat(regular if p == "/dev/zero" else p, *a, **k))
        m.setattr(os, "read", forbidden)
        with pytest.raises(ResultFileError) as exc:
            read_document("/dev/zero")
    assert "is a character device" in one_line(exc)
    assert reads == []


def test_read_refuses_a_fifo_without_blocking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_hang: None) -> None:
    fifo, regular = tmp_path / "fifo", tmp_path / "regular.json"
    os.mkfifo(fifo)
    regular.write_text("{}")
    with pytest.raises(ResultFileError) as exc:
        read_document(fifo)
    assert one_line(exc) == f"cannot read {fifo}: it is a FIFO (named pipe), not a regular file"
    # Past the name check (as if swapped in meanwhile): opening must not wait for a writer.
    real_stat = os.stat
    with monkeypatch.context() as m:
        m.setattr(os, "stat", lambda p, *a, **k: real_stat(regular if p == str(fifo) else p, *a, **k))
        with pytest.raises(ResultFileError) as exc:
            read_document(fifo)
    assert "is a FIFO" in one_line(exc)


def test_read_refuses_a_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock")
        with pytest.raises(ResultFileError) as exc:
            read_document("sock")
    assert one_line(exc) == "cannot read sock: it is a socket, not a regular file"


def test_read_follows_a_symlink_to_a_regular_file_only(tmp_path: Path, no_hang: None) -> None:
    (tmp_path / "real.json").write_text(json.dumps(DOC))
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    assert read_document(tmp_path / "link.json") == DOC
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "to-fifo").symlink_to(tmp_path / "fifo")
    with pytest.raises(ResultFileError) as exc:
        read_document(tmp_path / "to-fifo")
    assert "is a FIFO" in one_line(exc)


def test_read_size_cap_is_exact(tmp_path: Path) -> None:
    cap = 100
    at_cap = tmp_path / "at-cap.json"
    at_cap.write_text('{"pad": "' + "x" * (cap - 12) + '"}\n')
    assert at_cap.stat().st_size == cap
    assert read_document(at_cap, max_bytes=cap) == {"pad": "x" * (cap - 12)}
    over = tmp_path / "over.json"
    over.write_text('{"pad": "' + "x" * (cap - 11) + '"}\n')
    with pytest.raises(ResultFileError) as exc:
        read_document(over, max_bytes=cap)
    assert one_line(exc) == f"cannot read {over}: it is larger than 100 bytes, the most a result file may be"
    assert MAX_RESULT_BYTES == 256 * 1024 * 1024


def test_read_stays_bounded_when_the_file_grows_after_fstat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 5000)
    real_fstat, real_read, read = os.fstat, os.read, []

    def small_fstat(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 2, 0, 0, 0))

    def counting_read(fd: int, n: int) -> bytes:
        chunk = real_read(fd, n)
        read.append(len(chunk))
        return chunk

    with monkeypatch.context() as m:
        m.setattr(os, "fstat", small_fstat)
        m.setattr(os, "read", counting_read)
        with pytest.raises(ResultFileError) as exc:
            read_document(big, max_bytes=100)
    assert "larger than 100 bytes" in one_line(exc)
    assert sum(read) == 101


@pytest.mark.parametrize(
    "content, expected",
    [
        (b'{"a": "caf\xe9"}', "is not UTF-8 text (invalid byte at offset 10)"),
        (b"", "is not JSON: Expecting value at line 1 column 1"),
        (b'{\n "a": 1\n "b": 2}', "is not JSON: Expecting ',' delimiter at line 3 column 2"),
        (b"[1, 2]", "is not a result: its top level is a list, not an object"),
        (b'"text"', 'is not a result: its top level is "text", not an object'),
        (b"3", "is not a result: its top level is 3, not an object"),
        (b'{"a": NaN}', "holds NaN, which is not a number a result can hold"),
        (b'{"a": [Infinity]}', "holds Infinity, which is not a number a result can hold"),
        (b'{"a": -Infinity}', "holds -Infinity, which is not a number a result can hold"),
        (b'{"a": 1e999}', "holds a number too large for a float (1e999)"),
        (b'{"a": "\\ud800"}', "holds a lone surrogate (\\udXXX), which is not text"),
    ],
)
def test_read_refuses_bad_content(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ResultFileError) as exc:
        read_document(path)
    assert one_line(exc) == f"{path} {expected}"


def test_read_accepts_a_bom_and_escaped_surrogate_pairs(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_bytes(b'\xef\xbb\xbf{"host": "\\ud83d\\ude00"}')
    assert read_document(path) == {"host": "\U0001f600"}


@pytest.mark.parametrize("depth", [10_000, 200, MAX_DEPTH + 1])
def test_read_refuses_deep_nesting(tmp_path: Path, depth: int) -> None:
    # depth levels in all: the object at the top and depth - 1 lists inside it.
    path = tmp_path / "deep.json"
    path.write_text('{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}")
    with pytest.raises(ResultFileError) as exc:
        read_document(path)
    assert one_line(exc) == f"{path} nests deeper than {MAX_DEPTH} levels"


def test_read_accepts_nesting_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}")
    value, levels = read_document(path), 1
    while value:
        value, levels = value["a"] if isinstance(value, dict) else value[0], levels + 1
    assert levels == MAX_DEPTH


def test_read_refuses_a_bare_deep_list(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(ResultFileError) as exc:
        read_document(path)
    assert "nests deeper than" in one_line(exc)


@pytest.mark.parametrize("interpreter_limit", [None, 0])
def test_read_refuses_a_5000_digit_integer(tmp_path: Path, interpreter_limit: int | None) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"n": ' + "7" * 5000 + "}")
    previous = sys.get_int_max_str_digits()
    if interpreter_limit is not None:
        sys.set_int_max_str_digits(interpreter_limit)  # 0: the interpreter's own limit lifted
    try:
        with pytest.raises(ResultFileError) as exc:
            read_document(path)
    finally:
        sys.set_int_max_str_digits(previous)
    assert one_line(exc) == f"{path} holds an integer longer than 4300 digits"


def test_read_accepts_a_4300_digit_integer(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"n": -' + "7" * 4300 + "}")
    assert read_document(path)["n"] < 0


# -- control characters in names and text --------------------------------------------------------------


def test_error_messages_show_file_names_escaped(tmp_path: Path) -> None:
    hostile = tmp_path / HOSTILE
    hostile.mkdir()  # refused by every function, each naming it
    errors: list[pytest.ExceptionInfo[AcceptOrderError]] = []
    for call in (
        lambda: check_output_path(str(hostile)),
        lambda: write_document(hostile, DOC),
        lambda: read_document(hostile),
        lambda: check_schema({}, str(hostile), newest=1),
    ):
        with pytest.raises(AcceptOrderError) as exc:
            call()
        errors.append(exc)
    for exc in errors:
        assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\n.json" in one_line(exc)


def test_escape_controls_removes_terminal_escapes() -> None:
    shown = escape_controls("\x1b[31mred\x1b]0;title\x07")
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown == "\\x1b[31mred\\x1b]0;title\\x07"


def test_escape_controls_escapes_every_control_character_and_keeps_text() -> None:
    controls = "".join(map(chr, [*range(0x20), 0x7F, *range(0x80, 0xA0)]))
    shown = escape_controls(controls)
    assert not [c for c in shown if unicodedata.category(c) == "Cc"]
    assert shown.startswith("\\x00\\x01") and "\\x08\\t\\n\\x0b" in shown
    assert "\\x1f\\x7f\\x80" in shown and shown.endswith("\\x9f")
    assert escape_controls("naïve — ✓ 名前") == "naïve — ✓ 名前"
    assert escape_controls("a\u202eb\u2028c\udcff") == "a\\u202eb\\u2028c\\udcff"
    assert escape_controls("\udcff").encode("utf-8")  # a lone surrogate would make printing raise


def test_escape_controls_accepts_any_object() -> None:
    assert escape_controls(3) == "3"
    assert escape_controls(None) == "None"
    assert escape_controls(Path("a\nb")) == "a\\nb"
    assert escape_controls(10**5000).startswith("<unprintable")


def test_the_cli_consoles_print_markup_and_controls_as_text() -> None:
    """The last defence: whatever reaches the CLI's consoles unescaped (a --title, a file name) prints with
    its control characters escaped and its rich markup uninterpreted; line breaks stay line breaks."""
    from accept_order.cli.output import stderr, stdout

    for console in (stdout(), stderr()):
        with console.capture() as captured:
            console.print("[bold red]x[/] \x1b]0;t\x07\x1b[2J\nnext\u202e", Text("a\x9bb"))
        out = captured.get()
        assert not [c for c in out if unicodedata.category(c) in ("Cc", "Cf", "Zl") and c != "\n"], repr(out)
        assert out.startswith("[bold red]x[/] \\x1b]0;t") and "\\x1b[2J\nnext\\u202e a\\x9bb\n" in out


# -- check_schema --------------------------------------------------------------------------------------


def test_schema_accepts_a_good_document_and_another_schema_name() -> None:
    assert check_schema({"schema": "accept-order", "version": 2, "kind": "herd"}, "f", newest=2) == (
        "herd",
        2,
    )
    assert check_schema({"schema": "x", "version": 1, "kind": "k"}, "f", schema="x", newest=1) == ("k", 1)


@pytest.mark.parametrize(
    "fields, expected",
    [
        ({"schema": None}, "f is not an accept-order result file (it has no schema)"),
        ({"schema": "other"}, 'f is not an accept-order result file (its schema is "other")'),
        ({"schema": ["accept-order"]}, "f is not an accept-order result file (its schema is a list)"),
        ({"version": None}, "f has no schema version"),
        ({"version": True}, "f has an invalid schema version true; expected a whole number from 1"),
        ({"version": "1"}, 'f has an invalid schema version "1"; expected a whole number from 1'),
        ({"version": 1.0}, "f has an invalid schema version 1.0; expected a whole number from 1"),
        ({"version": 0}, "f has an invalid schema version 0; expected a whole number from 1"),
        ({"version": -5}, "f has an invalid schema version -5; expected a whole number from 1"),
        ({"version": 2}, "f has schema version 2; this accept-order reads up to 1"),
        ({"version": 10**200}, "f has schema version a very large number; this accept-order reads up to 1"),
        ({"kind": None}, 'f does not say what kind of result it is (no "kind")'),
        ({"kind": 5}, "f has an invalid result kind 5; expected a name"),
        ({"kind": ""}, 'f has an invalid result kind ""; expected a name'),
        ({"kind": {"a": 1}}, "f has an invalid result kind an object; expected a name"),
    ],
)
def test_schema_refusals(fields: dict[str, Any], expected: str) -> None:
    document = {"schema": "accept-order", "version": 1, "kind": "run", **fields}
    document = {k: v for k, v in document.items() if v is not None}
    with pytest.raises(ResultFileError) as exc:
        check_schema(document, "f", newest=1)
    assert one_line(exc) == expected


def test_schema_shows_hostile_values_escaped() -> None:
    with pytest.raises(ResultFileError) as exc:
        check_schema({"schema": HOSTILE + "\u202e" * 50}, HOSTILE, newest=1)
    message = one_line(exc)
    assert message.startswith("evil\\x1b]0;pwned")
    assert message.endswith('...")')  # the file's value is shortened, not printed whole
    assert "\u202e" not in message


# -- the whole document, checked against its kind's shape on load ---------------------------------------

DATA_ROOT = Path(__file__).parent / "data"
V2_LATENCY = DATA_ROOT / "v2" / "latency.json"


def _saved(tmp_path: Path, source: Path, change: Any, name: str = "r.json") -> Path:
    doc = json.loads(source.read_text())
    change(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _setter(*at: Any, value: Any) -> Any:
    def change(doc: Any) -> None:
        for key in at[:-1]:
            doc = doc[key]
        doc[at[-1]] = value

    return change


@pytest.mark.parametrize("path", sorted(DATA_ROOT.glob("*/*.json")), ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_every_saved_fixture_fits_its_shape(path: Path) -> None:
    from accept_order.experiments.documents import load

    kind, document = load(path)  # raises if the document does not fit
    assert document["kind"] == kind


def test_every_kind_declares_its_shape() -> None:
    from accept_order.experiments import every
    from accept_order.results.schema import Record

    assert all(isinstance(experiment.shape, Record) for experiment in every())


@pytest.mark.parametrize("value", [None, "", -1, True, 1.5, 10**30])
def test_a_summary_count_that_is_not_the_histograms_is_one_line(tmp_path: Path, value: Any) -> None:
    """merge used to end in "'int' object is not iterable" for each of these."""
    from conftest import assert_one_error_line, run_cli

    path = _saved(tmp_path, V2_LATENCY, _setter("summary", "count", value=value))
    for args in (["merge", str(path), str(V2_LATENCY)], ["show", str(path)], ["show", str(path), "--format", "csv"]):
        line = assert_one_error_line(run_cli(args), 1)
        within = " within 2**53" if value == 10**30 else ""
        assert line.endswith(f"{path}: summary.count: expected a non-negative integer{within}, got {json.dumps(value)}")


@pytest.mark.parametrize("value", [1e30, 10**30, 0, -3, True, "7"])
def test_an_absurd_histogram_count_is_one_line(tmp_path: Path, value: Any) -> None:
    """show --format hdr used to divide by zero for a count of 1e30."""
    from conftest import assert_one_error_line, run_cli

    path = _saved(tmp_path, V2_LATENCY, _setter("histogram", "counts", 0, 1, value=value))
    line = assert_one_error_line(run_cli(["show", str(path), "--format", "hdr"]), 1)
    within = " within 2**53" if value in (1e30, 10**30) else ""
    assert line.endswith(
        f"r.json: histogram.counts[0][1]: expected a positive integer{within}, got {json.dumps(value)}"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_setter("served", value=[1, 2, 3]), "served: has 3 entries, one per worker, but the server had 2"),
        (_setter("summary", "count", value=5), "summary.count: is 5, but the histogram holds 300 samples"),
        (_setter("server", "workers", value=True), "server.workers: expected an integer from 1 to 512, got true"),
        (_setter("wall_s", value=-0.5), "wall_s: expected a non-negative number, got -0.5"),
        (_setter("wall_s", value=1e30), "wall_s: expected a non-negative number within 2**53, got 1e+30"),
        (_setter("port", value=70000), "port: expected an integer from 0 to 65535, got 70000"),
        (_setter("errors", value={"timeout": -2}), "errors.timeout: expected a non-negative integer, got -2"),
        (_setter("histogram", "unit", value="ms"), 'histogram.unit: expected one of "us", got "ms"'),
        (_setter("histogram", "counts", 0, value=[48]), "histogram.counts[0]: expected a list of 2, got a list"),
        (_setter("load", "duration_s", value=2.0), "load: gives both connections and duration_s"),
        (_setter("server", "mode", value="bogus"), "server.mode: names mode 'bogus'"),
        (_setter("counters", 1, "cpu_s", value="0.1"), "counters[1].cpu_s: expected a non-negative number or null"),
        (_setter("evidence", "counters", value={"X": 1.5}), "evidence.counters.X: expected an integer, got 1.5"),
        (_setter("title", value="x" * 70000), "title: expected a string of at most 65536 characters"),
        (lambda doc: doc.pop("histogram"), "histogram: missing"),
        (lambda doc: doc.pop("server"), "server: missing"),
    ],
)
def test_a_field_that_does_not_fit_is_named_with_its_path(tmp_path: Path, change: Any, message: str) -> None:
    from accept_order.experiments.documents import load

    path = _saved(tmp_path, V2_LATENCY, change)
    with pytest.raises(ResultFileError) as exc:
        load(path)
    assert one_line(exc).startswith(f"{path}: {message}")


def test_a_run_inside_a_document_is_named_by_its_index(tmp_path: Path) -> None:
    from accept_order.experiments.documents import load

    for source, change, message in (
        (
            "latency-compare",
            _setter("runs", 1, "histogram", "counts", 2, 1, value=-1),
            "runs[1].histogram.counts[2][1]",
        ),
        ("repeat", _setter("rounds", 1, 0, "records", 0, "worker", value=9), "rounds[1][0].records[0].worker: names"),
        ("burst", _setter("runs", 0, "cells", 1, "served", value=[1, 2, 3]), "runs[0].cells[1].served: has 3"),
        ("ramp", _setter("steps", 0, "kind", value="both"), 'steps[0].kind: expected one of "rate", "concurrency"'),
        ("reload", _setter("runs", 2, "how", value="nuke"), "runs[2].how: expected one of"),
        ("serve", _setter("sequence", 0, value=5), "sequence[0]: names worker 5, but the server had 2"),
        ("herd", _setter("runs", value={}), "runs: expected a list, got an object"),
    ):
        path = _saved(tmp_path, DATA_ROOT / "v2" / f"{source}.json", change)
        with pytest.raises(ResultFileError) as exc:
            load(path)
        assert one_line(exc).startswith(f"{path}: {message}")


def test_keys_a_shape_does_not_name_are_left_alone(tmp_path: Path) -> None:
    """A newer version may add fields: they load, and `show --format json` keeps them."""
    from accept_order.experiments.documents import load

    def extra(doc: dict[str, Any]) -> None:
        doc["from_the_future"] = {"a": [1, None, "b"]}
        doc["server"]["new_option"] = -1
        doc["evidence"]["probe"] = [1.5]

    kind, document = load(_saved(tmp_path, V2_LATENCY, extra))
    assert document["from_the_future"] == {"a": [1, None, "b"]} and document["server"]["new_option"] == -1


def test_a_version_1_file_is_checked_in_its_version_2_form(tmp_path: Path) -> None:
    from accept_order.experiments.documents import load

    path = _saved(tmp_path, DATA_ROOT / "v1" / "latency.json", _setter("plan", "workers", value=0))
    with pytest.raises(ResultFileError) as exc:
        load(path)
    assert one_line(exc) == (
        f"{path}: server.workers: expected an integer from 1 to 512, got 0 (a version 1 file, read as version 2)"
    )
    path = _saved(tmp_path, DATA_ROOT / "v1" / "compare.json", _setter("runs", 1, "counters", value=["x"]))
    with pytest.raises(ResultFileError) as exc:
        load(path)
    assert one_line(exc) == f'{path}: runs[1].counters[0]: expected an object, got "x"'


@dataclass(frozen=True)
class _Inner:
    n: int


@dataclass(frozen=True)
class _Outer:
    inner: _Inner
    ratio: float
    cpus: tuple[int, ...] = ()
    name: str | None = None
    by_name: dict[str, int] = field(default_factory=dict)


def test_derive_reads_a_dataclass() -> None:
    """The shape of a dataclass: ints are non-negative, floats finite, `X | None` nullable, tuples lists,
    dict[str, X] objects, nested dataclasses their own shape; a field without a default is required."""
    from accept_order.results.schema import SchemaError, derive

    shape = derive(_Outer)
    shape.check({"inner": {"n": 0}, "ratio": 0.5, "cpus": [1], "name": None, "by_name": {"a": 1}}, "")
    for doc, message in (
        ({"ratio": 1}, "inner: missing"),
        ({"inner": {"n": -1}, "ratio": 1}, "inner.n: expected a non-negative integer, got -1"),
        ({"inner": {"n": 1}, "ratio": float("nan")}, "ratio: expected a non-negative number, got NaN"),
        ({"inner": {"n": 1}, "ratio": 1, "cpus": [0, False]}, "cpus[1]: expected a non-negative integer, got false"),
        (
            {"inner": {"n": 1}, "ratio": 1, "name": 3},
            "name: expected a string of at most 65536 characters or null, got 3",
        ),
        ({"inner": {"n": 1}, "ratio": 1, "by_name": {"a": "1"}}, 'by_name.a: expected a non-negative integer, got "1"'),
    ):
        with pytest.raises(SchemaError) as exc:
            shape.check(doc, "")
        assert str(exc.value) == message


def test_more_workers_than_a_run_may_have_is_refused_before_anything_draws_them(tmp_path: Path) -> None:
    """2**20 workers in a hand-edited file took minutes and gigabytes to plot: a run has at most 512."""
    from accept_order.experiments.documents import load

    path = _saved(tmp_path, DATA_ROOT / "v2" / "run.json", _setter("server", "workers", value=1 << 20))
    with pytest.raises(ResultFileError) as exc:
        load(path)
    assert one_line(exc) == f"{path}: server.workers: expected an integer from 1 to 512, got 1048576"
