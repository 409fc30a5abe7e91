"""Build a benchmark's C reference client with the machine's `cc`, once per source change."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

BUILD_DIR = Path(__file__).resolve().parent / ".build"


class NoCompiler(RuntimeError):
    pass


def build(source: Path, flags: tuple[str, ...] = ("-O2",)) -> Path:
    """Compile `source` to an executable under benchmarks/.build and return its path."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise NoCompiler("no C compiler (cc) on this machine: install gcc to run this benchmark")
    digest = hashlib.sha256(source.read_bytes() + " ".join(flags).encode()).hexdigest()[:12]
    BUILD_DIR.mkdir(exist_ok=True)
    binary = BUILD_DIR / f"{source.stem}-{digest}"
    if not binary.exists():
        subprocess.run([cc, *flags, "-o", str(binary), str(source)], check=True)
    return binary
