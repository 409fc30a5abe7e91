"""Everything that may make a measurement misleading, as one typed set (hyperfine's `Warnings` enum).

Each kind is one member with the sentence it prints; a warning is a kind and the figures that raised it,
so reports, files and tests can ask "was the load generator CPU-bound?" without matching text, and the
same thing is said in the same words wherever it is found.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class WarningKind(enum.Enum):
    """What was seen, and the sentence that says it (its fields come from the warning's figures)."""

    DRIVER_SATURATED = (
        "driver {driver} used {percent:.0f}% of a CPU: the load generator may be the bottleneck and may blur "
        "the latencies; give it more --driver-procs"
    )
    DRIVERS_STARVED = (
        "the {procs} driver process{procs_es} and {workers} worker{workers_s} share {cpus} CPU{cpus_s}: drivers "
        "waited for a CPU up to "
        "{percent:.0f}% of the time, so client-side delay is part of these latencies"
    )
    # the same wait where the drivers and workers had a CPU each: others' processes, not the workers, kept them from
    # one ('latency -w 1 --driver-procs 1' on 2 CPUs said the two 'share 2 CPUs' as if they had starved each other)
    DRIVERS_WAITED_FOR_OTHERS = (
        "the load generator's driver{procs_s} waited for a CPU up to {percent:.0f}% of the time though {procs} "
        "driver process{procs_es} and {workers} worker{workers_s} had a CPU each of the {cpus}: other processes "
        "(host-wide) took them, so client-side delay is part of these latencies"
    )
    CLIENT_BOUND = (
        "the load generator was on a CPU {client:.0f}% of the time while the workers used {workers:.0f}% of the "
        "{cpus} CPUs they may run on: the server waited for its client, so these figures are partly the client's "
        "(give it more --driver-procs, or CPUs of its own with --load-cpus)"
    )
    CLIENT_BOUND_HOSTS = (  # the same of drivers on client hosts (--clients), which --load-cpus does not place
        "the load generator was on a CPU {client:.0f}% of the time while the workers used {workers:.0f}% of the "
        "{cpus} CPUs they may run on: the server waited for its client, so these figures are partly the client's "
        "(give it more --driver-procs, or more client hosts)"
    )
    CLIENT_WAITED = (
        "the load generator waited for a CPU up to {percent:.0f}% of the time: client-side delay is in these latencies"
    )
    FEW_SAMPLES = "a run had {samples} samples: its p99.9 is one of its slowest few; use -n 10000 or more"
    MACHINE_BUSY = "the machine was already busy: load average {load:.1f} on {cpus} CPUs (host-wide) before the runs"
    STEAL = "the hypervisor took {percent:.0f}% of the CPUs (steal time) during the runs"
    REACHABLE_HOST = (
        "listening on {address}: anyone who can reach this address can connect and learn the workers' pids; "
        "use 127.0.0.1 unless that is what you want"
    )

    @property
    def slug(self) -> str:
        return self.name.lower().replace("_", "-")


@dataclass(frozen=True)
class RunWarning:
    kind: WarningKind
    figures: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        # each whole figure's plural ending beside it ({workers_s}, {procs_es}): '1 worker', not '1 workers'
        endings: dict[str, str] = {}
        for name, value in self.figures.items():
            if isinstance(value, int) and not isinstance(value, bool):
                endings |= {f"{name}_s": "" if value == 1 else "s", f"{name}_es": "" if value == 1 else "es"}
        return str(self.kind.value).format(**self.figures, **endings)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.slug, **self.figures}


def warn(kind: WarningKind, **figures: Any) -> RunWarning:
    return RunWarning(kind, figures)


def unique(warnings: list[RunWarning]) -> list[RunWarning]:
    """Each warning once, in the order first seen (several runs often raise the same one)."""
    seen: dict[str, RunWarning] = {}
    for w in warnings:
        seen.setdefault(str(w), w)
    return list(seen.values())
