"""A burst of several modes printed its table and details and no verdict ('burst --modes epoll,reuseport --clients
2000 --backlog 64' here: both lost clients, 1008 and 260, and nothing said which did better or how sure one burst
is), where --repeat ranks each client count. One run now says, per client count, what its figures show by the rule
--repeat ranks a round by, and that one burst is one draw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"
SURE = "How sure: one burst each, a race with the scheduler; --repeat 3 says how often this holds"


def _verdicts(tmp_path: Path, change: Any = None) -> list[str]:
    """The verdict lines of `show` of the golden burst (epoll and reuseport at 20 and 50 clients), changed first."""
    data = json.loads(GOLDEN.joinpath("burst.json").read_text())
    if change is not None:
        change(data)
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(data))
    result = run_cli(["show", str(path)], columns=2000)
    assert result.exit_code == 0, result.output
    return [line for line in result.stdout.splitlines() if line.startswith("Verdict")]


def _cell(data: dict[str, Any], mode: str, clients: int) -> dict[str, Any]:
    run = next(r for r in data["runs"] if r["server"]["mode"] == mode)
    return dict(next(c for c in run["cells"] if c["clients"] == clients))


def _set(data: dict[str, Any], mode: str, clients: int, **fields: Any) -> None:
    run = next(r for r in data["runs"] if r["server"]["mode"] == mode)
    next(c for c in run["cells"] if c["clients"] == clients).update(fields)


def test_each_client_count_has_a_verdict_saying_how_sure(tmp_path: Path) -> None:
    twenty, fifty = _verdicts(tmp_path)
    # 20: both cells paced by the load generator (*): no mode ranked, as --repeat says of such a round
    assert twenty.startswith("Verdict, 20 clients: no mode ranked: the load generator set the pace of every mode")
    # 50: epoll 8.8 ms, reuseport 12.6 ms (its *): more than 10% apart
    assert fifty.startswith(
        "Verdict, 50 clients: epoll served all 50 clients soonest: 8.8 ms, the next (reuseport) 12.6 ms, 1.43× its "
        "time (* reuseport: the load generator set the pace)."
    ), fifty
    assert twenty.endswith(SURE) and fifty.endswith(SURE)


def test_a_first_two_both_paced_by_the_load_generator_are_said_so(tmp_path: Path) -> None:
    """Three modes, the first two at the load generator's pace (*) and a slower third at the server's: the rule ranks
    (not every mode that served all was paced), and the verdict says what parts the first two is partly the generator's
    (as 'burst --modes epoll,reuseport,accept-mutex --clients 500' read here: 84.8 ms *, 116.0 ms *, 1.10 s)."""

    def three(data: dict[str, Any]) -> None:
        slow = json.loads(json.dumps(data["runs"][0]))
        slow["server"]["mode"] = "accept-mutex"
        slow["cells"][1]["wall_s"] = 1.1
        data["runs"].append(slow)
        for mode, wall in (("epoll", 0.0848), ("reuseport", 0.116)):
            drivers = [dict(d, open_s=0.8 * wall, wall_s=wall) for d in _cell(data, mode, 50)["drivers"]]
            _set(data, mode, 50, wall_s=wall, drivers=drivers)

    fifty = _verdicts(tmp_path, three)[1]
    assert fifty.startswith(
        "Verdict, 50 clients: epoll served all 50 clients soonest: 84.8 ms, the next (reuseport) 116.0 ms, 1.37× its "
        "time (* epoll and reuseport: the load generator set the pace, so what parts the first two is partly its own)."
    ), fifty


def test_times_within_ten_percent_rank_none(tmp_path: Path) -> None:
    def close(data: dict[str, Any]) -> None:
        _set(data, "reuseport", 50, wall_s=0.0093)

    fifty = _verdicts(tmp_path, close)[1]
    assert fifty.startswith(
        "Verdict, 50 clients: no mode ranked: epoll and reuseport served all 50 clients within 10% of each other "
        "(epoll 8.8 ms, reuseport 9.3 ms)."
    ), fifty


def test_clients_lost_are_said_fewest_first(tmp_path: Path) -> None:
    def lost(data: dict[str, Any]) -> None:
        _set(data, "epoll", 50, errors={"timeout": 7}, served=[20, 23])
        _set(data, "reuseport", 50, errors={"timeout": 3}, served=[25, 22])

    fifty = _verdicts(tmp_path, lost)[1]
    assert fifty == f"Verdict, 50 clients: no mode served all 50 clients (reuseport lost 3, epoll 7). {SURE}"

    def one_lost(data: dict[str, Any]) -> None:
        _set(data, "epoll", 50, errors={"timeout": 7}, served=[20, 23])

    fifty = _verdicts(tmp_path, one_lost)[1]
    assert fifty.startswith("Verdict, 50 clients: reuseport alone served all 50 clients (12.6 ms; epoll lost 7)"), fifty


def test_a_burst_cut_short_ranks_none(tmp_path: Path) -> None:
    def stopped(data: dict[str, Any]) -> None:
        _set(data, "epoll", 50, interrupted=True, errors={"aborted": 5}, served=[20, 25])
        data["runs"][0]["interrupted"] = True

    fifty = _verdicts(tmp_path, stopped)[1]
    assert fifty.startswith("Verdict, 50 clients: no mode ranked: the stop cut epoll's burst short."), fifty


def test_one_mode_has_nothing_to_rank(tmp_path: Path) -> None:
    def alone(data: dict[str, Any]) -> None:
        del data["runs"][1]

    assert _verdicts(tmp_path, alone) == []


def test_the_json_keeps_each_verdict_for_other_tools(tmp_path: Path) -> None:
    """show --format json (and a saved file) holds each client count's verdict and the mode it ranks first, as a
    latency comparison holds its own."""
    result = run_cli(["show", str(GOLDEN / "burst.json"), "--format", "json"])
    assert result.exit_code == 0, result.output
    verdicts = json.loads(result.stdout)["verdicts"]
    assert [(v["clients"], v["fastest"]) for v in verdicts] == [(20, None), (50, "epoll")]
    assert verdicts[1]["text"].startswith("epoll served all 50 clients soonest: 8.8 ms") and SURE in verdicts[1]["text"]
