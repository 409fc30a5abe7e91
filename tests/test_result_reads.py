"""accept_order.results.files.read_document: a result read defensively: every saved version-1 file; empty, missing,
device, FIFO and socket paths refused without blocking; the size cap exact even when the file grows; bad content,
deep nesting and huge integers refused in one printable line."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from result_file_cases import DOC, needs_dev, one_line

from accept_order.core.errors import ResultFileError
from accept_order.results.files import (
    MAX_DEPTH,
    MAX_RESULT_BYTES,
    check_schema,
    read_document,
)

DATA = Path(__file__).parent / "data" / "v1"


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
