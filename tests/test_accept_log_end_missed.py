"""run's per-connection accept log is available where bpftrace logged the whole load, whether or not its counts come.

a0754c3 stopped the log without waiting for a fresh periodic reading (its counts are never read). But stop() calls
the counts unavailable where END never comes (bpftrace 0.17 can miss SIGINT: test_bpftrace_ignores_sigint) and no
reading was printed yet, which a run shorter than a READING_MS tick always is; the wait had made sure of one. run's
report then said 'Replies that name no worker: the kernel's accepts could not be read (bpftrace did not run its END
block ... and printed no periodic reading) ..., so those count as failed' of connections each attributed by the
line bpftrace printed for its accept. Asked with a fake bpftrace that prints no reading and ignores every signal
but SIGKILL; and one that never attaches, whose log is unavailable as before."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from accept_order.probes import accepts
from accept_order.probes.accept_log import AcceptLog
from accept_order.probes.accepts import SOURCE

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the log runs bpftrace only as root")

# attached, then silent until killed: no reading, no END (SIGINT, SIGUSR1 and SIGTERM ignored)
DEAF = """#!{python}
import signal, sys
for signum in (signal.SIGINT, signal.SIGUSR1, signal.SIGTERM):
    signal.signal(signum, signal.SIG_IGN)
print("Attaching 3 probes...", flush=True)
print("__BPFTRACE_NOTIFY_PROBES_ATTACHED", file=sys.stderr, flush=True)
while True:
    signal.pause()
"""
REFUSED = """#!{python}
import sys
print("ERROR: something refused", file=sys.stderr, flush=True)
sys.exit(1)
"""


def _on_path(monkeypatch: pytest.MonkeyPatch, where: Path, script: str) -> None:
    fake = where / "bpftrace"
    fake.write_text(script.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{where}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(accepts, "STOP_TIMEOUT_S", 1.0)  # how long END is waited for, here


@needs_root
def test_a_log_whose_end_never_came_is_available(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _on_path(monkeypatch, tmp_path, DEAF)
    with AcceptLog([os.getpid()]) as log:
        log.start()
        assert log.attached, log.stop().why
        counts = log.stop_log()
    assert counts.available, counts.why
    assert counts.why.startswith(f"{SOURCE}; bpftrace did not run its END block"), counts.why


@needs_root
def test_a_log_that_never_attached_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _on_path(monkeypatch, tmp_path, REFUSED)
    with AcceptLog([os.getpid()]) as log:
        log.start()
        assert not log.attached
        counts = log.stop_log()
    assert not counts.available and "something refused" in counts.why, counts.why
