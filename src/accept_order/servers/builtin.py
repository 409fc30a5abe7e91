"""The built-in workers: this tool's own Python worker processes, one accept mode each (servers/modes/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.kinds import BY_HASH, ModeInfo, ServerKind
from ..core.spec import DEFAULT_KIND
from .modes import MODES, require_mode
from .modes.accept_mutex import MUTEX_DELAY
from .modes.fd_pass import POLICY

if TYPE_CHECKING:
    from ..core.cures import LongLivedCure
    from ..core.spec import ServerSpec
    from ..core.target import Target


class BuiltinKind(ServerKind):
    name = DEFAULT_KIND
    process_names = ("accept-order",)
    summary = "this tool's own Python workers, in any of its accept modes (the default)"
    witness = None  # each worker counts what it accepted itself: there is nothing else to check against

    spins_here = True
    options = (POLICY, MUTEX_DELAY)

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ..core.cures import LongLivedCure, SideBySide

        return (
            LongLivedCure(
                "--mode fd-pass --policy least-busy",
                "one acceptor process accepts every connection and hands it to the worker holding the fewest open "
                "ones it was handed (a kept connection counts until it closes; ties go round): a pool is spread "
                "over the workers by count, whoever was idle first",
                SideBySide(("epoll", "fd-pass"), extra="--policy least-busy"),
                "fd-pass",
                visible=False,  # /proc shows fd-pass, not its policy
            ),
            LongLivedCure(
                "--mode reuseport",
                f"a SO_REUSEPORT listener per worker: {BY_HASH}",
                SideBySide(("epoll", "reuseport")),
                "reuseport",
            ),
        )

    def label(self, spec: ServerSpec) -> str:
        return spec.mode  # the tool's own workers: the mode says it all

    def modes(self) -> dict[str, ModeInfo]:
        return {name: mode.info() for name, mode in MODES.items()}

    def unavailable(self, mode: str) -> str | None:
        return MODES[mode].unavailable() if mode in MODES else None

    def check(self, spec: ServerSpec) -> None:
        require_mode(spec.mode)  # ModeUnavailable says what this platform lacks
        super().check(spec)

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        from .pool import WorkerPool  # multiprocessing and the workers' code, only when a run starts

        return WorkerPool(spec, stamps=stamps)
