"""A Ctrl-C 0.7 s into `accept-order observe --port P` ended with a RuntimeError traceback and exit 1 ('Error
calling __set_name__ on 'Field' instance 'extra' in 'HostOutcome''): Python 3.11 wraps whatever a class attribute's
__set_name__ raises, a KeyboardInterrupt too, and the signal had landed while a module defined a dataclass. It is
the command's interrupt: one line and 130."""

from __future__ import annotations

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.cli import room


class _Named:
    def __set_name__(self, owner: type, name: str) -> None:
        raise KeyboardInterrupt  # the signal landing while a class body's attributes are named (dataclasses' Field)


def _define_a_class(*_: object) -> None:
    class Defined:  # what importing a module of dataclasses does, in the command's body
        attribute = _Named()


@pytest.mark.parametrize("args", [["merge", "a.json", "b.json"], ["latency", "-w", "2", "-n", "10"]])
def test_a_signal_in_set_name_is_an_interrupt(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    monkeypatch.setattr(room, "check_room_for", _define_a_class)
    assert_one_error_line(run_cli(args), 130, "interrupted; nothing was started")


def test_another_runtime_error_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*_: object) -> None:
        raise RuntimeError("a bug") from ValueError("not a signal")

    monkeypatch.setattr(room, "check_room_for", failing)
    with pytest.raises(AssertionError, match="raised RuntimeError"):
        run_cli(["merge", "a.json", "b.json"])
