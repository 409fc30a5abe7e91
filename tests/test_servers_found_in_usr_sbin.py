"""A user without root finds the servers Debian installs in /usr/sbin, which their PATH leaves out.

Debian's PATH for a user other than root is /usr/local/bin:/usr/bin:/bin:...: nginx, HAProxy, apache2 and
lighttpd live in /usr/sbin. 'accept-order run --server haproxy' as such a user said 'haproxy is not installed
here' with /usr/sbin/haproxy installed, where nginx was found.
"""

import os
from collections.abc import Callable

import pytest

from accept_order.servers.launched.apache_config import apache_binary
from accept_order.servers.launched.haproxy import haproxy_binary
from accept_order.servers.launched.lighttpd import lighttpd_binary
from accept_order.servers.launched.nginx_config import nginx_binary

USER_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"  # Debian's for a user other than root


@pytest.mark.parametrize(
    ("finder", "program"),
    [(haproxy_binary, "haproxy"), (nginx_binary, "nginx"), (apache_binary, "apache2"), (lighttpd_binary, "lighttpd")],
)
def test_a_server_in_usr_sbin_is_found_with_a_users_path(
    finder: Callable[[], str], program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = f"/usr/sbin/{program}"
    if not os.access(installed, os.X_OK):
        pytest.skip(f"{installed} is not installed here")
    monkeypatch.setenv("PATH", USER_PATH)
    try:
        found = finder()
    except Exception as exc:  # its modules missing is another reason, not this one
        if "not installed" in str(exc):
            raise
        pytest.skip(f"{program}: {exc}")
    assert found == installed
