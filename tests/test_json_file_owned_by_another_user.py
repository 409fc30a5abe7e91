"""A --json file another user owns is refused with why and what to do, not only 'is not writable'.

A user ran 'sudo accept-order observe PID --json ~/observe.json' (observe's bpftrace needs root), then
'accept-order run --json ~/observe.json' without sudo: 'accept-order: error: --json: /home/u/observe.json is
not writable', with no word that sudo had left the file root's. The tests run as root, to whom every file is
writable: the user's view is os.access's answer and their uid, given here.
"""

import os
from pathlib import Path

import pytest

from accept_order.core.errors import PlanError
from accept_order.results.files import check_output_path

USER_UID = 1000  # the user who is not root; the file is root's or nobody's


def refusal(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    real_access = os.access

    def access(where: object, mode: int, **kw: object) -> bool:
        return False if str(where) == str(path) else real_access(where, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "geteuid", lambda: USER_UID)
    monkeypatch.setattr(os, "access", access)
    with pytest.raises(PlanError) as refused:
        check_output_path(str(path))
    return str(refused.value)


def test_a_file_sudo_left_roots_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = tmp_path / "observe.json"
    kept.write_text("{}")
    if kept.stat().st_uid != 0:
        pytest.skip("the file must be root's: run as root")
    line = refusal(kept, monkeypatch)
    assert line == (
        f"--json: {kept} is not writable: it belongs to root (a run through sudo writes its files as root); "
        "remove it or give another name"
    )


def test_another_users_file_is_named_by_its_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = tmp_path / "theirs.json"
    kept.write_text("{}")
    try:
        os.chown(kept, 65534, 65534)
    except PermissionError:
        pytest.skip("giving the file away needs root")
    line = refusal(kept, monkeypatch)
    assert line.startswith(f"--json: {kept} is not writable: it belongs to ")
    assert "sudo" not in line
    assert line.endswith("; remove it or give another name")


def test_the_users_own_read_only_file_says_only_that(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = tmp_path / "mine.json"
    kept.write_text("{}")
    try:
        os.chown(kept, USER_UID, USER_UID)
    except PermissionError:
        pytest.skip("giving the file away needs root")
    assert refusal(kept, monkeypatch) == f"--json: {kept} is not writable"


def test_a_file_in_a_sticky_folder_is_not_called_removable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In /tmp (sticky, anyone's to write) a user may remove only their own files: 'remove it' read 'rm: cannot
    remove '/tmp/observe.json': Operation not permitted' (tried as nobody)."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    kept = shared / "observe.json"
    kept.write_text("{}")
    if kept.stat().st_uid != 0:
        pytest.skip("the file must be root's: run as root")
    line = refusal(kept, monkeypatch)
    assert line == (
        f"--json: {kept} is not writable: it belongs to root (a run through sudo writes its files as root); "
        "give another name (its folder does not let you remove it)"
    )


def test_a_file_in_the_users_own_sticky_folder_is_theirs_to_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "mine"
    shared.mkdir()
    shared.chmod(0o1777)
    kept = shared / "observe.json"
    kept.write_text("{}")
    try:
        os.chown(shared, USER_UID, USER_UID)
    except PermissionError:
        pytest.skip("giving the folder away needs root")
    assert refusal(kept, monkeypatch).endswith("; remove it or give another name")
