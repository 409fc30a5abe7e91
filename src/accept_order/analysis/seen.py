"""What a sequential run showed, said without claiming a mechanism the mode does not have.

A mode's metadata names the order its mechanism can produce (analysis/order.py's models), a hash, the
client's CPU, or none (a herd). These build the verdict's pattern when what was seen is not that: a
spread judged against uniform hashing, the CPU the client connected from, or an idle order that fits
although the mechanism predicts another or none, with how often a random idle worker fits as well.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..core.measures import ConnectionRecord
from ..core.models import Model
from .chance import expected_unserved, how_often, uniform_spread_p

#: A fit or spread less likely than this by chance is called a pattern; otherwise it is chance.
SURE = 0.01
#: At least this share of connections must go to the listener of the client's CPU for "the CPU picks".
CPU_FIT = 0.8

ORDER_NAMES: dict[str, str] = {  # a model by its Model name (a file may hold any string)
    Model.FIFO: "FIFO",
    Model.LIFO: "LIFO",
    Model.FIRST_REGISTERED: "lowest-index-first",
    Model.ROUND_ROBIN: "round-robin",
    Model.LOCK_HOLDER: "the-previous-worker-again",
    Model.CLIENT_CPU: "the client's CPU",
    Model.HASH: "a hash",
}


def order_name(model: str | None) -> str:
    if model is None:
        return "none"
    if model.startswith("runs-of-"):  # runs of a length the run showed (analysis/order.py): a count
        return f"runs of {model.removeprefix('runs-of-')}"
    return ORDER_NAMES.get(model, model)


def hash_pattern(counts: Sequence[int]) -> tuple[str, float, str]:
    """(pattern, p, figures) of a spread a reuseport hash made, judged against uniform hashing."""
    p, test = uniform_spread_p(counts)
    # 'idle workers' is said of workers waiting for a connection everywhere else: these are workers the hash
    # gave none, whatever they waited for
    unserved, expected = sum(1 for c in counts if c == 0), expected_unserved(len(counts), sum(counts))
    pattern = "hash-spread" if p >= SURE else "hash-spread, more uneven than a uniform hash"
    figures = (
        f"{test} test: a uniform hash spreads {sum(counts)} connections at least this unevenly {how_often(p)}; "
        f"{unserved} worker{'s' if unserved != 1 else ''} served none, {expected:.1f} expected"
    )
    return pattern, p, figures


def cpu_pattern(records: Sequence[ConnectionRecord], workers: int, single: bool) -> tuple[str, str | None, int, int]:
    """(pattern, model, fit, known) for a CPU-steered listener group: did each connection go to the listener
    of the CPU its client connected from? A CPU without a listener falls back to the hash: left out."""
    known = [r for r in records if r.served and r.client_cpu is not None and r.client_cpu < workers]
    fit = sum(1 for r in known if r.worker == r.client_cpu)
    if known and fit >= CPU_FIT * len(known):
        pattern = "the client's CPU picks the worker" + (", one worker takes all" if single else "")
        return pattern, Model.CLIENT_CPU, fit, len(known)
    if single:
        return "one worker takes all", None, fit, len(known)
    return "no clear order", None, fit, len(known)


def client_cpus_text(records: Sequence[ConnectionRecord]) -> str:
    """Where the client connected from: "the client connected from CPU 1 for 20 of 20"."""
    cpus = Counter(r.client_cpu for r in records if r.served and r.client_cpu is not None)
    if not cpus:
        return "which CPU the client ran on is not known"
    total = sum(cpus.values())
    if len(cpus) == 1:
        cpu, n = next(iter(cpus.items()))
        return f"the client connected from CPU {cpu} for {n} of {total}"
    shown = ", ".join(f"CPU {cpu} for {n}" for cpu, n in sorted(cpus.items()))
    return f"the client connected from {shown}"


def unpredicted_pattern(
    best: str, expected: str | None, single: bool, chance: float | None, known: bool = True
) -> tuple[str, str]:
    """(pattern, figures) when the best-fitting idle order is not the one the mode's mechanism predicts:
    what was seen, and how often a random idle worker fits as well; never the model's name as its cause.
    `known`: False for a server this tool did not start, whose mechanism the run does not know."""
    often = "" if chance is None else how_often(chance)
    if single:
        return "one worker takes all", f"a random idle worker would fit as well {often}" if often else ""
    if chance is not None and chance >= SURE:
        return "no order beyond chance", f"{order_name(best)} fits, but a random idle worker would fit as well {often}"
    figures = f"a random idle worker would fit as well {often}" if often else ""
    return like(order_name(best), expected, known), figures


def like(seen: str, expected: str | None, known: bool = True) -> str:
    """What was seen, said beside what the mode's mechanism predicts, never as its cause (`known` False: the
    run does not know the mechanism, a server it did not start, so it says no prediction of one)."""
    if not known:
        return f"an order like {seen} (the server's mechanism is not known to this run)"
    predicts = "none" if expected is None else order_name(expected)
    return f"an order like {seen} (the mechanism predicts {predicts})"
