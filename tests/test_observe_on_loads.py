"""--observe-on on burst and ramp: an observation per burst size / ramp step, kept with its cell or step in the
file (checked when read), shown in the report and by `show` labelled with its size or step. Over execnet
"popen" gateways (the server's host and the client hosts are local interpreters); the kernel's accept counts
(bpftrace, as root) are the witness: per cell and per step, each worker's accepts == the replies' count."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli
from test_clients_cli import own_address
from test_observe_on import popen_hosts, traced_only  # noqa: F401 (popen_hosts: a fixture, used by name)


def accepts_equal_replies(seen: dict[str, Any], served: list[int]) -> None:
    """observe's kernel count per worker is what the replies named, worker by worker, and adds up to them."""
    assert seen["host"] == "srv" and seen["traced"] and seen["agrees"] is True, seen
    assert all(w["accepts"] == w["served_by_replies"] for w in seen["workers"])
    accepts = [w["accepts"] for w in seen["workers"] if w["accepts"]]  # a worker that took none may go unseen
    assert sorted(accepts) == sorted(n for n in served if n) and sum(accepts) == sum(served)


def agreeing_line(report: str, label: str, total: int) -> None:
    """The report's one line for a load whose counts agree, labelled with that load (its worker count is what
    observe saw: a worker that accepted nothing may be left out)."""
    said = rf"observe on srv, {re.escape(label)} \([^,]+, \d workers?, accepts counted by the kernel\): each worker's"
    assert re.search(said + rf" accepts equal the connections its replies named \({total:,} in all\)", report), report


@traced_only
@pytest.mark.usefixtures("popen_hosts")
def test_each_burst_keeps_its_observation(tmp_path: Path) -> None:
    out = tmp_path / "burst.json"
    result = run_cli(
        ["burst", "-w", "2", "--clients", "100,300", "--observe-on", "srv", "--json", str(out)], columns=400
    )
    assert result.exit_code == 0, result.output
    [run] = json.loads(out.read_text())["runs"]
    for cell in run["cells"]:
        [seen] = cell["observed_on"]
        accepts_equal_replies(seen, cell["served"])
    for n in (100, 300):
        agreeing_line(result.stdout, f"burst of {n} clients", n)
    shown = run_cli(["show", str(out)], columns=400)
    assert shown.exit_code == 0
    agreeing_line(shown.stdout, "burst of 300 clients", 300)


@traced_only
@pytest.mark.usefixtures("popen_hosts")
def test_over_kept_connections_accepts_are_compared_with_connections(tmp_path: Path) -> None:
    """5 requests per connection: the replies count requests, observe counts accepts; the connections each
    worker accepted (by their first replies) are what its accepts must equal."""
    out = tmp_path / "burst.json"
    args = ["burst", "-w", "2", "--clients", "60", "--requests-per-connection", "5", "--observe-on", "srv"]
    result = run_cli([*args, "--json", str(out)], columns=400)
    assert result.exit_code == 0, result.output
    [cell] = json.loads(out.read_text())["runs"][0]["cells"]
    [seen] = cell["observed_on"]
    accepts_equal_replies(seen, cell["connections"])
    assert sum(cell["served"]) == 300 and "the counts differ" not in result.stdout


@traced_only
@pytest.mark.usefixtures("popen_hosts")
def test_each_ramp_step_over_client_hosts_keeps_its_observation(tmp_path: Path) -> None:
    address = own_address()
    if address is None:
        pytest.skip("no address but loopback here")
    out = tmp_path / "ramp.json"
    args = ["ramp", "--clients", "c1,c2", "--host", address, "-w", "2", "--rates", "200,400", "--step", "400ms"]
    # --keep-going: every step, whether a busy machine lets the first hold or not
    result = run_cli([*args, "--keep-going", "--observe-on", "srv", "--json", str(out)], columns=400)
    assert result.exit_code == 0, result.output
    steps = json.loads(out.read_text())["steps"]
    assert [s["offered"] for s in steps] == [200, 400]
    for step in steps:
        assert len(step["hosts"]) == 2
        [seen] = step["observed_on"]
        accepts_equal_replies(seen, step["served"])
        agreeing_line(result.stdout, f"{step['offered']:g}/s", sum(step["served"]))
    assert "observe on srv, 400/s" in run_cli(["show", str(out)]).stdout


def _observation(host: str = "srv", accepts: int = 7, served: int = 7) -> dict[str, Any]:
    """An observation as `joined` writes it."""
    workers = [{"pid": 10, "tid": None, "accepts": accepts, "served_by_replies": served}]
    return {"host": host, "program": "nginx", "traced": True, "workers": workers, "agrees": accepts == served}


SavedLoad = Callable[[str, list[str]], str]


@pytest.fixture(scope="module")
def saved_load(tmp_path_factory: pytest.TempPathFactory) -> SavedLoad:
    """The text of a real file of a kind (no --observe-on), saved once for the module: the tests below only read it,
    each editing a copy, so one burst and one ramp serve the eight of them."""
    texts: dict[tuple[str, ...], str] = {}

    def text(kind: str, args: list[str]) -> str:
        key = (kind, *args)
        if key not in texts:
            good = tmp_path_factory.mktemp(kind) / f"{kind}.json"
            made = run_cli([kind, "-w", "2", *args, "--json", str(good)])
            # why, in each test that asked for it: a shared file that could not be made fails four tests at once
            assert made.exit_code == 0, made.output
            texts[key] = good.read_text()
        return texts[key]

    return text


def _with_observation(saved: SavedLoad, tmp_path: Path, kind: str, args: list[str], observed: Any) -> Path:
    """A real file of `kind` (no --observe-on), its first cell or step given `observed` as its observation."""
    document = json.loads(saved(kind, args))
    load = document["runs"][0]["cells"][0] if kind == "burst" else document["steps"][0]
    load["observed_on"] = observed
    edited = tmp_path / f"{kind}-edited.json"
    edited.write_text(json.dumps(document))
    return edited


LOADS = [("burst", ["--clients", "20"], "burst of 20 clients"), ("ramp", ["--rates", "50", "--step", "200ms"], "50/s")]


@pytest.mark.parametrize(("kind", "args", "label"), LOADS)
def test_show_labels_each_observation_with_its_load(
    saved_load: SavedLoad, tmp_path: Path, kind: str, args: list[str], label: str
) -> None:
    """Without bpftrace: a file's observations are read back and shown, one line where the counts agree, a
    table where they do not (and a failed one as its line), each said with its load."""
    observed = [_observation(), _observation("srv2", 7, 5), {"host": "srv3", "error": "it went away"}]
    shown = run_cli(["show", str(_with_observation(saved_load, tmp_path, kind, args, observed))])
    assert shown.exit_code == 0, shown.output
    assert f"observe on srv, {label} (nginx, 1 worker, accepts counted by the kernel): each" in shown.stdout
    assert f"observe on srv2, {label} (nginx, 1 worker," in shown.stdout  # a table's title, wrapped to its width
    assert shown.stdout.count("the counts differ") == 1
    assert f"observe on srv3, {label} failed: it went away" in shown.stdout


@pytest.mark.parametrize(("kind", "args", "label"), LOADS)
@pytest.mark.parametrize("bad", [[{"host": "srv", "workers": [{"pid": "x"}]}], [{"agrees": True}], {"host": "srv"}])
def test_a_bad_observation_in_a_load_is_one_line(
    saved_load: SavedLoad, tmp_path: Path, kind: str, args: list[str], label: str, bad: Any
) -> None:
    edited = _with_observation(saved_load, tmp_path, kind, args, bad)
    assert_one_error_line(run_cli(["show", str(edited)]), 1, "observed_on")
