"""Reading a /proc file whole, cheaply."""

from __future__ import annotations

import os

_CHUNK = 1 << 16  # an epoll's fdinfo holding 10,000 watches is about 700 KB


def read_again(fd: int) -> bytes | None:
    """The whole of a /proc file kept open, read from its start (a seq_file made anew: what a fresh open would
    read now, without the path's lookup, the open and the close); None once it cannot be read (its thread or
    process gone)."""
    try:
        chunks = [os.pread(fd, _CHUNK, 0)]
        while len(chunks[-1]) == _CHUNK:
            chunks.append(os.pread(fd, _CHUNK, _CHUNK * len(chunks)))
        return b"".join(chunks)
    except OSError:
        return None


def read_proc(path: str) -> bytes | None:
    """A /proc file's bytes (None when it cannot be read: gone, or not this user's), read with os.read: an
    inspect of 64 workers reads about 1,600 small files, and Python's buffered text files cost three times
    as much each (an fstat, a decoder, a buffer, and a last read to meet the end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = [os.read(fd, _CHUNK)]
        while len(chunks[-1]) == _CHUNK:  # a short read is the end: /proc's files fill what they are asked
            chunks.append(os.read(fd, _CHUNK))
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
