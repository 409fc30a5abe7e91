"""How many dataclasses `run --mode epoll` defines as it starts (issue 30 §2): Python 3.11 compiles the source of
each one's methods at import, ~4.5 M instructions a class counted with callgrind (benchmarks/bench_startup.py),
the largest part of our own modules' start-up. A record that only carries values (never asdict'd, replaced or
stored as a dataclass) is a NamedTuple or a plain class: the same to its callers, without the compile. Counted
from the classes the process holds at its exit, not by timing, so a dataclass that comes back fails here on any
machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accept-order-python"
# Runs the command's own script and writes, at its exit, each dataclass defined by one of the package's modules.
PROBE = """
import atexit, runpy, sys
out = sys.argv[1]

def dataclasses_held():
    found = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("accept_order"):
            for value in list(vars(module).values()):
                if isinstance(value, type) and "__dataclass_fields__" in vars(value) and value.__module__ == name:
                    found.add(f"{name}.{value.__qualname__}")
    return sorted(found)

atexit.register(lambda: open(out, "w").write("\\n".join(dataclasses_held())))
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""
# The records a run reads as values: NamedTuples since issue 30's start-up work (WorkerConfig and Listeners, which
# hold sockets and settings no caller compares or prints: plain classes).
VALUE_RECORDS = (
    "accept_order.core.kinds.ModeInfo",
    "accept_order.core.kinds.KindOption",
    "accept_order.core.kinds.LockFirst",
    "accept_order.servers.modes.base.ModeOptions",
    "accept_order.servers.registry.Plan",
    "accept_order.core.target.ReplyAttribution",
    "accept_order.experiments.lifecycle.Measured",
    "accept_order.servers.worker.WorkerConfig",
    "accept_order.servers.modes.base.Listeners",
)
# What `run --mode epoll` defines at this commit (results' records among them, which asdict writes to files).
MOST = 8


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
def test_a_run_defines_no_more_dataclasses_than_it_needs(tmp_path: Path) -> None:
    out = tmp_path / "dataclasses.txt"
    probe = PROBE.replace("SCRIPT", repr(str(SCRIPT)))
    argv = [sys.executable, "-c", probe, str(out), "run", "--mode", "epoll", "-n", "2"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    held = out.read_text().split()
    assert "accept_order.core.measures.ConnectionRecord" in held  # the probe saw the run's records
    assert [name for name in held if name in VALUE_RECORDS] == []
    assert len(held) <= MOST, held


def test_the_value_records_keep_what_their_callers_use() -> None:
    """Immutable, equal by value, the dataclass's repr; a plan sized is a new Plan of the sized spec, its kind and
    mode kept."""
    from accept_order.core.spec import ServerSpec
    from accept_order.servers.modes.base import ModeOptions
    from accept_order.servers.registry import plan

    options = ModeOptions(policy="least-busy")
    assert repr(options) == "ModeOptions(policy='least-busy', mutex_delay_ms=500.0)"
    assert options == ModeOptions("least-busy", 500.0) and options != ModeOptions()
    with pytest.raises(AttributeError):
        options.policy = "round-robin"  # type: ignore[misc]
    resolved = plan(ServerSpec(mode="epoll", workers=2))
    sized = resolved.sized(64, keepalive=True)
    assert type(sized) is type(resolved) and (sized.kind, sized.mode) == (resolved.kind, resolved.mode)
    # the spec is the one sized for the load (a plan handed back as it was would launch for none)
    assert (sized.spec.mode, sized.spec.in_flight, sized.spec.keepalive) == ("epoll", 64, True)
    assert (resolved.spec.in_flight, resolved.spec.keepalive) == (0, False)  # the plan sized is a new one
