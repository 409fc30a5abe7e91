"""HAProxy's multi-queue accept (tune.listener.multi-queue, 2.3+) hands each connection to the less loaded of
two threads: listener.c keeps two indexes walking the listener's threads in opposite directions and gives the
connection to whichever of the two has fewer of its connections, queued and held. `modes` once said "the least
loaded thread" while docs/howto/your-server.md's cure table said "the less loaded of two": one sentence now."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

from accept_order.servers.launched.haproxy import HAPROXY_MODES, HaproxyKind

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_modes_says_the_less_loaded_of_two_threads() -> None:
    result = run_cli(["modes"], columns=400)
    assert result.exit_code == 0, result.output
    line = next(li for li in result.stdout.splitlines() if li.strip().startswith("threads") and "nbthread" in li)
    assert "the less loaded of two threads" in line, line
    threads = HAPROXY_MODES["threads"]
    for text in (threads.summary, threads.why, HaproxyKind.handoff or ""):
        assert "least loaded" not in text and "less loaded of two threads" in text, text


def test_the_docs_say_the_same() -> None:
    for page in ("howto/your-server.md", "howto/servers.md"):
        text = " ".join((DOCS / page).read_text().split())  # wrapped lines joined
        assert "least loaded thread" not in text, page
        assert "the less loaded of two threads" in text, page
