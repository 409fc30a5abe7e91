"""A client host whose accept-order has the same version string but other code (a development install) is refused at
the hello, in one line naming the folders that differ, where it failed late: a class pickled between the two copies
(ReplyAttribution, LoadResult, ...) unpickled into other code raised an AttributeError in the middle of a load.

The host is a local interpreter (execnet popen in place of ssh, as tests/test_ramp_client_hosts_on_this_kernel.py) whose
PYTHONPATH puts a copy of the package first: the same sources at another path pass; one line changed in loads/ or
in a part's own folder does not."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from accept_order.core.errors import LoadError
from accept_order.core.hosts import ClientHosts
from accept_order.core.version import VERSION
from accept_order.loads.hosts import gateways, load_side
from accept_order.loads.hosts.remote_side import sources_digests

PACKAGE = Path(gateways.PACKAGE)


def copied(tmp_path: Path) -> Path:
    """A copy of the package under tmp_path/site (its __pycache__ left behind): the host's install."""
    copy = tmp_path / "site" / "accept_order"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\nEDITED_ON_THE_HOST = True\n")


def test_the_digests_follow_the_sources_not_their_path_or_bytecode(tmp_path: Path) -> None:
    copy = copied(tmp_path)
    own = sources_digests(str(PACKAGE))
    assert {"", "core", "loads", "loads/hosts", "experiments/observe"} <= set(own)
    (copy / "loads" / "__pycache__").mkdir(exist_ok=True)
    (copy / "loads" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"other bytecode")
    assert sources_digests(str(copy)) == own
    edit(copy / "loads" / "generator.py")
    theirs = sources_digests(str(copy))
    assert [f for f in own if own[f] != theirs[f]] == ["loads"]
    assert gateways.unlike_sources(theirs, load_side.__name__) == ["loads"]
    assert gateways.unlike_sources({}, load_side.__name__) == []  # nothing said: nothing compared


def test_a_part_s_own_folder_is_compared_and_others_are_not(tmp_path: Path) -> None:
    copy = copied(tmp_path)
    edit(copy / "experiments" / "observe" / "result.py")
    theirs = sources_digests(str(copy))
    assert gateways.unlike_sources(theirs, load_side.__name__) == []  # a load's classes are not observe's
    assert gateways.unlike_sources(theirs, "accept_order.experiments.observe.remote_side") == ["experiments/observe"]


def connect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site: Path) -> None:
    import execnet

    python = tmp_path / "host-python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)

    def popen_spec(destination: str, hosts: ClientHosts, index: int) -> Any:
        return execnet.XSpec(f"popen//id=host{index}//python={python}")

    monkeypatch.setattr(gateways, "_spec", popen_spec)
    reached = gateways.Gateways(ClientHosts(("c1",)))
    try:
        (host,) = reached.connect(load_side.__name__)
        assert host.version == VERSION
    finally:
        reached.close()


def test_a_host_with_other_loads_sources_under_the_same_version_is_refused_at_the_hello(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copied(tmp_path)
    connect(tmp_path, monkeypatch, copy.parent)  # the same sources elsewhere: reached
    edit(copy / "loads" / "reply_keys.py")
    with pytest.raises(LoadError) as refused:
        connect(tmp_path, monkeypatch, copy.parent)
    line = str(refused.value)
    assert line == (
        f"client host c1 runs accept-order {VERSION} from other sources than this one's (loads/ differ: a development "
        "install?): install the same code there, or give --client-python one that has it"
    ), line
