"""Load from several client hosts: where it runs (`ClientHosts`, part of a load's spec); what each host did
(`HostOutcome`, part of its result) is in host_outcome.py, named here on first use (issue 30: start-up).

The hosts are reached over ssh through an existing engine (execnet: loads/hosts/); these types are plain data,
so that results and reports read them without importing the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import PlanError

if TYPE_CHECKING:
    from .host_outcome import HostOutcome as HostOutcome
    from .host_outcome import extended as extended

MAX_CLIENT_HOSTS = 256  # ssh fan-out from one coordinator: beyond this, see docs/howto/cluster.md


@dataclass(frozen=True)
class ClientHosts:
    """The client hosts a load runs on: ssh destinations as the user's own `ssh` accepts them (`host`,
    `user@host`, an alias of ~/.ssh/config), ssh's `-F` config file, and the Python to run there (None: the
    coordinator's own interpreter path where it exists on the host, else `python3`)."""

    destinations: tuple[str, ...]
    ssh_config: str | None = None
    python: str | None = None
    # --observe-on: the server's host, where `observe` watches the server's port for the load's window (over
    # the same engine); None: not observed. The only host there may be (no --clients: the load runs here).
    observe_on: str | None = None

    def validated(self, option: str = "--clients") -> ClientHosts:
        """`option`: what the user named the hosts with (burst's --clients counts connections: --client-hosts)."""
        if not self.destinations and self.observe_on is None:
            raise PlanError(f"{option} needs at least one ssh destination")
        if len(self.destinations) > MAX_CLIENT_HOSTS:
            raise PlanError(f"{option} names {len(self.destinations)} hosts; at most {MAX_CLIENT_HOSTS}")
        named = [(option, d) for d in self.destinations]
        for option, dest in named + ([("--observe-on", self.observe_on)] if self.observe_on is not None else []):
            # ssh would read a destination that starts with '-' as an option, and a space splits it in two
            if not dest or dest.startswith("-") or any(c.isspace() or not c.isprintable() for c in dest):
                raise PlanError(f"{option}: {dest!r} is not an ssh destination")
        if len(set(self.destinations)) != len(self.destinations):
            raise PlanError(f"{option} names a host twice: give each once (its --driver-procs are per host)")
        for name, value in (("--ssh-config", self.ssh_config), ("--client-python", self.python)):
            if value is not None and (not value or any(c.isspace() or not c.isprintable() for c in value)):
                raise PlanError(f"{name} {value!r} is not a path")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "destinations": list(self.destinations),
            "ssh_config": self.ssh_config,
            "python": self.python,
            **({"observe_on": self.observe_on} if self.observe_on is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClientHosts:
        return cls(tuple(data["destinations"]), data.get("ssh_config"), data.get("python"), data.get("observe_on"))

    def only(self, destination: str) -> ClientHosts:
        """The same ssh settings for one host (the server's, for --observe-on)."""
        return ClientHosts((destination,), self.ssh_config, self.python)


def __getattr__(name: str) -> Any:
    """HostOutcome and `extended` live in host_outcome.py, imported on first use: every spec imports this
    module (a load's ClientHosts), and a command that reads no load's result does not make their dataclass
    nor import the histograms (issue 30: start-up). Callers that import them from here get them from there."""
    if name in ("HostOutcome", "extended"):
        from . import host_outcome

        return getattr(host_outcome, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
