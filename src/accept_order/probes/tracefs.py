"""tracefs, where bpftrace reads tracepoint formats: mounted for a run where it is missing, unmounted after it
(accepts.py)."""

from __future__ import annotations

import os
import subprocess

TRACEFS = "/sys/kernel/tracing"
DEBUGFS_TRACING = "/sys/kernel/debug/tracing"  # bpftrace 0.17 prefers this one when it exists
MOUNTED = f"mounted tracefs at {TRACEFS} for the run"


def ensure_tracefs() -> tuple[bool, str]:
    """(usable, note): tracefs is where bpftrace reads tracepoint formats. Mount it when missing (the
    note says so; `unmount_tracefs` takes it away again after the run)."""
    if os.path.isdir(os.path.join(TRACEFS, "events")) or os.path.isdir(os.path.join(DEBUGFS_TRACING, "events")):
        return True, ""
    try:
        done = subprocess.run(
            ["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"tracefs missing at {TRACEFS} and mounting it failed: {exc}"
    if done.returncode != 0 or not os.path.isdir(os.path.join(TRACEFS, "events")):
        msg = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        return False, f"tracefs missing at {TRACEFS} and mounting it failed: {msg}"
    return True, MOUNTED


def unmount_tracefs() -> str:
    """Unmount the tracefs `ensure_tracefs` mounted (the machine is left as it was); "" when that worked,
    else why it is still mounted (busy: another tracer opened it meanwhile)."""
    try:
        done = subprocess.run(["umount", TRACEFS], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"it is still mounted: umount failed: {exc}"
    if done.returncode != 0:
        return f"it is still mounted: {(done.stderr.strip().splitlines() or [f'umount exit {done.returncode}'])[0]}"
    return ""
