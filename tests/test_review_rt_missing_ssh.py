"""Review RT of 2d3bd20: ssh is started through core/blocked_pool's wrapper, so a missing ssh is no longer
Popen's FileNotFoundError in this process but the wrapper's failed exec in the child. execnet reads a child that
ends before its bootstrap answers as a host not reached only when it exits 255 (ssh's own failures); on the
wrapper's 127 it went on to a gateway with nothing behind it, and the line blamed the host's Python:
'client host c1: its Python did not start or answer (ssh: No such file or directory)'."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_one_error_line, run_cli


def test_a_missing_ssh_is_a_host_not_reached(tmp_path: Path) -> None:
    no_ssh = tmp_path / "bin"
    no_ssh.mkdir()  # PATH with no ssh on it: the wrapper's execvp fails (sys.executable is a full path)
    args = ["latency", "--clients", "c1,c2", "--target", "192.0.2.1:9", "-w", "1", "--duration", "1s"]
    result = run_cli(args, extra_env={"PATH": str(no_ssh)})
    line = assert_one_error_line(result, 1)
    assert line == "accept-order: error: client host c1: could not be reached over ssh (ssh: No such file or directory)"
