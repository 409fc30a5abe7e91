"""What bench_run.py's parts share (apart from it to keep each file under 400 lines): the verdict words, the
machine line, the compiled C reference client and one run of it, a count split into rounds."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from cbuild import NoCompiler, build

HERE = Path(__file__).resolve().parent
C_SOURCE = HERE / "c" / "seq_client.c"


def verdict(ok: bool) -> str:
    return "OK" if ok else "MISS"


def machine_line() -> str:
    return (
        f"machine: Linux {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}"
    )


def c_client() -> Path | None:
    """The compiled reference client, or None (after saying why) if there is no C compiler."""
    try:
        return build(C_SOURCE, ("-O2", "-Wall"))
    except NoCompiler as exc:
        print(f"C reference: skipped ({exc})")
    except subprocess.CalledProcessError as exc:
        print(f"C reference: skipped (cc failed with exit {exc.returncode})")
    return None


def run_c(binary: Path, address: tuple[str, int], count: int) -> tuple[float, int]:
    """(seconds, failures) of the C client; its one output line is `count N failures F elapsed_s S rate R`."""
    argv = [str(binary), address[0], str(address[1]), str(count)]
    # Each connection has a 5 s limit in the client; this only guards against a wedged machine.
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60 + count * 0.05)
    fields = out.stdout.split()
    if out.returncode not in (0, 1) or len(fields) != 8:
        raise SystemExit(f"bench_run: C client failed (exit {out.returncode}): {out.stderr.strip()}")
    return float(fields[5]), int(fields[3])


def chunks(total: int, rounds: int) -> list[int]:
    """`total` split into `rounds` near-equal positive parts."""
    rounds = min(rounds, total)
    return [total // rounds + (1 if i < total % rounds else 0) for i in range(rounds)]
