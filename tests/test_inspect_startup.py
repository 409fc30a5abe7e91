"""What `inspect` of an idle server imports (issue 30 §2: inspect's start-up is most of its time): the long-lived
connections' cures (core/cures.py's dataclasses and inspect/cures.py) only where the report shows them, i.e. where
the server's processes hold connections. Checked by the modules the process holds at its exit, not by timing."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from test_startup_imports import imported_by, loaded

CURES = ("accept_order.core.cures", "accept_order.experiments.inspect.cures")


@pytest.mark.skipif(sys.platform != "linux", reason="inspect reads Linux's /proc")
def test_inspect_of_a_server_holding_no_connection_imports_no_cures(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        modules = imported_by(["inspect", "--port", str(listener.getsockname()[1])], tmp_path)
    assert "accept_order.experiments.inspect.cure_rows" in modules  # the report's module that shows them
    assert loaded(modules, CURES) == []
