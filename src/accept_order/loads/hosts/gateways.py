"""Reaching the client hosts: one execnet gateway per host, over the system's OpenSSH client.

Why execnet: it is pytest-xdist's engine, speaks through the user's own `ssh` (its config, keys, ProxyJump,
agent), and ships itself: a client host needs only Python and accept-order, no daemon and no port of ours.

Each host's `ssh` starts in a session of its own: the terminal's Ctrl-C (sent to the whole foreground
process group) must reach the coordinator only, which then asks every host to stop and report what it
measured; an ssh that took the Ctrl-C itself would drop its host's partial result. When the coordinator
dies without a word (SIGKILL), the pipe into each ssh closes, ssh closes the session, and the remote side
(remote_side.py) ends its load at once.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ...core.errors import LoadError
from ...core.hosts import ClientHosts
from ...core.text import escape_controls as inert
from ...core.version import VERSION
from . import remote_side

CONNECT_TIMEOUT_S = 30.0  # ssh's own ConnectTimeout decides sooner where the user's config sets one
HELLO_TIMEOUT_S = 60.0  # a slow host importing accept-order for the first time (cold caches)


class _OwnSession:
    """The subprocess module as execnet's Popen2IOMaster uses it, with every child in a session of its own."""

    PIPE = subprocess.PIPE

    @staticmethod
    def Popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:  # noqa: N802 - subprocess's name
        return subprocess.Popen(args, start_new_session=True, **kwargs)


def _execmodel() -> Any:
    import execnet.gateway_base as base

    class OwnSessions(base.ThreadExecModel):
        @property
        def subprocess(self) -> Any:
            return _OwnSession

    return OwnSessions()


def remote_python(hosts: ClientHosts) -> str:
    """The interpreter to start on each host: --client-python, else this one's path where it exists there
    (clusters are often laid out alike), else python3. A shell word list, read by the host's shell."""
    if hosts.python is not None:
        return shlex.quote(hosts.python)
    own = shlex.quote(sys.executable)
    return f"$(test -x {own} && echo {own} || echo python3)"


@dataclass
class Host:
    """One connected client host: its destination as given, the gateway, and the channel to remote_side."""

    destination: str
    gateway: Any
    channel: Any
    python: str = ""
    version: str = ""
    hostname: str = ""


def _spec(destination: str, hosts: ClientHosts, index: int) -> Any:
    import execnet

    spec = execnet.XSpec(f"ssh=h//id=host{index}")
    options = ["-o", "BatchMode=yes"]  # a host that asks for a password must fail, not wait on a terminal
    if hosts.ssh_config is not None:
        options = ["-F", hosts.ssh_config, *options]
    spec.ssh = " ".join([*options, "--", destination])  # execnet splits it on spaces (validated: none inside)
    spec.python = remote_python(hosts)
    return spec


def _connect_one(group: Any, destination: str, hosts: ClientHosts, index: int, part: str) -> Host:
    import execnet

    try:
        gateway = group.makegateway(_spec(destination, hosts, index))
    except execnet.HostNotFound as exc:
        raise LoadError(f"client host {inert(destination)}: could not be reached over ssh ({_first(exc)})") from None
    except (OSError, EOFError) as exc:
        raise LoadError(f"client host {inert(destination)}: ssh failed ({_first(exc)})") from None
    channel = gateway.remote_exec(remote_side)
    try:
        hello = channel.receive(timeout=HELLO_TIMEOUT_S)
    except (channel.RemoteError, channel.TimeoutError, EOFError, OSError) as exc:
        raise LoadError(f"client host {inert(destination)}: its Python did not answer ({_first(exc)})") from None
    if hello[0] == "missing":
        raise LoadError(
            f"client host {inert(destination)}: accept-order is not installed for {inert(str(hello[2]))} there "
            f"({inert(str(hello[1]))}); install accept-order {VERSION} there, or give --client-python"
        )
    _, version, python, hostname, _pid = hello
    if version != VERSION:
        raise LoadError(
            f"client host {inert(destination)} runs accept-order {inert(str(version))}, this one {VERSION}: "
            "install the same version on every client host"
        )
    channel.send(("serve", part))
    return Host(destination, gateway, channel, str(python), str(version), str(hostname))


def _first(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return inert(lines[-1] if lines else type(exc).__name__)[:200]


class Gateways:
    """The run's connected hosts. `connect()` reaches them all at once (threads: an ssh handshake each) and
    raises one LoadError naming the first host that failed, after closing every other; `close()` ends every
    gateway, and with it every remote interpreter and its load."""

    def __init__(self, hosts: ClientHosts) -> None:
        self.spec = hosts.validated()
        self.hosts: list[Host] = []
        self._group: Any = None

    def connect(self, part: str) -> list[Host]:
        """Reach every host and have it serve `part` (a module of accept-order with `serve(channel)`)."""
        import execnet

        self._group = execnet.Group(execmodel=_execmodel())  # the hosts run execnet's own "thread" model
        dests = self.spec.destinations
        with ThreadPoolExecutor(max_workers=min(32, len(dests))) as pool:
            futures = [pool.submit(_connect_one, self._group, d, self.spec, i, part) for i, d in enumerate(dests)]
            failures: list[LoadError] = []
            for future in futures:
                try:
                    self.hosts.append(future.result())
                except LoadError as exc:
                    failures.append(exc)
        if failures:
            raise failures[0]
        return self.hosts

    def close(self) -> None:
        group, self._group = self._group, None
        if group is not None:
            group.terminate(timeout=5.0)  # each remote interpreter exits when its channel closes; then kill
