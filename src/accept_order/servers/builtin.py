"""The built-in workers: this tool's own Python worker processes, one accept mode each (servers/modes/)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from ..core.kind_options import MUTEX_DELAY, POLICY
from ..core.kinds import BY_HASH, ModeInfo, ServerKind
from ..core.spec import DEFAULT_KIND
from ..core.text import and_join
from .modes import MODES, require_mode

if TYPE_CHECKING:
    from ..core.cures import LongLivedCure
    from ..core.spec import ServerSpec
    from ..core.target import Target


class _Infos(Mapping[str, ModeInfo]):
    """Each mode's metadata, read from its module when asked: its names need none imported (servers/modes MODES),
    and a run asks for its own mode's alone."""

    def __getitem__(self, name: str) -> ModeInfo:
        return MODES[name].info()

    def __iter__(self) -> Iterator[str]:
        return iter(MODES)

    def __len__(self) -> int:
        return len(MODES)

    def __contains__(self, name: object) -> bool:
        return name in MODES


_INFOS = _Infos()


class BuiltinKind(ServerKind):
    name = DEFAULT_KIND
    process_names = ("accept-order",)
    summary = "this tool's own Python workers, in any of its accept modes (the default)"
    witness = None  # each worker counts what it accepted itself: there is nothing else to check against
    sleeps = None  # each worker is a process of one thread: its sleeps are the worker's (the legend's own words)

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

    def called(self, modes: Sequence[str] = ()) -> tuple[str, bool]:
        if not modes:
            return "the built-in workers", True
        return f"the built-in {and_join(modes)} mode{'s' * (len(modes) > 1)}", len(modes) > 1

    def modes(self) -> Mapping[str, ModeInfo]:
        return _INFOS

    def unavailable(self, mode: str) -> str | None:
        return MODES[mode].unavailable() if mode in MODES else None

    def check(self, spec: ServerSpec) -> None:
        require_mode(spec.mode)  # ModeUnavailable says what this platform lacks
        super().check(spec)

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        from .pool import WorkerPool  # multiprocessing and the workers' code, only when a run starts

        return WorkerPool(spec, stamps=stamps)
