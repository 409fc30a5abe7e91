"""compare of one real server names that server on the row of a mode it lacks.

'accept-order compare --server nginx --modes epoll,blocking' printed 'builtin  blocking  ...  not available:
nginx has no mode 'blocking'': the row was put down to the built-in workers, which were not asked for, with
nginx's reason beside it. The key of a skipped mode names its server only where several were given.
"""

import pytest
from conftest import run_cli

from accept_order.core.errors import ServerUnavailable
from accept_order.servers.launched.nginx_config import nginx_binary


def test_the_mode_nginx_lacks_is_nginx_s_row() -> None:
    try:
        nginx_binary()
    except ServerUnavailable as exc:
        pytest.skip(str(exc))
    result = run_cli(["compare", "--server", "nginx", "--modes", "epoll,blocking", "-n", "3"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line.split()[0] for line in result.stdout.splitlines() if line.startswith(" nginx ")}
    skipped = [line for line in result.stdout.splitlines() if "not available" in line]
    assert len(skipped) == 1, result.stdout
    assert skipped[0].split()[:2] == ["nginx", "blocking"], skipped[0]
    assert "nginx has no mode 'blocking'" in skipped[0]
    assert rows.get("epoll") == "nginx", result.stdout
