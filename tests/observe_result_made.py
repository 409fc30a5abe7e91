"""An observe result made by hand, for the tests of what observe says of one (no server, no bpftrace): `result` of
each worker's count, traced or sampled, the rest fixed (nginx on port 8080, one interval of 1 s); `changes` replace
any field. Imported by name (`from observe_result_made import result`), as conftest's helpers are (tests/ is on
sys.path; no test_ prefix, so pytest collects nothing here).
"""

from __future__ import annotations

import dataclasses

from accept_order.experiments.observe.result import ObservedWorker, ObserveInterval, ObserveResult


def worker(index: int, accepts: int | None, seen: int | None = None, tid: int | None = None) -> ObservedWorker:
    return ObservedWorker(index, 100 + index, tid, accepts, 0 if accepts is not None else None, seen, 0.5, 10, 1)


def result(counts: list[int], traced: bool = True, tid: bool = False, **changes: object) -> ObserveResult:
    workers = tuple(
        worker(i, c if traced else None, None if traced or tid else c, 200 + i if tid else None)
        for i, c in enumerate(counts)
    )
    interval = ObserveInterval(
        1.0, 1.0, tuple(counts), tuple(0 for _ in counts) if traced else (), (0.1,) * len(counts), 3, 0.5
    )
    base = ObserveResult(
        target="port 8080",
        program="nginx",
        master=99,
        ports=(8080,),
        listeners=1,
        backlog=511,
        workers=workers,
        intervals=(interval,),
        duration_s=30.0,
        wall_s=30.0,
        traced=traced,
        source="counted by the kernel",
        queue_every_s=0.1,
        queue_samples=300,
        queue_max=3,
        queue_mean=0.5,
        counters={"TcpExtListenOverflows": 0},
        namespace="this tool's",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]
