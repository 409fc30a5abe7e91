"""Ending a launched server at once once a test has read it while its workers spin in the app's busy loop.

The inspect tests of uWSGI and Apache hold each worker in a request whose handler spins for WORK_US (6 s: long
enough for the look on a busy machine). After the look nothing of the server is read any more, but its close()
would wait for the spin: uWSGI's graceful stop waits for the requests in hand (the rest of the 6 s), and Apache's
close() waits up to SETTLE_TIMEOUT_S (2 s) for every child to be back in its wait before its SIGTERM. Every
spinning worker took a CPU for that time (6.3 s of wall a uWSGI test, 2.1 s an Apache one). Killing the master
makes close() skip both waits: it finds the master gone and kills the workers and their group, as after a crash.
Imported by name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing).
"""

from __future__ import annotations

from accept_order.servers.launched.base import LaunchedServer


def end_at_once(server: LaunchedServer) -> None:
    """SIGKILL the server's master (reaped here): its close() then kills the workers it left, and their group."""
    master = server.master
    if master is not None and master.poll() is None:
        master.kill()
        master.wait()
